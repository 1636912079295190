/*
 * decide.c - decide for the dag view.
 *
 * It reconciles the Workflow an event touched: it compares what the
 * view says should be (a ready template has a Job, a stopped Workflow's
 * Jobs are stopped, the announced phase is the evaluated one) with what
 * the view says is, and emits the difference. Nothing is remembered about
 * decisions in flight; instead
 * - every emit carries prev and BUS_APPEND_CHECK, so a second emit of the
 *   same decision (made again by a later event before the first was
 *   applied) is refused by the broker and dropped by the outbox: a Job is
 *   never submitted twice;
 * - a decision dropped because the subject moved on is made again when
 *   the newer event on that subject (or of that Workflow) is applied.
 * Validation errors of an emit are never fatal: decide returns only store
 * errors, so a hostile spec cannot stop the service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag-int.h"

static int
refused(int rc) {
  return rc == BUS_EINVAL || rc == BUS_EFIELD || rc == BUS_EMISSING ||
         rc == BUS_ENAME || rc == BUS_EUNKNOWN_TYPE || rc == BUS_ETOO_BIG;
}

/* Emit one event; a refused one (hostile data) is skipped, not fatal. */
static int
emit(bus_txn *t, const char *prefix, const char *name, const char *type,
     uint64_t prev, const msgpack_sbuffer *data) {
  char subject[BUS_SUBJECT_MAX];
  int rc = dag__subject(prefix, name, subject, sizeof subject);
  if (rc)
    return 0;
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = type;
  ev.actor = DAG_ACTOR;
  ev.prev = prev;
  ev.data_mp = data->data;
  ev.data_mp_len = data->size;
  rc = bus_txn_emit(t, subject, &ev, BUS_APPEND_CHECK);
  return refused(rc) ? 0 : rc;
}

