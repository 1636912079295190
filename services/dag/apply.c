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

static void
data_str(const bus_event *ev, const char *key, char *buf, size_t cap) {
  if (!bus_obj_str(&ev->data, key, buf, cap))
    buf[0] = 0;
}

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
apply_submitted(bus_txn *t, const bus_event *ev, const char *name) {
  char meta[BUS_NAME_MAX + 1];
  dag__wfrec r;
  dag_graph g;
  const msgpack_object *md = bus_obj_get(&ev->data, "metadata");
  if (!bus_obj_str(md, "name", meta, sizeof meta) || strcmp(meta, name))
    return bus_error(BUS_EINVAL, "metadata.name is not the subject's %s", name);
  int rc = dag__wf_get(t, name, &r);
  if (rc == 0 && !r.deleted)
    return bus_error(BUS_EINVAL, "workflow %s exists", name);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
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

static void
wf_stopped(dag__wfrec *r, const bus_event *ev) {
  (void)ev;
  r->stopped = 1;
}

static void
wf_resumed(dag__wfrec *r, const bus_event *ev) {
  (void)ev;
  r->stopped = 0;
}

static void
wf_deleted(dag__wfrec *r, const bus_event *ev) {
  (void)ev;
  r->deleted = 1;
}

static void
wf_phase(dag__wfrec *r, const bus_event *ev) {
  data_str(ev, "phase", r->announced, sizeof r->announced);
}

/* The event's type (libbus sets it, for an event built by hand too). */
static bus_type
type_of(const bus_event *ev) {
  return bus_type_name(ev->t) ? ev->t : BUS_T_UNKNOWN;
}

/* A Workflow's events, indexed by the event's type (BUS_T_*):
 * workflow.submitted makes the row, the others change it. */
typedef void (*wf_change)(dag__wfrec *r, const bus_event *ev);

static const wf_change wf_table[BUS_T__COUNT] = {
    [BUS_T_WORKFLOW_DELETED] = wf_deleted,
    [BUS_T_WORKFLOW_PHASE] = wf_phase,
    [BUS_T_WORKFLOW_RESUMED] = wf_resumed,
    [BUS_T_WORKFLOW_STOPPED] = wf_stopped,
};

static int
apply_workflow(bus_txn *t, const bus_event *ev, const char *name) {
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return bus_error(BUS_EINVAL, "workflow name %s", name);
  if (type_of(ev) == BUS_T_WORKFLOW_SUBMITTED)
    return apply_submitted(t, ev, name);
  wf_change change = wf_table[type_of(ev)];
  dag__wfrec r;
  int rc = dag__wf_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND || (!rc && r.deleted))
    return bus_error(BUS_EINVAL, "no workflow %s", name);
  if (rc)
    return rc;
  if (!change)
    return 0; /* a type this version does not act on */
  change(&r, ev);
  if ((rc = dag__wf_put(t, &r)))
    return rc;
  return refresh(t, name);
}

/* ----------------------------------------------------------- job events */

/* Is this job.submitted lark-dag's, for the Workflow that claimed it? */
static void
read_submitted(const bus_event *ev, dag__jobrec *r) {
  char wf[BUS_NAME_MAX + 1], gen[24];
  const msgpack_object *md = bus_obj_get(&ev->data, "metadata");
  const msgpack_object *labels = bus_obj_get(md, "labels");
  const msgpack_object *ann = bus_obj_get(md, "annotations");
  r->ours = ev->actor && !strcmp(ev->actor, DAG_ACTOR) &&
            bus_obj_str(labels, DAG_LABEL_WORKFLOW, wf, sizeof wf) &&
            !strcmp(wf, r->wf);
  r->wfgen = 0;
  if (r->ours && bus_obj_str(ann, DAG_ANN_GENERATION, gen, sizeof gen))
    r->wfgen = strtoull(gen, NULL, 10);
  const msgpack_object *spec = bus_obj_get(&ev->data, "spec");
  const msgpack_object *stopped = bus_obj_get(spec, "stopped");
  r->stopped = stopped && stopped->type == MSGPACK_OBJECT_BOOLEAN &&
               stopped->via.boolean;
  r->bydag = 0;
  r->deleted = 0;
  snprintf(r->phase, sizeof r->phase, "Pending");
  r->reason[0] = 0;
}

static void
job_submitted(dag__jobrec *r, const bus_event *ev, int dag) {
  (void)dag;
  read_submitted(ev, r);
}

static void
job_phase(dag__jobrec *r, const bus_event *ev, int dag) {
  (void)dag;
  data_str(ev, "phase", r->phase, sizeof r->phase);
  data_str(ev, "reason", r->reason, sizeof r->reason);
}

static void
job_stopped(dag__jobrec *r, const bus_event *ev, int dag) {
  (void)ev;
  r->stopped = 1;
  r->bydag = dag;
}

static void
job_resumed(dag__jobrec *r, const bus_event *ev, int dag) {
  (void)ev, (void)dag;
  r->stopped = 0;
  r->bydag = 0;
  if (strcmp(r->phase, "Succeeded"))
    snprintf(r->phase, sizeof r->phase, "Pending");
}

static void
job_deleted(dag__jobrec *r, const bus_event *ev, int dag) {
  (void)ev, (void)dag;
  r->deleted = 1;
}

/* A claimed Job's events, indexed by the event's type (BUS_T_*); dag:
 * lark-dag was the actor. */
typedef void (*job_change)(dag__jobrec *r, const bus_event *ev, int dag);

static const job_change job_table[BUS_T__COUNT] = {
    [BUS_T_JOB_DELETED] = job_deleted,     [BUS_T_JOB_PHASE] = job_phase,
    [BUS_T_JOB_RESUMED] = job_resumed,     [BUS_T_JOB_STOPPED] = job_stopped,
    [BUS_T_JOB_SUBMITTED] = job_submitted,
};

static int
apply_job(bus_txn *t, const bus_event *ev, const char *job) {
  dag__jobrec r;
  int rc = dag__job_get(t, job, &r);
  if (rc == BUS_ENOT_FOUND)
    return 0; /* not a Job of any Workflow */
  if (rc)
    return rc;
  job_change change = job_table[type_of(ev)];
  if (!change)
    return 0;
  change(&r, ev, ev->actor && !strcmp(ev->actor, DAG_ACTOR));
  if ((rc = dag__job_put(t, job, &r)))
    return rc;
  dag__wfrec w;
  rc = dag__wf_get(t, r.wf, &w);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  return rc ? rc : refresh(t, r.wf);
}

static int
dag_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  const char *name;
  if (!ev->type)
    return 0;
  if ((name = dag__suffix(ev->subject, DAG__WF_PREFIX)))
    return apply_workflow(t, ev, name);
  if ((name = dag__suffix(ev->subject, DAG__JOB_PREFIX)) &&
      bus_name_valid(name, BUS_DERIVED_NAME_MAX))
    return apply_job(t, ev, name);
  return 0;
}

void
dag_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "dag";
  def->tables = tables;
  def->apply = dag_apply;
  def->decide = dag__decide;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.>";
}
