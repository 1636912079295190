/*
 * dag.h - the DAG runner: Workflows of Job templates, run in dependency
 * order. The library `larkdag` holds the pure logic (graph, readiness,
 * phases), the view projected from workflow.* and job.* events, its
 * decisions, its queries and the checks a workflow.apply command makes.
 * The binary `lark-dag` wires them to the broker.
 *
 * The rules (docs/scheduler.md, docs/design.md section 1):
 *
 * - A Workflow is a list of jobTemplates {name, dependencies, spec}.
 *   Template names are unique; every dependency names a template of the
 *   same Workflow; dependencies may be listed in any order; a cycle (a
 *   self-dependency included) is refused and named, "cycle: a -> b -> a",
 *   where "x -> y" reads "x runs before y".
 * - Template t runs as the Job `<workflow>-<t>` (a derived name, at most
 *   253 characters), submitted by lark-dag once every dependency of t has
 *   Succeeded. The Job carries the label rlark.io/workflow = <workflow>,
 *   rlark.io/job-template = <t>, and the annotation
 *   rlark.io/workflow-generation, so a Job from an older generation of the
 *   Workflow (deleted, then applied again) is never mistaken for a new one.
 * - A template whose dependency Failed, or was itself Skipped, is Skipped:
 *   its Job is never submitted. Templates that do not depend on the
 *   failure go on (only dependents are skipped).
 * - The Workflow is Succeeded when every Job Succeeded, Failed once a Job
 *   failed (or a template was skipped) and nothing is pending or running
 *   any more, Stopped while stopped, Running once a Job was submitted,
 *   Pending before.
 * - Stopping a Workflow stops its unfinished Jobs (Pending, Running or
 *   Failed) and submits no more; resuming it resumes the Jobs lark-dag
 *   stopped (a Job a user stopped by itself stays stopped) and submits the
 *   ready ones. Stop then resume therefore retries failed Jobs.
 * - A Job of the Workflow deleted by a user counts as Failed. Deleting the
 *   Workflow deletes its Jobs.
 *
 * Threads: the graph and evaluation functions are reentrant. View, query
 * and check functions take a bus_txn, which belongs to one thread.
 */
#ifndef LARK_DAG_H
#define LARK_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

#define DAG_MAX_TEMPLATES 256
#define DAG_MAX_DEPS 64
#define DAG_ACTOR "lark-dag"
#define DAG_LABEL_WORKFLOW "rlark.io/workflow"
#define DAG_LABEL_TEMPLATE "rlark.io/job-template"
#define DAG_ANN_GENERATION "rlark.io/workflow-generation"

/* ------------------------------------------------------------------ graph */

typedef struct dag_tmpl {
  char name[BUS_NAME_MAX + 1];
  const msgpack_object *spec; /* the template's JobSpec, inside the input */
  int ndeps;
  uint16_t *deps; /* indices of the templates it depends on, deduplicated */
} dag_tmpl;

/* A validated Workflow graph. Points into the msgpack object it was built
 * from: that object must outlive the graph. */
typedef struct dag_graph {
  int n;
  dag_tmpl *t;
  uint16_t *order; /* a topological order: dependencies first */
} dag_graph;

/*
 * Build the graph of a WorkflowSpec (the resource's `spec` map) and check
 * the DAG rules: template names valid and unique, dependencies known,
 * no cycle; with wf (may be NULL) also that every Job name
 * `<wf>-<template>` is a valid derived name. Every problem found (up to
 * max) goes into errs as {path, reason} with paths like
 * "spec.jobTemplates[1].dependencies[0]"; *nerr is the count (may be
 * NULL). Returns 0, BUS_EINVAL when the rules are broken (graph left
 * empty), or -ENOMEM. Never crashes on input of the wrong shape.
 * dag_graph_free releases it (a zeroed graph too).
 */
int dag_graph_build(const msgpack_object *spec, const char *wf, dag_graph *g,
                    bus_field_err *errs, int max, int *nerr);
void dag_graph_free(dag_graph *g);

/* Index of the template called name, or -1. */
int dag_graph_find(const dag_graph *g, const char *name);

/*
 * The Job name of a template: "<wf>-<tmpl>" into out. BUS_ENAME when it is
 * not a valid derived name (longer than BUS_DERIVED_NAME_MAX, or wf or
 * tmpl empty) or does not fit cap.
 */
int dag_job_name(const char *wf, const char *tmpl, char *out, size_t cap);

/* ------------------------------------------------------------- evaluation */

/* What lark-dag knows of one template's Job. */
enum {
  DAG_NONE = 0,  /* no Job of this generation yet */
  DAG_PENDING,   /* submitted, not running yet */
  DAG_RUNNING,   /* running */
  DAG_SUCCEEDED, /* done */
  DAG_FAILED,    /* failed, or deleted, or its name is taken */
  DAG_STOPPED    /* stopped (may be resumed) */
};