static int
emit_reason(bus_txn *t, const char *job, const char *type, uint64_t prev,
            const char *reason) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "reason", reason);
  int rc = emit(t, DAG__JOB_PREFIX, job, type, prev, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* job.submitted: the Job resource built from template i. */
static int
emit_submit(bus_txn *t, const dag__wf *w, int i) {
  char gen[24];
  snprintf(gen, sizeof gen, "%llu", (unsigned long long)w->rec.generation);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 4);
  bus_pack_kv_str(&pk, "apiVersion", "rlinf.io/v1alpha1");
  bus_pack_kv_str(&pk, "kind", "Job");
  msgpack_pack_str_with_body(&pk, "metadata", 8);
  msgpack_pack_map(&pk, 3);
  bus_pack_kv_str(&pk, "name", w->jobname[i]);
  msgpack_pack_str_with_body(&pk, "labels", 6);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, DAG_LABEL_WORKFLOW, w->rec.name);
  bus_pack_kv_str(&pk, DAG_LABEL_TEMPLATE, w->g.t[i].name);
  msgpack_pack_str_with_body(&pk, "annotations", 11);
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, DAG_ANN_GENERATION, gen);
  msgpack_pack_str_with_body(&pk, "spec", 4);
  if (w->g.t[i].spec)
    msgpack_pack_object(&pk, *w->g.t[i].spec);
  else
    msgpack_pack_map(&pk, 0);
  int rc = emit(t, DAG__JOB_PREFIX, w->jobname[i], "job.submitted",
                w->ver[i].seq, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
emit_phase(bus_txn *t, const dag__wf *w, uint64_t prev) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 5);
  bus_pack_kv_str(&pk, "phase", w->rec.phase);
  bus_pack_kv_str(&pk, "reason", w->rec.reason);
  msgpack_pack_str_with_body(&pk, "succeeded", 9);
  msgpack_pack_uint32(&pk, (uint32_t)w->ev.succeeded);
  msgpack_pack_str_with_body(&pk, "total", 5);
  msgpack_pack_uint32(&pk, (uint32_t)w->g.n);
  msgpack_pack_str_with_body(&pk, "skipped", 7);
  msgpack_pack_array(&pk, (uint32_t)w->ev.skipped);
  for (int i = 0; i < w->g.n; i++)
    if (w->skipped[i])
      msgpack_pack_str_with_body(&pk, w->g.t[i].name, strlen(w->g.t[i].name));
  int rc = emit(t, DAG__WF_PREFIX, w->rec.name, "workflow.phase", prev, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
stoppable(const dag__jobrec *j) {
  return !j->stopped && !j->deleted && strcmp(j->phase, "Succeeded") &&
         strcmp(j->phase, "Stopped");
}

/* What template i of a live Workflow needs, if anything. */
static int
reconcile_tmpl(bus_txn *t, const dag__wf *w, int i) {
  const dag__jobrec *j = &w->jobs[i];
  const bus_version *v = &w->ver[i];
  int present = v->seq && !v->deleted;
  int current = w->have[i] && j->ours && j->wfgen == w->rec.generation;
  if (present && w->have[i] && j->ours && !current)
    return emit_reason(t, w->jobname[i], "job.deleted", v->seq,
                       "an older generation of its workflow");
  if (!present && w->ready[i] && !w->rec.stopped && w->state[i] == DAG_NONE)
    return emit_submit(t, w, i);
  if (!current || !present)
    return 0;
  if (w->rec.stopped && stoppable(j))
    return emit_reason(t, w->jobname[i], "job.stopped", v->seq,
                       "workflow stopped");
  if (!w->rec.stopped && j->stopped && j->bydag && !j->deleted)
    return emit_reason(t, w->jobname[i], "job.resumed", v->seq,
                       "workflow resumed");
  return 0;
}

/* A Job event for a name whose Workflow no longer wants it: one that is
 * not among the Job names of the Workflow's current generation. */
static int
orphan(bus_txn *t, const char *job) {
  dag__jobrec j;
  bus_version v;
  char subject[BUS_SUBJECT_MAX];
  int rc = dag__job_get(t, job, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND || rc == BUS_ECORRUPT ? 0 : rc;
  if (!j.ours || j.deleted)
    return 0;
  if ((rc = dag__subject(DAG__JOB_PREFIX, job, subject, sizeof subject)) ||
      (rc = bus_txn_version(t, subject, &v)))
    return refused(rc) ? 0 : rc;
  if (!v.seq || v.deleted)
    return 0;
  return emit_reason(t, job, "job.deleted", v.seq,
                     "its workflow generation is gone");
}

static int
reconcile_all(bus_txn *t, const dag__wf *w) {
  int rc = 0;
  for (int i = 0; !rc && i < w->g.n; i++) {
    int present = w->ver[i].seq && !w->ver[i].deleted;
    if (w->rec.deleted)
      rc = present && w->have[i] && w->jobs[i].ours
               ? emit_reason(t, w->jobname[i], "job.deleted", w->ver[i].seq,
                             "workflow deleted")
               : 0;
    else
      rc = reconcile_tmpl(t, w, i);
  }
  return rc;
}

/*
 * Everything Workflow name needs, given that an event of it (or of the
 * Job job, when not NULL) was just applied.
 */
static int
reconcile(bus_txn *t, const char *name, const char *job) {
  dag__wf w;
  char subject[BUS_SUBJECT_MAX];
  int rc = dag__wf_load(t, name, &w), known = 0;
  if (rc == BUS_ENOT_FOUND || rc == BUS_ECORRUPT || rc == BUS_ENAME) {
    dag__wf_free(&w);
    return job ? orphan(t, job) : 0;
  }
  if (!rc)
    rc = reconcile_all(t, &w);
  for (int i = 0; job && i < w.g.n; i++)
    known |= !strcmp(w.jobname[i], job);
  if (!rc && job && !known)
    rc = orphan(t, job);
  bus_version ver;
  if (!rc && !w.rec.deleted && strcmp(w.rec.phase, w.rec.announced) &&
      !(rc = dag__subject(DAG__WF_PREFIX, name, subject, sizeof subject)) &&
      !(rc = bus_txn_version(t, subject, &ver)))
    rc = emit_phase(t, &w, ver.seq);
  dag__wf_free(&w);
  return refused(rc) ? 0 : rc;
}

int
dag__decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now, (void)ud;
  const char *name;
  if (!cause || !cause->type)
    return 0;
  if ((name = dag__suffix(cause->subject, DAG__WF_PREFIX)))
    return bus_name_valid(name, BUS_NAME_MAX) ? reconcile(t, name, NULL) : 0;
  name = dag__suffix(cause->subject, DAG__JOB_PREFIX);
  if (!name || !bus_name_valid(name, BUS_DERIVED_NAME_MAX))
    return 0;
  dag__jobrec j;
  int rc = dag__job_get(t, name, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND || rc == BUS_ECORRUPT ? 0 : rc;
  return reconcile(t, j.wf, name);
}
