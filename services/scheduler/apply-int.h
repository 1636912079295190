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
/* The record of the Job an event names into *j; BUS_EINVAL when the view
 * has no such Job (the event is refused, or passed over). */
int sched_job_named(bus_txn *t, bus_str job, job_rec *j);
/* o packed into table under key, as it came (a resource kept as it was
 * submitted: commands compare it byte for byte). */
int sched_put_object(bus_txn *t, const char *table, const char *key,
                     const msgpack_object *o);

/* The <id> of the event's subject lark.ev.<kind>.<id>: the name of the
 * Job, Task, Pod or Node it is about. */
const char *sched_subject_id(const bus_event *ev);

/* The handlers of apply's table (bus_apply_fn: data is the event's typed
 * data), by the kind of what they follow. */

/* apply_node.c: book (sign > 0) or give back a pod's capacity on its
 * node; the node events (node_state: ready, notready, cordoned,
 * uncordoned, deleted). */
int sched_node_book(bus_txn *t, const pod_rec *p, int sign);
int sched_apply_node_registered(bus_txn *t, const bus_event *ev,
                                const void *data, void *ud);
int sched_apply_node_state(bus_txn *t, const bus_event *ev, const void *data,
                           void *ud);
int sched_apply_node_deleted(bus_txn *t, const bus_event *ev, const void *data,
                             void *ud);

/* apply_job.c: the Job events. */
int sched_apply_job_submitted(bus_txn *t, const bus_event *ev, const void *data,
                              void *ud);
int sched_apply_job_verb(bus_txn *t, const bus_event *ev, const void *data,
                         void *ud);
int sched_apply_job_placed(bus_txn *t, const bus_event *ev, const void *data,
                           void *ud);
int sched_apply_job_unplaced(bus_txn *t, const bus_event *ev, const void *data,
                             void *ud);

/* apply_pod.c: a pod failed (retried when it may; stop: its node, which
 * may run it on, is told to stop that attempt); the pod and domain
 * events: domain.allocated gives the Job's pods (of that generation) their
 * addresses, domain.exhausted makes the Job wait for some, domain.released
 * and domain.deleted wake the Jobs that wait. */
int sched_fail_pod(bus_txn *t, pod_rec *p, const char *reason, uint64_t seq,
                   int stop);
int sched_apply_pod_phase(bus_txn *t, const bus_event *ev, const void *data,
                          void *ud);
int sched_apply_domain_allocated(bus_txn *t, const bus_event *ev,
                                 const void *data, void *ud);
int sched_apply_domain_exhausted(bus_txn *t, const bus_event *ev,
                                 const void *data, void *ud);
int sched_apply_domain_released(bus_txn *t, const bus_event *ev,
                                const void *data, void *ud);

#endif
