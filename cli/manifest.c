/*
 * manifest.c - YAML and JSON manifests into msgpack resources: the
 * resource kinds, reading a file and choosing its front end
 * (manifest_yaml.c or manifest_json.c), each document's top value into
 * resources (identity, task runtimes by manifest_tasks.c, msgpack within
 * the size a command allows), the schema check of one document and the
 * line of a check's path. The value is manifest_value.c's; checks across
 * files are manifest_clash.c's.
 *
 * Both front ends build the same small tree (lark_mnode, in an arena);
 * one packer turns it into msgpack, and the tree keeps each value's line
 * so a schema error's path can be mapped back to the file.
 *
 * Invariants: the tree is never deeper than LARK_MANIFEST_MAX_DEPTH
 * (checked as each container opens, before anything recurses) plus the
 * one level mf_normalise_tasks may add, so every recursive walk is
 * bounded; the node count and the input size bound memory; YAML aliases
 * never reach the tree, so no value is shared and packing is linear in the
 * input.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "manifest-int.h"

static const lark_kind kinds[] = {
    {"Job", "job", "jobs", NULL, "lark-scheduler"},
    {"Workflow", "workflow", "workflows", "wf", "lark-dag"},
    {"Node", "node", "nodes", NULL, "lark-scheduler"},
    {"Domain", "domain", "domains", NULL, "lark-ipam"},
};

const lark_kind *
lark_kind_find(const char *name) {
  for (size_t i = 0; name && i < sizeof kinds / sizeof kinds[0]; i++) {
    const lark_kind *k = &kinds[i];
    if (!strcasecmp(name, k->kind) || !strcasecmp(name, k->plural) ||
        (k->short_ && !strcasecmp(name, k->short_)))
      return k;
  }
  return NULL;
}

/* One resource from a mapping node: its identity and its msgpack. */
static int
add_doc(pctx *p, lark_mnode *root, int index) {
  if (root->type != MN_MAP)
    return mf_fail(p, BUS_EMALFORMED, index, root->line,
                   "a resource must be a mapping (apiVersion, kind, metadata, "
                   "spec)");
  if (p->ndocs >= LARK_MANIFEST_MAX_DOCS)
    return mf_fail(p, BUS_ETOO_BIG, index, root->line,
                   "more than %d resources in one file",
                   LARK_MANIFEST_MAX_DOCS);
  if (bus_grow(&p->docs, p->ndocs, &p->cap, sizeof *p->docs, 8))
    return mf_fail(p, -ENOMEM, index, root->line, "out of memory");
  lark_doc *d = &p->docs[p->ndocs];
  memset(d, 0, sizeof *d);
  d->index = index;
  d->line = root->line;
  d->root = root;
  mf_copy_str(root, "kind", d->kind, sizeof d->kind);
  mf_copy_str(root, "apiVersion", d->api_version, sizeof d->api_version);
  mf_copy_str(mf_map_find(root, "metadata", 8), "name", d->name,
              sizeof d->name);
  if (mf_normalise_tasks(p, root, d->kind, index))
    return p->rc;

  bus_packbuf b;
  bus_packbuf_init(&b);
  int rc = mf_pack_node(&b.pk, root) ? -ENOMEM : 0;
  if (!rc && b.sb.size > LARK_MANIFEST_MAX_PACKED)
    rc = mf_fail(p, BUS_ETOO_BIG, index, root->line,
                 "resource is %zu bytes packed; at most %d fit in a command",
                 b.sb.size, LARK_MANIFEST_MAX_PACKED);
  void *mp = rc ? NULL : mf_arena_alloc(p->a, b.sb.size ? b.sb.size : 1);
  if (!rc && !mp)
    rc = -ENOMEM;
  if (mp) {
    memcpy(mp, b.sb.data, b.sb.size);
    d->mp = mp;
    d->mp_len = b.sb.size;
    p->ndocs++;
  }
  bus_packbuf_destroy(&b);
  if (rc == -ENOMEM)
    return mf_fail(p, rc, index, root->line, "out of memory");
  return rc;
}

/* A document's top value: a resource, a list of resources, or nothing. */
static int
add_top(pctx *p, lark_mnode *root, int index, int json) {
  if (root->type == MN_NULL)
    return 0; /* an empty YAML document */
  if (root->type != MN_SEQ)
    return add_doc(p, root, index);
  int i = 0, rc = 0;
  for (lark_mnode *c = root->first; c && !rc; c = c->next, i++)
    rc = add_doc(p, c, json ? index + i : index);
  if (json && i > 0)
    p->pos += i - 1;
  return rc;
}

/* ---------------------------------------------------------------- public */

static int
looks_like_json(const char *buf, size_t len) {
  size_t i = 0;
  if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
    i = 3;
  while (i < len && isspace((unsigned char)buf[i]))
    i++;
  return i < len && (buf[i] == '{' || buf[i] == '[');
}

