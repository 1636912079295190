/*
 * records.c - the dag view's tables: rows encoded as msgpack maps, and a
 * Workflow loaded with its graph, Jobs and evaluation.
 *
 * Invariants, and why they hold:
 * - Only apply writes rows (decide only reads them and emits), so the
 *   tables are a function of the stream prefix applied: a replay rebuilds
 *   them byte for byte and the digests match.
 * - Rows are written by this file only, but are still decoded defensively:
 *   a row that does not decode is BUS_ECORRUPT, never a crash.
 * - A loaded Workflow's per-template arrays all hold g.n entries.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag-int.h"

int
dag__subject(const char *prefix, const char *name, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s%s", prefix, name);
  if (n < 0 || (size_t)n >= cap)
    return bus_error(BUS_ENAME, "subject for %s too long", name);
  return 0;
}

/* ------------------------------------------------------------ row codec */

/*
 * A row is a msgpack map of a record's fields, in the order of its field
 * table, so equal records are equal bytes (the digest) and the one table
 * serves both directions.
 */
enum { F_STR, F_U64, F_U32, F_I64, F_FLAG /* an int, 0 or 1 */ };

typedef struct field {
  const char *key;
  int kind;
  size_t off, size;
} field;

#define FIELD(rec, m, key, kind)                                               \
  { key, kind, offsetof(rec, m), sizeof(((rec *)0)->m) }

static const field wf_fields[] = {
    FIELD(dag__wfrec, name, "name", F_STR),
    FIELD(dag__wfrec, generation, "generation", F_U64),
    FIELD(dag__wfrec, stopped, "stopped", F_FLAG),
    FIELD(dag__wfrec, deleted, "deleted", F_FLAG),
    FIELD(dag__wfrec, phase, "phase", F_STR),
    FIELD(dag__wfrec, announced, "announced", F_STR),
    FIELD(dag__wfrec, reason, "reason", F_STR),
    FIELD(dag__wfrec, ts, "ts", F_I64),
    FIELD(dag__wfrec, succeeded, "succeeded", F_U32),
    FIELD(dag__wfrec, total, "total", F_U32),
    {NULL, 0, 0, 0},
};

static const field job_fields[] = {
    FIELD(dag__jobrec, wf, "wf", F_STR),
    FIELD(dag__jobrec, tmpl, "template", F_STR),
    FIELD(dag__jobrec, ours, "ours", F_FLAG),
    FIELD(dag__jobrec, wfgen, "wfgen", F_U64),
    FIELD(dag__jobrec, phase, "phase", F_STR),
    FIELD(dag__jobrec, reason, "reason", F_STR),
    FIELD(dag__jobrec, stopped, "stopped", F_FLAG),
    FIELD(dag__jobrec, bydag, "bydag", F_FLAG),
    FIELD(dag__jobrec, deleted, "deleted", F_FLAG),
    {NULL, 0, 0, 0},
};

static void
pack_field(msgpack_packer *pk, const field *f, const char *p) {
  switch (f->kind) {
  case F_STR:
    bus_pack_kv_str(pk, f->key, p);
    break;
  case F_U64:
    bus_pack_kv_uint(pk, f->key, *(const uint64_t *)(const void *)p);
    break;
  case F_U32:
    bus_pack_kv_uint(pk, f->key, *(const uint32_t *)(const void *)p);
    break;
  case F_I64:
    bus_pack_kv_int(pk, f->key, *(const int64_t *)(const void *)p);
    break;
  default:
    bus_pack_kv_uint(pk, f->key, (uint64_t) * (const int *)(const void *)p);
  }
}

static int
put_row(bus_txn *t, const char *table, const char *key, const field *fs,
        const void *rec) {
  bus_packbuf b;
  uint32_t n = 0;
  while (fs[n].key)
    n++;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, n);
  for (const field *f = fs; f->key; f++)
    pack_field(&b.pk, f, (const char *)rec + f->off);
  int rc = bus_txn_put(t, table, key, strlen(key), b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
  return rc;
}

