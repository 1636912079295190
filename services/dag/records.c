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

/* --------------------------------------------------------------- packing */

static int
put_packed(bus_txn *t, const char *table, const char *key,
           const msgpack_sbuffer *sb) {
  return bus_txn_put(t, table, key, strlen(key), sb->data, sb->size);
}

/* Unpack a row into zone; BUS_ECORRUPT unless it is one map. */
static int
get_row(bus_txn *t, const char *table, const char *key, msgpack_zone *z,
        msgpack_object *o) {
  const void *val;
  size_t len;
  int rc = bus_txn_get(t, table, key, strlen(key), &val, &len);
  if (rc)
    return rc;
  size_t off = 0;
  if (msgpack_unpack(val, len, &off, z, o) != MSGPACK_UNPACK_SUCCESS ||
      off != len || o->type != MSGPACK_OBJECT_MAP)
    return bus_error(BUS_ECORRUPT, "%s row %s does not decode", table, key);
  return 0;
}

static void
str_of(const msgpack_object *o, const char *k, char *buf, size_t cap) {
  if (!bus_obj_str(o, k, buf, cap))
    buf[0] = 0;
}

/* ------------------------------------------------------------- workflows */

int
dag__wf_put(bus_txn *t, const dag__wfrec *r) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 10);
  bus_pack_kv_str(&pk, "name", r->name);
  bus_pack_kv_uint(&pk, "generation", r->generation);
  bus_pack_kv_uint(&pk, "stopped", (uint64_t)r->stopped);
  bus_pack_kv_uint(&pk, "deleted", (uint64_t)r->deleted);
  bus_pack_kv_str(&pk, "phase", r->phase);
  bus_pack_kv_str(&pk, "announced", r->announced);
  bus_pack_kv_str(&pk, "reason", r->reason);
  bus_pack_kv_int(&pk, "ts", r->ts);
  bus_pack_kv_uint(&pk, "succeeded", r->succeeded);
  bus_pack_kv_uint(&pk, "total", r->total);
  int rc = put_packed(t, DAG__T_WORKFLOWS, r->name, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
dag__wf_get(bus_txn *t, const char *name, dag__wfrec *r) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  memset(r, 0, sizeof *r);
  int rc = get_row(t, DAG__T_WORKFLOWS, name, &z, &o);
  if (!rc) {
    str_of(&o, "name", r->name, sizeof r->name);
    r->generation = (uint64_t)bus_obj_int(&o, "generation", 0);
    r->stopped = bus_obj_int(&o, "stopped", 0) != 0;
    r->deleted = bus_obj_int(&o, "deleted", 0) != 0;
    str_of(&o, "phase", r->phase, sizeof r->phase);
    str_of(&o, "announced", r->announced, sizeof r->announced);
    str_of(&o, "reason", r->reason, sizeof r->reason);
    r->ts = bus_obj_int(&o, "ts", 0);
    r->succeeded = (uint32_t)bus_obj_int(&o, "succeeded", 0);
    r->total = (uint32_t)bus_obj_int(&o, "total", 0);
  }
  msgpack_zone_destroy(&z);
  return rc;
}

int
dag__spec_put(bus_txn *t, const char *wf, const msgpack_object *res) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, *res);
  int rc = put_packed(t, DAG__T_SPECS, wf, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* ------------------------------------------------------------------ jobs */

int
dag__job_put(bus_txn *t, const char *job, const dag__jobrec *r) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 9);
  bus_pack_kv_str(&pk, "wf", r->wf);
  bus_pack_kv_str(&pk, "template", r->tmpl);
  bus_pack_kv_uint(&pk, "ours", (uint64_t)r->ours);
  bus_pack_kv_uint(&pk, "wfgen", r->wfgen);
  bus_pack_kv_str(&pk, "phase", r->phase);
  bus_pack_kv_str(&pk, "reason", r->reason);
  bus_pack_kv_uint(&pk, "stopped", (uint64_t)r->stopped);
  bus_pack_kv_uint(&pk, "bydag", (uint64_t)r->bydag);
  bus_pack_kv_uint(&pk, "deleted", (uint64_t)r->deleted);
  int rc = put_packed(t, DAG__T_JOBS, job, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
dag__job_get(bus_txn *t, const char *job, dag__jobrec *r) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  memset(r, 0, sizeof *r);
  int rc = get_row(t, DAG__T_JOBS, job, &z, &o);
  if (!rc) {
    str_of(&o, "wf", r->wf, sizeof r->wf);
    str_of(&o, "template", r->tmpl, sizeof r->tmpl);
    r->ours = bus_obj_int(&o, "ours", 0) != 0;
    r->wfgen = (uint64_t)bus_obj_int(&o, "wfgen", 0);
    str_of(&o, "phase", r->phase, sizeof r->phase);
    str_of(&o, "reason", r->reason, sizeof r->reason);
    r->stopped = bus_obj_int(&o, "stopped", 0) != 0;
    r->bydag = bus_obj_int(&o, "bydag", 0) != 0;
    r->deleted = bus_obj_int(&o, "deleted", 0) != 0;
  }
  msgpack_zone_destroy(&z);
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
