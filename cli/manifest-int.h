/*
 * manifest-int.h - what the parts of the manifest reader share, and
 * nothing outside cli/manifest*.c includes: the parsed value (lark_mnode,
 * in an arena), the parse state with its first error, the helpers that
 * build, search and pack the value (manifest_value.c), and the steps one
 * part calls in another: the YAML and JSON front ends
 * (manifest_yaml.c, manifest_json.c) hand each document's top value to
 * p->add_top (manifest.c sets it), which rewrites task runtimes
 * (mf_normalise_tasks, manifest_tasks.c) before packing. The public
 * interface is manifest.h.
 */
#ifndef LARK_CLI_MANIFEST_INT_H
#define LARK_CLI_MANIFEST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

enum { MN_NULL, MN_BOOL, MN_INT, MN_UINT, MN_FLOAT, MN_STR, MN_SEQ, MN_MAP };

struct lark_mnode {
  int type;
  int line;
  union {
    int b;
    int64_t i;
    uint64_t u;
    double f;
    struct {
      const char *p;
      size_t n;
    } s;
  } v;
  uint32_t count; /* children; a map holds key, value, key, value ... */
  lark_mnode *first, *last, *next;
};

typedef struct block {
  struct block *next;
  size_t used, cap;
  max_align_t data[];
} block;

struct lark_arena {
  block *head;
};

typedef struct pctx pctx;
struct pctx {
  const char *file;
  lark_arena *a;
  char *err;
  size_t errcap;
  int rc;  /* first error; the rest of the parse is abandoned */
  int pos; /* documents (YAML) or resources (JSON) started so far */
  size_t nodes;
  lark_doc *docs;
  size_t ndocs, cap;
  /* what the front end hands each document's top value to (manifest.c
   * sets it): the front ends call no part above them */
  int (*add_top)(pctx *p, lark_mnode *root, int index, int json);
};

/* the arena (manifest_value.c) */
void *mf_arena_alloc(lark_arena *a, size_t n);
void mf_arena_free(lark_arena *a);

/* The first error wins: record it in p as "FILE doc N line L: what" and
 * return rc; later calls return the first rc. */
int mf_fail(pctx *p, int rc, int doc, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* values (manifest_value.c) */
lark_mnode *mf_node_new(pctx *p, int type, int line);
lark_mnode *mf_str_new(pctx *p, const char *s, size_t len, int line);
const lark_mnode *mf_map_find(const lark_mnode *map, const char *key,
                              size_t len);
lark_mnode *mf_map_get(lark_mnode *map, const char *key);
int mf_node_add(pctx *p, lark_mnode *parent, lark_mnode *child);
int mf_eq(const char *s, size_t n, const char *lit);
int mf_pack_node(msgpack_packer *pk, const lark_mnode *n);
void mf_copy_str(const lark_mnode *map, const char *key, char *out, size_t cap);
int mf_line_of_offset(const char *buf, size_t len, size_t off);

/* the front ends (manifest_yaml.c, manifest_json.c) */
int mf_parse_yaml(pctx *p, const char *buf, size_t len);
int mf_parse_json(pctx *p, const char *buf, size_t len);

/* a task's runtime written in the task, into `runtime:` (manifest_tasks.c) */
int mf_normalise_tasks(pctx *p, lark_mnode *root, const char *kind, int index);

#endif
