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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag-int.h"

static int
refused(int rc) {
  return rc == BUS_EINVAL || rc == BUS_EFIELD || rc == BUS_EMISSING ||
         rc == BUS_ENAME || rc == BUS_EUNKNOWN_TYPE || rc == BUS_ETOO_BIG;
}

/* Emit one event on <prefix><name>: its data the generated struct typed,
 * or when that is NULL the msgpack in raw. A refused one (hostile data)
 * is skipped, not fatal. */
static int
emit(bus_txn *t, const char *prefix, const char *name, bus_type type,
     uint64_t prev, const void *typed, const msgpack_sbuffer *raw) {
  char subject[BUS_SUBJECT_MAX];
  int rc = dag__subject(prefix, name, subject, sizeof subject);
  if (rc)
    return 0;
  bus_event ev = {.t = type,
                  .type = bus_type_name(type),
                  .typed = typed,
                  .actor = DAG_ACTOR,
                  .prev = prev,
                  .data_mp = raw ? raw->data : NULL,
                  .data_mp_len = raw ? raw->size : 0};
  rc = bus_txn_emit(t, subject, &ev, BUS_APPEND_CHECK);
  return refused(rc) ? 0 : rc;
}

/* job.deleted, job.stopped and job.resumed carry the same data: a reason. */
static int
emit_reason(bus_txn *t, const char *job, bus_type type, uint64_t prev,
            const char *reason) {
  _Static_assert(sizeof(bus_ev_job_deleted) == sizeof(bus_ev_job_stopped) &&
                     sizeof(bus_ev_job_resumed) == sizeof(bus_ev_job_stopped),
                 "job.deleted, .stopped and .resumed share one shape");
  bus_ev_job_stopped d = {.has_reason = 1, .reason = bus_str_of(reason)};
  return emit(t, DAG__JOB_PREFIX, job, type, prev, &d, NULL);
}

/*
 * job.submitted: the Job resource built from template i. Its spec is the
 * template's, copied as the user wrote it (the same bytes the Workflow
 * carried); the rest is packed from its generated types.
 */
static int
emit_submit(bus_txn *t, const dag__wf *w, int i) {
  char gen[24];
  snprintf(gen, sizeof gen, "%llu", (unsigned long long)w->rec.generation);
  bus_str_kv labels[] = {
      {BUS_STR(DAG_LABEL_WORKFLOW), bus_str_of(w->rec.name)},
      {BUS_STR(DAG_LABEL_TEMPLATE), bus_str_of(w->g.t[i].name)}};
  bus_str_kv ann[] = {{BUS_STR(DAG_ANN_GENERATION), bus_str_of(gen)}};
  bus_metadata md = {.name = bus_str_of(w->jobname[i]),
                     .has_labels = 1,
                     .labels = {labels, 2},
                     .has_annotations = 1,
                     .annotations = {ann, 1}};
  bus_packbuf b;
  bus_map m;
  bus_packbuf_init(&b);
  bus_map_begin(&m, &b.pk);
  bus_map_str(&m, "apiVersion", "rlinf.io/v1alpha1");
  bus_map_str(&m, "kind", "Job");
  bus_metadata_write(bus_map_key(&m, "metadata"), &md);
  if (w->g.t[i].spec)
    msgpack_pack_object(bus_map_key(&m, "spec"), *w->g.t[i].spec);
  else
    msgpack_pack_map(bus_map_key(&m, "spec"), 0);
  int rc = bus_map_end(&m);
  if (!rc)
    rc = emit(t, DAG__JOB_PREFIX, w->jobname[i], BUS_T_JOB_SUBMITTED,
              w->ver[i].seq, NULL, &b.sb);
  bus_packbuf_destroy(&b);
  return rc;
}

static int
emit_phase(bus_txn *t, const dag__wf *w, uint64_t prev) {
  bus_str *skipped = calloc((size_t)w->g.n + 1, sizeof *skipped);
  uint32_t n = 0;
  if (!skipped)
    return -ENOMEM;
  for (int i = 0; i < w->g.n; i++)
    if (w->skipped[i])
      skipped[n++] = bus_str_of(w->g.t[i].name);
  bus_ev_workflow_phase d = {.phase = bus_str_of(w->rec.phase),
                             .has_reason = 1,
                             .reason = bus_str_of(w->rec.reason),
                             .has_succeeded = 1,
                             .succeeded = (uint32_t)w->ev.succeeded,
                             .has_total = 1,
                             .total = (uint32_t)w->g.n,
                             .has_skipped = 1,
                             .skipped = {skipped, n}};
  int rc = emit(t, DAG__WF_PREFIX, w->rec.name, BUS_T_WORKFLOW_PHASE, prev, &d,
                NULL);
  free(skipped);
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
    return emit_reason(t, w->jobname[i], BUS_T_JOB_DELETED, v->seq,
                       "an older generation of its workflow");
  if (!present && w->ready[i] && !w->rec.stopped && w->state[i] == DAG_NONE)
    return emit_submit(t, w, i);
  if (!current || !present)
    return 0;
  if (w->rec.stopped && stoppable(j))
    return emit_reason(t, w->jobname[i], BUS_T_JOB_STOPPED, v->seq,
                       "workflow stopped");
  if (!w->rec.stopped && j->stopped && j->bydag && !j->deleted)
    return emit_reason(t, w->jobname[i], BUS_T_JOB_RESUMED, v->seq,
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
  return emit_reason(t, job, BUS_T_JOB_DELETED, v.seq,
                     "its workflow generation is gone");
}

static int
reconcile_all(bus_txn *t, const dag__wf *w) {
  int rc = 0;
  for (int i = 0; !rc && i < w->g.n; i++) {
    int present = w->ver[i].seq && !w->ver[i].deleted;
    if (w->rec.deleted)
      rc = present && w->have[i] && w->jobs[i].ours
               ? emit_reason(t, w->jobname[i], BUS_T_JOB_DELETED, w->ver[i].seq,
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
