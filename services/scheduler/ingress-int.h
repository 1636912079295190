/*
 * ingress-int.h - the ingress's parts: the routing loop (ingress.c), the
 * run reports it stores a batch at a time (ingress_runs.c) and the
 * registrations it appends a batch at a time (ingress_regs.c).
 */
#ifndef LARK_SCHED_INGRESS_INT_H
#define LARK_SCHED_INGRESS_INT_H

#include "scheduler.h"

/* A broker that does not answer now has refused nothing: wait, ask again.
 * The first wait; each doubles, up to 2 s. */
#define SCHED_INGRESS_NAP_MS 50
/* Appends of one report before its subject is deemed busy (BUS_EBUSY,
 * tried again after a nap): each try follows a write by someone else. */
#define SCHED_REPORT_TRIES 8

int sched_ingress_transient(int rc);
void sched_ingress_log(const char *subject, const char *what,
                       const char *detail);
/* Log why (bus_last_error()), sleep *delay_ms and double it; non-zero when
 * w was told to stop meanwhile. */
int sched_ingress_nap(const bus_worker *w, int *delay_ms, const char *subject);

/* Run reports staged from one fetched batch, in their order. */
#define SCHED_RUNS_MAX 256

typedef struct sched_run {
  char subject[BUS_SUBJECT_MAX];
  char actor[SCHED_DNAME_SZ + 8];
  char id[33];
  bus_event ev; /* its data points into the fetched batch */
} sched_run;

typedef struct sched_runs {
  bus_conn *c;
  size_t n;
  sched_run runs[SCHED_RUNS_MAX];
  bus_atomic_item items[SCHED_RUNS_MAX];
} sched_runs;

/* Stage pod's report in, when the view has the pod bound to node;
 * BUS_EDENIED otherwise (nothing staged). */
int sched_runs_stage(sched_runs *r, bus_view *v, const char *node,
                     const char *pod, const bus_event *in);
int sched_runs_full(const sched_runs *r);
/* Store what is staged, in order; 0 once stored or refused for good, a
 * transient error when told to stop first (the batch is not to be acked). */
int sched_runs_flush(sched_runs *r, const bus_worker *w);

/* Registrations staged from one fetched batch, in their order. */
typedef struct sched_reg {
  char node[SCHED_NAME_SZ];
  char subject[BUS_SUBJECT_MAX];
  char actor[SCHED_NAME_SZ + 8];
  char cause[40];
  char id[33];
  bus_event ev; /* its data points into the fetched batch */
} sched_reg;

typedef struct sched_regs {
  bus_conn *c;
  size_t n;
  sched_reg regs[SCHED_RUNS_MAX];
  bus_append_item items[SCHED_RUNS_MAX];
} sched_regs;

/* Stage node's registration in (to subject, checked at prev); the caller
 * flushes first when full or when node has one staged already. */
void sched_regs_stage(sched_regs *r, const char *node, const char *subject,
                      const bus_event *in, uint64_t prev);
int sched_regs_has(const sched_regs *r, const char *node);
int sched_regs_full(const sched_regs *r);
/* Append what is staged; 0 once each is stored, found lagging (a newer
 * registration is there) or refused for good; a transient error when
 * told to stop first (the batch is not to be acked). */
int sched_regs_flush(sched_regs *r, const bus_worker *w);

/* Pod reports staged from one fetched batch: a run of consecutive ones. */
typedef struct sched_rep {
  char pod[SCHED_DNAME_SZ];
  char subject[BUS_SUBJECT_MAX];
  char job[SCHED_NAME_SZ], node[SCHED_NAME_SZ];
  char actor[SCHED_NAME_SZ + 8];
  char id[33];
  bus_ev_pod_phase d; /* job and node point into this; phase, reason and
                         localIP into the fetched batch */
  bus_event ev;       /* typed: d */
} sched_rep;

typedef struct sched_reps {
  bus_conn *c;
  size_t n;
  sched_rep reps[SCHED_RUNS_MAX];
  bus_append_item items[SCHED_RUNS_MAX];
} sched_reps;

/* Stage node's pod report in as its pod.phase, when the view has the pod
 * bound to node at the report's attempt (BUS_EDENIED otherwise: nothing
 * staged); the caller flushes first when full or when the pod has one
 * staged already. */
int sched_reps_stage(sched_reps *r, bus_view *v, const char *node,
                     const bus_event *in);
int sched_reps_has(const sched_reps *r, const char *pod);
int sched_reps_full(const sched_reps *r);
/* Append what is staged; 0 once each is stored or refused for good (said
 * in the log); a transient error when told to stop first (the batch is
 * not to be acked). */
int sched_reps_flush(sched_reps *r, const bus_worker *w);

#endif
