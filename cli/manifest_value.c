/*
 * manifest_value.c - the value both front ends build: a small tree of
 * lark_mnode (null, bool, integers, float, string, sequence, mapping),
 * each value keeping its line, allocated from one arena per manifest and
 * bounded by the node and key limits as it grows. Here too the first
 * error of a parse (mf_fail), the lookups by key, and the packer that
 * turns a tree into msgpack. Nothing here knows YAML, JSON or resources.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest-int.h"

void *
mf_arena_alloc(lark_arena *a, size_t n) {
  size_t al = sizeof(max_align_t);
  n = (n + al - 1) / al * al;
  block *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    b = malloc(sizeof *b + cap);
    if (!b)
      return NULL;
    b->next = a->head;
    b->used = 0;
    b->cap = cap;
    a->head = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  return p;
}

void
mf_arena_free(lark_arena *a) {
  if (!a)
    return;
  for (block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

int
mf_fail(pctx *p, int rc, int doc, int line, const char *fmt, ...) {
  if (p->rc)
    return p->rc;
  p->rc = rc;
  if (!p->err || !p->errcap)
    return rc;
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char where[64] = "";
  int used = 0;
  if (doc > 0)
    used = snprintf(where, sizeof where, " doc %d", doc);
  if (line > 0)
    snprintf(where + used, sizeof where - (size_t)used, " line %d", line);
  snprintf(p->err, p->errcap, "%s%s: %s", p->file, where, what);
  return rc;
}

lark_mnode *
mf_node_new(pctx *p, int type, int line) {
  if (++p->nodes > LARK_MANIFEST_MAX_NODES) {
    mf_fail(p, BUS_ETOO_BIG, p->pos, line, "more than %d values in the file",
            LARK_MANIFEST_MAX_NODES);
    return NULL;
  }
  lark_mnode *n = mf_arena_alloc(p->a, sizeof *n);
  if (!n) {
    mf_fail(p, -ENOMEM, p->pos, line, "out of memory");
    return NULL;
  }
  memset(n, 0, sizeof *n);
  n->type = type;
  n->line = line;
  return n;
}

lark_mnode *
mf_str_new(pctx *p, const char *s, size_t len, int line) {
  lark_mnode *n = mf_node_new(p, MN_STR, line);
  char *copy = n ? mf_arena_alloc(p->a, len + 1) : NULL;
  if (n && !copy) {
    mf_fail(p, -ENOMEM, p->pos, line, "out of memory");
    return NULL;
  }
  if (!n)
    return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  n->v.s.p = copy;
  n->v.s.n = len;
  return n;
}

const lark_mnode *
mf_map_find(const lark_mnode *map, const char *key, size_t len) {
  if (!map || map->type != MN_MAP)
    return NULL;
  for (const lark_mnode *k = map->first; k && k->next; k = k->next->next)
    if (k->v.s.n == len && !memcmp(k->v.s.p, key, len))
      return k->next;
  return NULL;
}

/* Append child to parent; a map's keys must be unique strings. */
int
mf_node_add(pctx *p, lark_mnode *parent, lark_mnode *child) {
  if (parent->type == MN_MAP && parent->count % 2 == 0) {
    if (child->type != MN_STR)
      return mf_fail(p, BUS_EMALFORMED, p->pos, child->line,
                     "a mapping key must be a scalar");
    if (parent->count / 2 >= LARK_MANIFEST_MAX_KEYS)
      return mf_fail(p, BUS_ETOO_BIG, p->pos, child->line,
                     "more than %d keys in one mapping",
                     LARK_MANIFEST_MAX_KEYS);
    if (mf_map_find(parent, child->v.s.p, child->v.s.n))
      return mf_fail(
          p, BUS_EMALFORMED, p->pos, child->line, "duplicate key '%.*s'",
          (int)(child->v.s.n > 64 ? 64 : child->v.s.n), child->v.s.p);
  }
  if (parent->last)
    parent->last->next = child;
  else
    parent->first = child;
  parent->last = child;
  parent->count++;
  return 0;
}

int
mf_eq(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && !memcmp(s, lit, n);
}

/* ---------------------------------------------------------------- packing */

int
mf_pack_node(msgpack_packer *pk, const lark_mnode *n) {
  int rc = 0;
  switch (n->type) {
  case MN_BOOL:
    return n->v.b ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  case MN_INT:
    return msgpack_pack_int64(pk, n->v.i);
  case MN_UINT:
    return msgpack_pack_uint64(pk, n->v.u);
  case MN_FLOAT:
    return msgpack_pack_double(pk, n->v.f);
  case MN_STR:
    return msgpack_pack_str_with_body(pk, n->v.s.p, n->v.s.n);
  case MN_SEQ:
    rc = msgpack_pack_array(pk, n->count);
    break;
  case MN_MAP:
    rc = msgpack_pack_map(pk, n->count / 2);
    break;
  default:
    return msgpack_pack_nil(pk);
  }
  for (const lark_mnode *c = n->first; c && !rc; c = c->next)
    rc = mf_pack_node(pk, c);
  return rc;
}

void
mf_copy_str(const lark_mnode *map, const char *key, char *out, size_t cap) {
  const lark_mnode *v = mf_map_find(map, key, strlen(key));
  out[0] = 0;
  if (v && v->type == MN_STR && v->v.s.n < cap &&
      !memchr(v->v.s.p, 0, v->v.s.n))
    memcpy(out, v->v.s.p, v->v.s.n + 1);
}

/* A value of map, mutable: the tree is the reader's own until packed. */
lark_mnode *
mf_map_get(lark_mnode *map, const char *key) {
  if (!map || map->type != MN_MAP)
    return NULL;
  for (lark_mnode *k = map->first; k && k->next; k = k->next->next)
    if (mf_eq(k->v.s.p, k->v.s.n, key))
      return k->next;
  return NULL;
}

int
mf_line_of_offset(const char *buf, size_t len, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off && i < len; i++)
    line += buf[i] == '\n';
  return line;
}