/* One value into its field; a value of the wrong type leaves it zero. */
static void
read_field(const field *f, const msgpack_object *v, char *p) {
  int64_t i = 0;
  if (f->kind == F_STR) {
    if (v->type == MSGPACK_OBJECT_STR) {
      size_t n = v->via.str.size < f->size ? v->via.str.size : f->size - 1;
      memcpy(p, v->via.str.ptr, n);
      p[n] = 0;
    }
    return;
  }
  if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    i = v->via.i64;
  else if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
           v->via.u64 <= INT64_MAX)
    i = (int64_t)v->via.u64;
  if (f->kind == F_U64)
    *(uint64_t *)(void *)p = (uint64_t)i;
  else if (f->kind == F_U32)
    *(uint32_t *)(void *)p = (uint32_t)i;
  else if (f->kind == F_I64)
    *(int64_t *)(void *)p = i;
  else
    *(int *)(void *)p = i != 0;
}

/* A row into rec (zeroed first); BUS_ECORRUPT unless it is one map. */
static int
get_row(bus_txn *t, const char *table, const char *key, const field *fs,
        void *rec, size_t size) {
  const void *val;
  size_t len, off = 0;
  msgpack_zone z;
  msgpack_object o;
  memset(rec, 0, size);
  int rc = bus_txn_get(t, table, key, strlen(key), &val, &len);
  if (rc)
    return rc;
  msgpack_zone_init(&z, 1024);
  if (msgpack_unpack(val, len, &off, &z, &o) != MSGPACK_UNPACK_SUCCESS ||
      off != len || o.type != MSGPACK_OBJECT_MAP)
    rc = bus_error(BUS_ECORRUPT, "%s row %s does not decode", table, key);
  for (uint32_t i = 0; !rc && i < o.via.map.size; i++) {
    const msgpack_object_kv *kv = &o.via.map.ptr[i];
    for (const field *f = fs; kv->key.type == MSGPACK_OBJECT_STR && f->key; f++)
      if (kv->key.via.str.size == strlen(f->key) &&
          !memcmp(kv->key.via.str.ptr, f->key, kv->key.via.str.size)) {
        read_field(f, &kv->val, (char *)rec + f->off);
        break;
      }
  }
  msgpack_zone_destroy(&z);
  return rc;
}

int
dag__wf_put(bus_txn *t, const dag__wfrec *r) {
  return put_row(t, DAG__T_WORKFLOWS, r->name, wf_fields, r);
}

int
dag__wf_get(bus_txn *t, const char *name, dag__wfrec *r) {
  return get_row(t, DAG__T_WORKFLOWS, name, wf_fields, r, sizeof *r);
}

int
dag__job_put(bus_txn *t, const char *job, const dag__jobrec *r) {
  return put_row(t, DAG__T_JOBS, job, job_fields, r);
}

int
dag__job_get(bus_txn *t, const char *job, dag__jobrec *r) {
  return get_row(t, DAG__T_JOBS, job, job_fields, r, sizeof *r);
}

/* The resource of a workflow.submitted, as it came (its msgpack bytes). */
int
dag__spec_put(bus_txn *t, const char *wf, const msgpack_object *res) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_object(&b.pk, *res);
  int rc = bus_txn_put(t, DAG__T_SPECS, wf, strlen(wf), b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
  return rc;
}

/* ------------------------------------------------------------ a Workflow */

static int
phase_state(const char *phase) {
  if (!strcmp(phase, "Running"))
    return DAG_RUNNING;
  if (!strcmp(phase, "Succeeded"))
    return DAG_SUCCEEDED;
  if (!strcmp(phase, "Failed") || !strcmp(phase, "Skipped"))
    return DAG_FAILED;
  if (!strcmp(phase, "Stopped"))
    return DAG_STOPPED;
  return DAG_PENDING;
}

