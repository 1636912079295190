/*
 * apply.c - apply for the dag view, dispatched by event type, and the
 * view's definition.
 *
 * apply projects workflow.* events on lark.ev.workflow.<wf> and the job.*
 * events of Job names a Workflow claimed, then re-evaluates that Workflow
 * and stores its phase. It reads no clock and writes only rows, so live
 * and replay agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag-int.h"

static const char *const tables[] = {DAG__T_WORKFLOWS, DAG__T_SPECS,
                                     DAG__T_JOBS, NULL};

/* Store the evaluation of wf in its row (apply side). */
static int
refresh(bus_txn *t, const char *name) {
  dag__wf w;
  int rc = dag__wf_load(t, name, &w);
  if (!rc) {
    snprintf(w.rec.phase, sizeof w.rec.phase, "%s",
             w.rec.deleted ? "Deleted" : dag_phase_name(w.ev.phase));
    snprintf(w.rec.reason, sizeof w.rec.reason, "%s", w.ev.reason);
    w.rec.succeeded = (uint32_t)w.ev.succeeded;
    w.rec.total = (uint32_t)w.g.n;
    rc = dag__wf_put(t, &w.rec);
  }
  dag__wf_free(&w);
  return rc;
}

/* ------------------------------------------------------ workflow events */

/* Claim the Job names of a new generation; refuse names another live
 * Workflow holds. */
static int
claim_jobs(bus_txn *t, const char *wf, const dag_graph *g) {
  char job[BUS_DERIVED_NAME_MAX + 1];
  for (int i = 0; i < g->n; i++) {
    dag__jobrec r;
    dag__wfrec other;
    int rc = dag_job_name(wf, g->t[i].name, job, sizeof job);
    if (rc)
      return rc;
    rc = dag__job_get(t, job, &r);
    if (rc && rc != BUS_ENOT_FOUND)
      return rc;
    if (!rc && strcmp(r.wf, wf) && dag__wf_get(t, r.wf, &other) == 0 &&
        !other.deleted)
      return bus_error(BUS_EINVAL, "Job name %s is workflow %s's", job, r.wf);
    if (rc || strcmp(r.wf, wf)) {
      memset(&r, 0, sizeof r);
      snprintf(r.wf, sizeof r.wf, "%s", wf);
    }
    snprintf(r.tmpl, sizeof r.tmpl, "%s", g->t[i].name);
    if ((rc = dag__job_put(t, job, &r)))
      return rc;
  }
  return 0;
}

static int
apply_submitted(bus_txn *t, const bus_event *ev,
                const bus_ev_workflow_submitted *d, const char *name) {
  char meta[BUS_NAME_MAX + 1];
  dag__wfrec r;
  dag_graph g;
  if (strcmp(bus_str_copy(d->metadata.name, meta, sizeof meta), name))
    return bus_error(BUS_EINVAL, "metadata.name is not the subject's %s", name);
  int rc = dag__wf_get(t, name, &r);
  if (rc == 0 && !r.deleted)
    return bus_error(BUS_EINVAL, "workflow %s exists", name);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  /* the graph reads the spec as msgpack, as it reads a command's (graph.c) */
  rc = dag_graph_build(bus_obj_get(&ev->data, "spec"), name, &g, NULL, 0, NULL);
  if (rc)
    return rc;
  bus_version ver;
  rc = bus_txn_version(t, ev->subject, &ver);
  if (!rc)
    rc = claim_jobs(t, name, &g);
  dag_graph_free(&g);
  if (rc)
    return rc;
  memset(&r, 0, sizeof r);
  snprintf(r.name, sizeof r.name, "%s", name);
  r.generation = ver.generation;
  r.ts = ev->ts;
  if ((rc = dag__spec_put(t, name, &ev->data)) || (rc = dag__wf_put(t, &r)))
    return rc;
  return refresh(t, name);
}

/* A Workflow's later events change its row: stopped, resumed, deleted,
 * or the phase it announced. */
static void
wf_change(dag__wfrec *r, const bus_event *ev, const void *data) {
  if (ev->t == BUS_T_WORKFLOW_STOPPED || ev->t == BUS_T_WORKFLOW_RESUMED)
    r->stopped = ev->t == BUS_T_WORKFLOW_STOPPED;
  else if (ev->t == BUS_T_WORKFLOW_DELETED)
    r->deleted = 1;
  else if (ev->t == BUS_T_WORKFLOW_PHASE)
    bus_str_copy(((const bus_ev_workflow_phase *)data)->phase, r->announced,
                 sizeof r->announced);
}

