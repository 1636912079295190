/*
 * manifest_clash.c - checks across files: the names the documents of
 * several manifests would claim if applied together (each resource's
 * kind and name, and the Tasks a Job derives), sorted so that two claims
 * of one name meet, and reported naming both documents
 * (lark_manifests_clashes). It reads only parsed documents.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest-int.h"

/* room for any derived name, even one too long (the schema refuses it) */
#define CLAIM_NAME_SZ (2 * BUS_DERIVED_NAME_MAX + 32)

/* One name a document holds or derives: the resource itself or a Job's
 * Task (each kind is a namespace of its own). */
typedef struct claim {
  char kind[32]; /* "Job", "Domain", ..., "task" */
  char name[CLAIM_NAME_SZ];
  char via[BUS_NAME_MAX + 1]; /* the template it comes from ("" for a doc) */
  int file;
  const lark_doc *d;
} claim;

typedef struct claims {
  claim *c;
  size_t n, cap;
} claims;

static int
claim_add(claims *cs, const char *kind, const char *name, const char *via,
          int file, const lark_doc *d) {
  if (bus_grow(&cs->c, cs->n, &cs->cap, sizeof *cs->c, 64))
    return -ENOMEM;
  claim *c = &cs->c[cs->n++];
  snprintf(c->kind, sizeof c->kind, "%s", kind);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->via, sizeof c->via, "%s", via);
  c->file = file;
  c->d = d;
  return 0;
}

/*
 * A Job's Tasks `<job>-<template>`, named as the scheduler names them.
 * Its Pods `<task>-<i>` meet only when their Tasks do (the index after
 * the last '-' is digits alone), so the Tasks say it all.
 */
static int
claim_derived(claims *cs, int file, const lark_doc *d) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object o;
  int rc = 0;
  if (msgpack_unpack(d->mp, d->mp_len, NULL, &z, &o) < 0)
    goto out;
  const msgpack_object *ts = bus_obj_get(bus_obj_get(&o, "spec"), "tasks");
  for (uint32_t i = 0;
       !rc && ts && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size;
       i++) {
    char tmpl[BUS_NAME_MAX + 1], task[CLAIM_NAME_SZ];
    if (!bus_obj_str(&ts->via.array.ptr[i], "name", tmpl, sizeof tmpl))
      continue;
    snprintf(task, sizeof task, "%s-%s", d->name, tmpl);
    rc = claim_add(cs, "task", task, tmpl, file, d);
  }
out:
  msgpack_zone_destroy(&z);
  return rc;
}

static int
claim_cmp(const void *a, const void *b) {
  const claim *x = a, *y = b;
  int c = strcmp(x->kind, y->kind);
  if (!c)
    c = strcmp(x->name, y->name);
  if (!c)
    c = x->file - y->file;
  return c ? c : x->d->index - y->d->index;
}

/* "rl.yaml doc 2 line 14 (job col-a, task b-c)" */
static void
where(char *buf, size_t cap, const lark_manifest *ms, const claim *c) {
  const lark_kind *k = lark_kind_find(c->d->kind);
  snprintf(buf, cap, "%s doc %d line %d (%s %s%s%s)", ms[c->file].file,
           c->d->index, c->d->line, k ? k->cmd : c->d->kind, c->d->name,
           c->via[0] ? ", task " : "", c->via);
}

static void
report_clash(const lark_manifest *ms, const claim *a, const claim *b,
             lark_clash_fn report, void *ud) {
  char wa[BUS_DERIVED_NAME_MAX + 400], wb[BUS_DERIVED_NAME_MAX + 400];
  char line[2 * sizeof wa + 2 * BUS_DERIVED_NAME_MAX + 128];
  where(wa, sizeof wa, ms, a);
  where(wb, sizeof wb, ms, b);
  if (!a->via[0] && !b->via[0] && a->d->mp_len == b->d->mp_len &&
      !memcmp(a->d->mp, b->d->mp, a->d->mp_len))
    snprintf(line, sizeof line, "%s: the same %s as %s, given twice", wb,
             a->kind, wa);
  else if (!a->via[0] && !b->via[0])
    snprintf(line, sizeof line, "%s: another %s %s than %s", wb, a->kind,
             a->name, wa);
  else
    snprintf(line, sizeof line, "%s: makes %s %s, as %s does", wb, a->kind,
             a->name, wa);
  report(line, ud);
}

int
lark_manifests_clashes(const lark_manifest *ms, int nfiles,
                       lark_clash_fn report, void *ud) {
  claims cs = {0};
  int rc = 0, found = 0;
  for (int f = 0; !rc && f < nfiles; f++)
    for (size_t i = 0; !rc && i < ms[f].ndocs; i++) {
      const lark_doc *d = &ms[f].docs[i];
      rc = claim_add(&cs, d->kind, d->name, "", f, d);
      if (!rc && !strcmp(d->kind, "Job"))
        rc = claim_derived(&cs, f, d);
    }
  if (!rc && cs.n)
    qsort(cs.c, cs.n, sizeof *cs.c, claim_cmp);
  for (size_t i = 1; !rc && i < cs.n; i++) {
    const claim *a = &cs.c[i - 1], *b = &cs.c[i];
    if (strcmp(a->kind, b->kind) || strcmp(a->name, b->name))
      continue;
    if (a->via[0] && !strcmp(a->d->kind, b->d->kind) &&
        !strcmp(a->d->name, b->d->name) && a->d != b->d)
      continue; /* one Job given twice: said once, of the Job */
    found++;
    report_clash(ms, a, b, report, ud);
  }
  free(cs.c);
  return rc ? rc : found;
}