int
dag__tmpl_state(const dag__wf *w, int i) {
  const dag__jobrec *j = &w->jobs[i];
  const bus_version *v = &w->ver[i];
  int present = v->seq && !v->deleted;
  if (w->have[i] && j->ours && j->wfgen == w->rec.generation) {
    if (j->deleted)
      return DAG_FAILED;
    if (j->stopped && strcmp(j->phase, "Succeeded"))
      return DAG_STOPPED;
    return phase_state(j->phase);
  }
  if (present && !(w->have[i] && j->ours))
    return DAG_FAILED; /* the name is held by a Job not of this Workflow */
  return DAG_NONE;
}

static int
load_resource(bus_txn *t, const char *name, dag__wf *w) {
  const void *val;
  size_t len, off = 0;
  int rc = bus_txn_get(t, DAG__T_SPECS, name, strlen(name), &val, &len);
  if (rc)
    return rc == BUS_ENOT_FOUND
               ? bus_error(BUS_ECORRUPT, "no spec for %s", name)
               : rc;
  if (msgpack_unpack(val, len, &off, &w->zone, &w->res) !=
      MSGPACK_UNPACK_SUCCESS)
    return bus_error(BUS_ECORRUPT, "spec of %s does not decode", name);
  const msgpack_object *spec = bus_obj_get(&w->res, "spec");
  if (!spec || dag_graph_build(spec, name, &w->g, NULL, 0, NULL))
    return bus_error(BUS_ECORRUPT, "spec of %s is not a valid DAG", name);
  return 0;
}

static int
alloc_arrays(dag__wf *w) {
  size_t n = (size_t)w->g.n;
  w->jobname = calloc(n, sizeof *w->jobname);
  w->jobs = calloc(n, sizeof *w->jobs);
  w->have = calloc(n, sizeof *w->have);
  w->ver = calloc(n, sizeof *w->ver);
  w->state = calloc(n, 1);
  w->ready = calloc(n, 1);
  w->skipped = calloc(n, 1);
  return w->jobname && w->jobs && w->have && w->ver && w->state && w->ready &&
                 w->skipped
             ? 0
             : -ENOMEM;
}

static int
load_jobs(bus_txn *t, dag__wf *w) {
  char subject[BUS_SUBJECT_MAX];
  for (int i = 0; i < w->g.n; i++) {
    int rc = dag_job_name(w->rec.name, w->g.t[i].name, w->jobname[i],
                          sizeof w->jobname[i]);
    if (!rc)
      rc =
          dag__subject(DAG__JOB_PREFIX, w->jobname[i], subject, sizeof subject);
    if (!rc)
      rc = bus_txn_version(t, subject, &w->ver[i]);
    if (!rc) {
      rc = dag__job_get(t, w->jobname[i], &w->jobs[i]);
      w->have[i] = rc == 0;
      rc = rc == BUS_ENOT_FOUND ? 0 : rc;
    }
    if (rc)
      return rc;
    w->state[i] = (uint8_t)dag__tmpl_state(w, i);
  }
  return 0;
}

int
dag__wf_load(bus_txn *t, const char *name, dag__wf *w) {
  memset(w, 0, sizeof *w);
  msgpack_zone_init(&w->zone, 4096);
  int rc = dag__wf_get(t, name, &w->rec);
  if (!rc)
    rc = load_resource(t, name, w);
  if (!rc)
    rc = alloc_arrays(w);
  if (!rc)
    rc = load_jobs(t, w);
  if (!rc)
    dag_evaluate(&w->g, w->state, w->rec.stopped, w->ready, w->skipped, &w->ev);
  return rc;
}

void
dag__wf_free(dag__wf *w) {
  if (!w)
    return;
  dag_graph_free(&w->g);
  free(w->jobname);
  free(w->jobs);
  free(w->have);
  free(w->ver);
  free(w->state);
  free(w->ready);
  free(w->skipped);
  msgpack_zone_destroy(&w->zone);
  memset(w, 0, sizeof *w);
}

/* The rest of subject after prefix, or NULL (nothing after it either). */
const char *
dag__suffix(const char *subject, const char *prefix) {
  size_t n = strlen(prefix);
  return subject && !strncmp(subject, prefix, n) && subject[n] ? subject + n
                                                               : NULL;
}