int
lark_manifest_parse(lark_manifest *m, const char *file, const void *buf,
                    size_t len, char *err, size_t errcap) {
  pctx p;
  memset(&p, 0, sizeof p);
  memset(m, 0, sizeof *m);
  snprintf(m->file, sizeof m->file, "%s", file ? file : "<manifest>");
  p.file = m->file;
  p.err = err;
  p.errcap = errcap;
  p.add_top = add_top;
  if (err && errcap)
    err[0] = 0;
  if (len > LARK_MANIFEST_MAX_BYTES)
    return mf_fail(&p, BUS_ETOO_BIG, 0, 0, "larger than %d bytes",
                   LARK_MANIFEST_MAX_BYTES);
  p.a = calloc(1, sizeof *p.a);
  if (!p.a)
    return mf_fail(&p, -ENOMEM, 0, 0, "out of memory");
  int rc = looks_like_json(buf, len) ? mf_parse_json(&p, buf, len)
                                     : mf_parse_yaml(&p, buf, len);
  if (rc) {
    free(p.docs);
    mf_arena_free(p.a);
    return rc;
  }
  m->docs = p.docs;
  m->ndocs = p.ndocs;
  m->arena = p.a;
  return 0;
}

int
lark_manifest_load(lark_manifest *m, const char *path, char *err,
                   size_t errcap) {
  int std = !strcmp(path, "-");
  const char *name = std ? "<stdin>" : path;
  memset(m, 0, sizeof *m);
  FILE *f = std ? stdin : fopen(path, "rb");
  if (!f) {
    int e = errno;
    snprintf(err, errcap, "%s: %s", name, strerror(e));
    return -e;
  }
  size_t cap = 65536, len = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap && cap <= LARK_MANIFEST_MAX_BYTES) {
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        free(buf);
      buf = nb;
      cap *= 2;
    } else if (len == cap) {
      break;
    }
  }
  int rerr = buf && ferror(f) ? errno : 0;
  if (!std)
    fclose(f);
  int rc;
  if (!buf) {
    snprintf(err, errcap, "%s: out of memory", name);
    rc = -ENOMEM;
  } else if (rerr) {
    snprintf(err, errcap, "%s: %s", name, strerror(rerr));
    rc = -rerr;
  } else {
    rc = lark_manifest_parse(m, name, buf, len, err, errcap);
  }
  free(buf);
  return rc;
}

void
lark_manifest_free(lark_manifest *m) {
  if (!m)
    return;
  free(m->docs);
  mf_arena_free(m->arena);
  m->docs = NULL;
  m->ndocs = 0;
  m->arena = NULL;
}

int
lark_doc_check(const lark_doc *d, bus_field_err *errs, int max, int *n) {
  const lark_kind *k = NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(d->kind, kinds[i].kind))
      k = &kinds[i];
  if (!k) {
    *n = 1;
    if (max > 0) {
      snprintf(errs[0].path, sizeof errs[0].path, "kind");
      snprintf(errs[0].reason, sizeof errs[0].reason,
               "%s: must be one of Job, Workflow, Node, Domain",
               d->kind[0] ? "unknown kind" : "missing or not a string");
    }
    return d->kind[0] ? BUS_EFIELD : BUS_EMISSING;
  }
  msgpack_zone z;
  msgpack_object o;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc =
      msgpack_unpack(d->mp, d->mp_len, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS
          ? bus_schema_check(k->kind, &o, errs, max, n)
          : BUS_EMALFORMED;
  msgpack_zone_destroy(&z);
  return rc;
}

/* The key of map that path starts with (the longest: keys may hold dots,
 * "rlinf.io/device"), followed by the end, '.' or '['. */
static const lark_mnode *
path_key(const lark_mnode *map, const char **path) {
  const lark_mnode *best = NULL;
  size_t best_len = 0, left = strlen(*path);
  for (const lark_mnode *k = map->first; k && k->next; k = k->next->next) {
    size_t n = k->v.s.n;
    if (n > left || memcmp(*path, k->v.s.p, n))
      continue;
    char end = (*path)[n];
    if ((end == 0 || end == '.' || end == '[') && (!best || n > best_len)) {
      best = k->next;
      best_len = n;
    }
  }
  if (best)
    *path += best_len;
  return best;
}

int
lark_doc_line(const lark_doc *d, const char *path) {
  const lark_mnode *n = d->root;
  if (!n || !path || !strncmp(path, "...", 3))
    return d->line;
  while (*path) {
    const lark_mnode *next = NULL;
    if (*path == '.') {
      path++;
      continue;
    }
    if (*path == '[' && n->type == MN_SEQ) {
      char *end;
      unsigned long i = strtoul(path + 1, &end, 10);
      if (*end != ']')
        break;
      next = n->first;
      for (unsigned long k = 0; next && k < i; k++)
        next = next->next;
      path = end + 1;
    } else if (n->type == MN_MAP) {
      next = path_key(n, &path);
    }
    if (!next)
      break;
    n = next;
  }
  return n->line;
}
