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

/* -------------------------------------------------------------- phases */

/* job.phase (its reason too, when it gives one) or task.phase. */
static int
apply_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  const bus_ev_job_phase *jp = data;
  const bus_ev_task_phase *tp = data;
  const char *name = sched_subject_id(ev);
  int task = ev->t == BUS_T_TASK_PHASE, rc;
  (void)ud;
  if (!task) {
    job_rec j;
    if ((rc = sched_job_get(t, name, &j)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    bus_str_copy(jp->phase, j.phase, sizeof j.phase);
    if (jp->has_reason)
      bus_str_copy(jp->reason, j.reason, sizeof j.reason);
    rc = sched_job_put(t, &j);
  } else {
    task_rec r;
    if ((rc = sched_task_get(t, name, &r)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    bus_str_copy(tp->phase, r.phase, sizeof r.phase);
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

/* The types the view applies, indexed by the event's type (BUS_T_*). */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_DOMAIN_ALLOCATED] = sched_apply_domain_allocated,
        [BUS_T_DOMAIN_DELETED] = sched_apply_domain_released,
        [BUS_T_DOMAIN_EXHAUSTED] = sched_apply_domain_exhausted,
        [BUS_T_DOMAIN_RELEASED] = sched_apply_domain_released,
        [BUS_T_JOB_DELETED] = sched_apply_job_verb,
        [BUS_T_JOB_PHASE] = apply_phase,
        [BUS_T_JOB_PLACED] = sched_apply_job_placed,
        [BUS_T_JOB_RESUMED] = sched_apply_job_verb,
        [BUS_T_JOB_STOPPED] = sched_apply_job_verb,
        [BUS_T_JOB_SUBMITTED] = sched_apply_job_submitted,
        [BUS_T_JOB_UNPLACED] = sched_apply_job_unplaced,
        [BUS_T_NODE_CORDONED] = sched_apply_node_state,
        [BUS_T_NODE_DELETED] = sched_apply_node_state,
        [BUS_T_NODE_HEARTBEAT] = sched_apply_node_state,
        [BUS_T_NODE_NOTREADY] = sched_apply_node_state,
        [BUS_T_NODE_READY] = sched_apply_node_state,
        [BUS_T_NODE_REGISTERED] = sched_apply_node_registered,
        [BUS_T_NODE_UNCORDONED] = sched_apply_node_state,
        [BUS_T_POD_PHASE] = sched_apply_pod_phase,
        [BUS_T_TASK_PHASE] = apply_phase,
    }};

int
sched_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}
