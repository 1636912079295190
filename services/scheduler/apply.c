/*
 * apply.c - the scheduler's view follows the events: Nodes register and
 * change state, Jobs are submitted (and expanded into Tasks and Pods),
 * placed, stopped, resumed, deleted; Pods report; phases are recorded.
 *
 * apply is pure: no clock, no broker; the same events give the same
 * records, live and in replay. Capacity is booked on a node when a
 * job.placed binds a pod there and given back exactly once, when the pod
 * ends, is stopped, is unplaced or its node is lost (pod.released).
 * Everything decide must act on is left in a table: `queue` (pods to
 * place), `outgoing` (desired states to send), `todo` (phases to record).
 *
 * This file holds the dispatch table and the phase records. The events
 * themselves are applied by kind: apply_node.c (nodes), apply_job.c (Jobs
 * and their placements), apply_pod.c (pods and the addresses of their
 * domains); what all of those do to the view's shared state (the queues
 * decide reads, derived phases, capacity booked and given back, a failed
 * pod retried) is apply_state.c, which calls none of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "expand.h"
#include "phase.h"
#include "scheduler.h"

/* The <id> of lark.ev.<kind>.<id>. */
static const char *
subject_id(const char *subject) {
  const char *p = subject ? strchr(subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

/* -------------------------------------------------------------- phases */

/* A Job's phase (reason: its job.phase's, when it gives one) or, task
 * set, a Task's. */
static int
apply_phase(bus_txn *t, const bus_event *ev, int task, bus_str phase,
            const bus_str *reason) {
  const char *name = subject_id(ev->subject);
  int rc;
  if (!task) {
    job_rec j;
    if ((rc = sched_job_get(t, name, &j)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    bus_str_copy(phase, j.phase, sizeof j.phase);
    if (reason)
      bus_str_copy(*reason, j.reason, sizeof j.reason);
    rc = sched_job_put(t, &j);
  } else {
    task_rec r;
    if ((rc = sched_task_get(t, name, &r)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    bus_str_copy(phase, r.phase, sizeof r.phase);
    rc = sched_task_put(t, &r);
  }
  bus_txn_unmark(t, ev->id, strlen(ev->id)); /* decide's note: landed */
  if (rc)
    return rc;
  if (!task)
    return sched_touch(t, name);
  task_rec r;
  return sched_task_get(t, name, &r) ? 0 : sched_touch(t, r.job);
}

/* ------------------------------------------------------------ dispatch */

static int
on_job_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  const bus_ev_job_phase *d = data;
  (void)ud;
  return apply_phase(t, ev, 0, d->phase, d->has_reason ? &d->reason : NULL);
}

static int
on_task_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  const bus_ev_task_phase *d = data;
  (void)ud;
  return apply_phase(t, ev, 1, d->phase, NULL);
}

static int
on_node_state(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  return sched_apply_node_state(t, ev, subject_id(ev->subject));
}

static int
on_job_verb(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  return sched_apply_job_verb(t, ev, subject_id(ev->subject));
}

static int
on_job_submitted(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  return sched_apply_job_submitted(t, ev, subject_id(ev->subject), data);
}

static int
on_node_registered(bus_txn *t, const bus_event *ev, const void *data,
                   void *ud) {
  (void)ud;
  return sched_apply_node_registered(t, ev, subject_id(ev->subject), data);
}

static int
on_pod_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  return sched_apply_pod_phase(t, ev, subject_id(ev->subject), data);
}

static int
on_job_placed(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  return sched_apply_job_placed(t, ev, data);
}

static int
on_job_unplaced(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  return sched_apply_job_unplaced(t, ev, data);
}

static int
on_domain_allocated(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud) {
  const bus_ev_domain_allocated *d = data;
  (void)ud;
  return sched_apply_domain(t, ev, d->job, d->has_generation, d->generation);
}

static int
on_domain_exhausted(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud) {
  (void)ev, (void)ud;
  return sched_apply_domain_exhausted(t, data);
}

static int
on_domain_released(bus_txn *t, const bus_event *ev, const void *data,
                   void *ud) {
  (void)ud;
  /* domain.released and domain.deleted both lead with the domain */
  return sched_apply_domain_released(
      t, ev->t == BUS_T_DOMAIN_DELETED
             ? ((const bus_ev_domain_deleted *)data)->domain
             : ((const bus_ev_domain_released *)data)->domain);
}

/* The types the view applies, indexed by the event's type (BUS_T_*). */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_DOMAIN_ALLOCATED] = on_domain_allocated,
        [BUS_T_DOMAIN_DELETED] = on_domain_released,
        [BUS_T_DOMAIN_EXHAUSTED] = on_domain_exhausted,
        [BUS_T_DOMAIN_RELEASED] = on_domain_released,
        [BUS_T_JOB_DELETED] = on_job_verb,
        [BUS_T_JOB_PHASE] = on_job_phase,
        [BUS_T_JOB_PLACED] = on_job_placed,
        [BUS_T_JOB_RESUMED] = on_job_verb,
        [BUS_T_JOB_STOPPED] = on_job_verb,
        [BUS_T_JOB_SUBMITTED] = on_job_submitted,
        [BUS_T_JOB_UNPLACED] = on_job_unplaced,
        [BUS_T_NODE_CORDONED] = on_node_state,
        [BUS_T_NODE_HEARTBEAT] = on_node_state,
        [BUS_T_NODE_NOTREADY] = on_node_state,
        [BUS_T_NODE_READY] = on_node_state,
        [BUS_T_NODE_REGISTERED] = on_node_registered,
        [BUS_T_NODE_UNCORDONED] = on_node_state,
        [BUS_T_POD_PHASE] = on_pod_phase,
        [BUS_T_TASK_PHASE] = on_task_phase,
    }};

int
sched_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}
