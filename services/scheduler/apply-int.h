/*
 * apply-int.h - what the parts of the scheduler's apply share (apply.c,
 * apply_node.c, apply_job.c, apply_pod.c): the handlers the dispatch
 * table names, and the helpers more than one of them uses.
 */
#ifndef LARK_SCHED_APPLY_INT_H
#define LARK_SCHED_APPLY_INT_H

#include "bus.h"

#include "scheduler.h"

/* What set_desired (apply_job.c) and address (apply_pod.c) do to a
 * Job's pods. */
typedef struct pods_ctx {
  job_rec *j;
  const char *desired; /* set desired state to this */
  uint64_t seq;
  int reset; /* resume: back to unbound, next attempt */
} pods_ctx;

/* 1 when phase is one a pod ends in (Succeeded, Failed, Stopped). */
int sched_terminal(const char *phase);
/* Whether the Job still has a pod to place (apply.c). */
int sched_job_waits(bus_txn *t, const char *job, int *waits);
/* o packed again into sb. */
int sched_repack(const msgpack_object *o, msgpack_sbuffer *sb);

/* apply_node.c: book (sign > 0) or give back a pod's capacity on its
 * node; the node events. */
int sched_node_book(bus_txn *t, const pod_rec *p, int sign);
int sched_apply_node_registered(bus_txn *t, const bus_event *ev,
                                const char *name);
int sched_apply_node_state(bus_txn *t, const bus_event *ev, const char *name,
                           const char *verb);

/* apply_job.c: the Job events. */
int sched_apply_job_submitted(bus_txn *t, const bus_event *ev,
                              const char *name);
int sched_apply_job_verb(bus_txn *t, const bus_event *ev, const char *name,
                         const char *verb);
int sched_apply_job_placed(bus_txn *t, const bus_event *ev);
int sched_apply_job_unplaced(bus_txn *t, const bus_event *ev);

/* apply_pod.c: a pod failed (retried when it may); the pod and domain
 * events. */
int sched_fail_pod(bus_txn *t, pod_rec *p, const char *reason, uint64_t seq);
int sched_apply_pod_phase(bus_txn *t, const bus_event *ev, const char *name);
int sched_apply_domain(bus_txn *t, const bus_event *ev, const char *verb);
int sched_apply_domain_released(bus_txn *t, const bus_event *ev);

#endif