/* Phases of a Workflow (and the names of dag_phase_name). */
enum {
  DAG_WF_PENDING = 0,
  DAG_WF_RUNNING,
  DAG_WF_SUCCEEDED,
  DAG_WF_FAILED,
  DAG_WF_STOPPED
};

typedef struct dag_eval {
  int phase;        /* DAG_WF_* */
  int succeeded;    /* templates whose Job succeeded */
  int failed;       /* ... failed */
  int skipped;      /* templates skipped */
  int active;       /* Jobs pending, running or stopped, plus ready ones */
  char reason[256]; /* for people: "failed: train; skipped: eval" */
} dag_eval;

/*
 * Evaluate a graph given each template's state (state[i], DAG_NONE ..) and
 * whether the Workflow is stopped. ready[i] is set to 1 for templates to
 * submit now (no Job, every dependency succeeded), skipped[i] to 1 for
 * templates that will never run (no Job, a dependency failed or was
 * skipped). ready and skipped hold g->n entries each.
 */
void dag_evaluate(const dag_graph *g, const uint8_t *state, int stopped,
                  uint8_t *ready, uint8_t *skipped, dag_eval *out);

/* "Pending", "Running", ... for DAG_WF_*; "Unknown" else. */
const char *dag_phase_name(int phase);
/* The phase of one template for people: "" (waiting), "Pending", ...,
 * "Skipped". */
const char *dag_state_name(int state, int skipped);

/* ------------------------------------------------------------------- diff */

/*
 * Compare two msgpack values: map key order does not matter, everything
 * else does. Every differing path (prefixed with path, up to max) goes
 * into errs, reason naming what changed; *n is the count. Returns 1 when
 * they are equal, 0 when they differ.
 */
int dag_obj_equal(const msgpack_object *a, const msgpack_object *b,
                  const char *path, bus_field_err *errs, int max, int *n);

/* ------------------------------------------------------------------- view */

/*
 * The view "dag". Tables:
 *   workflows  <wf>  -> msgpack {name, generation, stopped, deleted, phase,
 *                       announced, reason, ts, succeeded, total}
 *   specs      <wf>  -> the Workflow resource as submitted (msgpack)
 *   jobs       <job> -> msgpack {wf, template, ours, wfgen, phase, reason,
 *                       stopped, bydag, deleted}: one row per derived Job
 *                       name any Workflow has claimed
 * apply projects workflow.* events and the job.* events of claimed names;
 * decide (cause = such an event) reconciles that Workflow: submits ready
 * Jobs, stops/resumes/deletes them, and announces phase changes as
 * workflow.phase. Decisions depend only on the view, so a decision lost to
 * a conflict is made again when the next event of the Workflow arrives.
 */
void dag_view_def(bus_view_def *def);

/* --------------------------------------------------------------- commands */

/* What dag_check_apply found. */
enum {
  DAG_APPLY_NEW = 0,  /* append workflow.submitted with *prev */
  DAG_APPLY_UNCHANGED /* the same spec is there: nothing to do */
};

/*
 * The checks of workflow.apply against the view, after the schema check:
 * DAG rules (BUS_EINVAL), derived Job names taken by another Workflow or by
 * a Job not of this Workflow (BUS_EEXISTS, naming both), a different spec
 * already applied (BUS_EEXISTS, each differing path in errs). On success
 * returns DAG_APPLY_NEW with *prev the version to append on (0, or the
 * workflow.deleted seq), or DAG_APPLY_UNCHANGED with *prev the current
 * version. resource is the whole Workflow resource.
 */
int dag_check_apply(bus_txn *t, const msgpack_object *resource,
                    bus_field_err *errs, int max, int *nerr, uint64_t *prev);

/*
 * The checks of workflow.stop|resume|delete for the Workflow name: the
 * event type to append (*type) and its prev. Returns 0, DAG_APPLY_UNCHANGED
 * when there is nothing to do (stopping a stopped Workflow), BUS_ENOT_FOUND
 * when there is no such Workflow, BUS_EINVAL for a verb that does not
 * apply (stopping a Succeeded Workflow) with detail in bus_last_error().
 */
int dag_check_verb(bus_txn *t, const char *name, const char *verb,
                   const char **type, uint64_t *prev);

/* ---------------------------------------------------------------- queries */

/*
 * The view's bus_query_fn for kind "workflow": "list" {name?, limit?}
 * packs an array of {name, phase, reason, progress ("2/3" succeeded),
 * succeeded, total, generation, stopped, ts}; "describe" {name} packs the
 * same map plus jobs: [{name, template, phase, reason, dependencies}].
 * BUS_ENOT_FOUND for an unknown Workflow.
 */
int dag_query(bus_txn *t, const char *kind, const char *verb,
              const msgpack_object *req, msgpack_packer *pk, void *ud);

#endif