static int
apply_workflow(bus_txn *t, const bus_event *ev, const void *data,
               const char *name) {
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return bus_error(BUS_EINVAL, "workflow name %s", name);
  if (ev->t == BUS_T_WORKFLOW_SUBMITTED)
    return apply_submitted(t, ev, data, name);
  dag__wfrec r;
  int rc = dag__wf_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND || (!rc && r.deleted))
    return bus_error(BUS_EINVAL, "no workflow %s", name);
  if (rc)
    return rc;
  wf_change(&r, ev, data);
  if ((rc = dag__wf_put(t, &r)))
    return rc;
  return refresh(t, name);
}

/* ----------------------------------------------------------- job events */

/* The value of key in m copied into buf; NULL when m has no key. */
static const char *
map_str(const bus_str_map *m, const char *key, char *buf, size_t cap) {
  for (uint32_t i = 0; i < m->n; i++)
    if (bus_str_eq(m->v[i].key, key))
      return bus_str_copy(m->v[i].val, buf, cap);
  return NULL;
}

/* Is this job.submitted lark-dag's, for the Workflow that claimed it? */
static void
read_submitted(const bus_event *ev, const bus_ev_job_submitted *d,
               dag__jobrec *r) {
  char wf[BUS_NAME_MAX + 1], gen[24];
  r->ours = ev->actor && !strcmp(ev->actor, DAG_ACTOR) &&
            map_str(&d->metadata.labels, DAG_LABEL_WORKFLOW, wf, sizeof wf) &&
            !strcmp(wf, r->wf);
  r->wfgen = 0;
  if (r->ours &&
      map_str(&d->metadata.annotations, DAG_ANN_GENERATION, gen, sizeof gen))
    r->wfgen = strtoull(gen, NULL, 10);
  r->stopped = d->spec.has_stopped && d->spec.stopped;
  r->bydag = 0;
  r->deleted = 0;
  snprintf(r->phase, sizeof r->phase, "Pending");
  r->reason[0] = 0;
}

/* A claimed Job's events change its row; dag: lark-dag was the actor. */
static void
job_change(dag__jobrec *r, const bus_event *ev, const void *data, int dag) {
  const bus_ev_job_phase *ph = data;
  switch (ev->t) {
  case BUS_T_JOB_SUBMITTED:
    read_submitted(ev, data, r);
    break;
  case BUS_T_JOB_PHASE:
    bus_str_copy(ph->phase, r->phase, sizeof r->phase);
    bus_str_copy(ph->reason, r->reason, sizeof r->reason);
    break;
  case BUS_T_JOB_STOPPED:
    r->stopped = 1;
    r->bydag = dag;
    break;
  case BUS_T_JOB_RESUMED:
    r->stopped = 0;
    r->bydag = 0;
    if (strcmp(r->phase, "Succeeded"))
      snprintf(r->phase, sizeof r->phase, "Pending");
    break;
  case BUS_T_JOB_DELETED:
    r->deleted = 1;
    break;
  default:
    break;
  }
}

static int
apply_job(bus_txn *t, const bus_event *ev, const void *data, const char *job) {
  dag__jobrec r;
  int rc = dag__job_get(t, job, &r);
  if (rc == BUS_ENOT_FOUND)
    return 0; /* not a Job of any Workflow */
  if (rc)
    return rc;
  job_change(&r, ev, data, ev->actor && !strcmp(ev->actor, DAG_ACTOR));
  if ((rc = dag__job_put(t, job, &r)))
    return rc;
  dag__wfrec w;
  rc = dag__wf_get(t, r.wf, &w);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  return rc ? rc : refresh(t, r.wf);
}

/* A Workflow's event or a Job's, told apart by the subject; data is the
 * event's generated struct. */
static int
on_event(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const char *name;
  if ((name = dag__suffix(ev->subject, DAG__WF_PREFIX)))
    return apply_workflow(t, ev, data, name);
  if ((name = dag__suffix(ev->subject, DAG__JOB_PREFIX)) &&
      bus_name_valid(name, BUS_DERIVED_NAME_MAX))
    return apply_job(t, ev, data, name);
  return 0;
}

/* The types the view follows, indexed by the event's type (BUS_T_*). */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_WORKFLOW_SUBMITTED] = on_event,
        [BUS_T_WORKFLOW_STOPPED] = on_event,
        [BUS_T_WORKFLOW_RESUMED] = on_event,
        [BUS_T_WORKFLOW_DELETED] = on_event,
        [BUS_T_WORKFLOW_PHASE] = on_event,
        [BUS_T_JOB_SUBMITTED] = on_event,
        [BUS_T_JOB_PHASE] = on_event,
        [BUS_T_JOB_STOPPED] = on_event,
        [BUS_T_JOB_RESUMED] = on_event,
        [BUS_T_JOB_DELETED] = on_event,
    }};

static int
dag_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
dag_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "dag",
                        .tables = tables,
                        .apply = dag_apply,
                        .decide = dag__decide,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>"};
}
