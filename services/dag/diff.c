/*
 * diff.c - structural comparison of two msgpack values, naming each path
 * where they differ: the `details` of an apply refused because a different
 * spec is already there.
 *
 * Maps compare by key whatever their order (msgpack from YAML and from
 * JSON may order keys differently); arrays compare element by element.
 * Recursion depth is bounded by the input, which was decoded by msgpack-c
 * and checked against the schema (a few levels deep), and by MAX_DEPTH.
 */
#include <stdio.h>
#include <string.h>

#include "dag.h"

#define MAX_DEPTH 32

typedef struct diff {
  bus_field_err *e;
  int max, n;
} diff;

static void
note(diff *d, const char *path, const char *reason) {
  if (d->e && d->n < d->max) {
    snprintf(d->e[d->n].path, sizeof d->e[d->n].path, "%s", path);
    snprintf(d->e[d->n].reason, sizeof d->e[d->n].reason, "%s", reason);
  }
  d->n++;
}

static void
child(char *out, size_t cap, const char *path, const msgpack_object *key) {
  if (key->type == MSGPACK_OBJECT_STR)
    snprintf(out, cap, "%s%s%.*s", path, *path ? "." : "",
             (int)key->via.str.size, key->via.str.ptr);
  else
    snprintf(out, cap, "%s.?", path);
}

static const msgpack_object *
lookup(const msgpack_object *m, const msgpack_object *key) {
  for (uint32_t i = 0; i < m->via.map.size; i++)
    if (msgpack_object_equal(m->via.map.ptr[i].key, *key))
      return &m->via.map.ptr[i].val;
  return NULL;
}

static void compare(diff *d, const msgpack_object *a, const msgpack_object *b,
                    const char *path, int depth);

static void
compare_maps(diff *d, const msgpack_object *a, const msgpack_object *b,
             const char *path, int depth) {
  char sub[sizeof d->e->path];
  for (uint32_t i = 0; i < a->via.map.size; i++) {
    const msgpack_object *k = &a->via.map.ptr[i].key;
    const msgpack_object *bv = lookup(b, k);
    child(sub, sizeof sub, path, k);
    if (!bv)
      note(d, sub, "removed");
    else
      compare(d, &a->via.map.ptr[i].val, bv, sub, depth + 1);
  }
  for (uint32_t i = 0; i < b->via.map.size; i++) {
    const msgpack_object *k = &b->via.map.ptr[i].key;
    if (!lookup(a, k)) {
      child(sub, sizeof sub, path, k);
      note(d, sub, "added");
    }
  }
}

static void
compare_arrays(diff *d, const msgpack_object *a, const msgpack_object *b,
               const char *path, int depth) {
  char sub[sizeof d->e->path], reason[64];
  uint32_t na = a->via.array.size, nb = b->via.array.size;
  for (uint32_t i = 0; i < na && i < nb; i++) {
    snprintf(sub, sizeof sub, "%s[%u]", path, i);
    compare(d, &a->via.array.ptr[i], &b->via.array.ptr[i], sub, depth + 1);
  }
  if (na != nb) {
    snprintf(reason, sizeof reason, "%u items, was %u", nb, na);
    note(d, path, reason);
  }
}

static void
compare(diff *d, const msgpack_object *a, const msgpack_object *b,
        const char *path, int depth) {
  if (depth > MAX_DEPTH) {
    if (!msgpack_object_equal(*a, *b))
      note(d, path, "changed");
    return;
  }
  if (a->type == MSGPACK_OBJECT_MAP && b->type == MSGPACK_OBJECT_MAP)
    compare_maps(d, a, b, path, depth);
  else if (a->type == MSGPACK_OBJECT_ARRAY && b->type == MSGPACK_OBJECT_ARRAY)
    compare_arrays(d, a, b, path, depth);
  else if (!msgpack_object_equal(*a, *b))
    note(d, path, "changed");
}

int
dag_obj_equal(const msgpack_object *a, const msgpack_object *b,
              const char *path, bus_field_err *errs, int max, int *n) {
  diff d = {.e = errs, .max = max};
  compare(&d, a, b, path ? path : "", 0);
  if (n)
    *n = d.n;
  return d.n == 0;
}
