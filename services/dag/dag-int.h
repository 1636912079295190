/*
 * dag-int.h - inside larkdag: the view's records and a loaded Workflow.
 * Not for other parts; dag.h is the public interface.
 */
#ifndef LARK_DAG_INT_H
#define LARK_DAG_INT_H

#include "dag.h"

#define DAG__T_WORKFLOWS "workflows"
#define DAG__T_SPECS "specs"
#define DAG__T_JOBS "jobs"
#define DAG__WF_PREFIX "lark.ev.workflow."
#define DAG__JOB_PREFIX "lark.ev.job."

/* A Workflow's row. */
typedef struct dag__wfrec {
  char name[BUS_NAME_MAX + 1];
  uint64_t generation;
  int stopped, deleted;
  char phase[16];     /* as evaluated from its Jobs */
  char announced[16]; /* as last said by a workflow.phase event */
  char reason[256];
  int64_t ts; /* of its workflow.submitted */
  uint32_t succeeded, total;
} dag__wfrec;

/* A claimed Job name's row. */
typedef struct dag__jobrec {
  char wf[BUS_NAME_MAX + 1];
  char tmpl[BUS_NAME_MAX + 1];
  int ours;       /* the Job there was submitted by lark-dag for wf */
  uint64_t wfgen; /* ... for this generation of wf */
  char phase[16];
  char reason[256];
  int stopped, bydag, deleted;
} dag__jobrec;

/* Rows: get returns BUS_ENOT_FOUND when absent, BUS_ECORRUPT when a row
 * does not decode. */
int dag__wf_get(bus_txn *t, const char *name, dag__wfrec *out);
int dag__wf_put(bus_txn *t, const dag__wfrec *r);
int dag__job_get(bus_txn *t, const char *job, dag__jobrec *out);
int dag__job_put(bus_txn *t, const char *job, const dag__jobrec *r);
int dag__spec_put(bus_txn *t, const char *wf, const msgpack_object *res);

/* A Workflow with everything decide and the queries need. */
typedef struct dag__wf {
  dag__wfrec rec;
  msgpack_zone zone;
  msgpack_object res; /* the resource, in zone */
  dag_graph g;
  char (*jobname)[BUS_DERIVED_NAME_MAX + 1];
  dag__jobrec *jobs; /* per template; zeroed when the name has no row */
  int *have;         /* a row was found */
  bus_version *ver;  /* of lark.ev.job.<jobname> */
  uint8_t *state, *ready, *skipped;
  dag_eval ev;
} dag__wf;

/*
 * Load Workflow name: its row, resource, graph, each template's Job row
 * and version, and the evaluation. BUS_ENOT_FOUND when there is no row;
 * BUS_ECORRUPT when the stored resource no longer builds a graph.
 * dag__wf_free releases it (also after a failed load).
 */
int dag__wf_load(bus_txn *t, const char *name, dag__wf *w);
void dag__wf_free(dag__wf *w);

/* The state (DAG_NONE ..) of template i from its Job row and version. */
int dag__tmpl_state(const dag__wf *w, int i);

/* "lark.ev.<kind>.<name>" into out; BUS_ENAME when it does not fit. */
int dag__subject(const char *prefix, const char *name, char *out, size_t cap);

/* The rest of subject after prefix, or NULL (nothing after it either). */
const char *dag__suffix(const char *subject, const char *prefix);

/* decide (decide.c): the Workflow an event touched, reconciled. */
int dag__decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud);

#endif
