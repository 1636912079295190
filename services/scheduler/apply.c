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
  const char *p = strchr(subject + 8, '.');
  return p ? p + 1 : "";
}

/* -------------------------------------------------------------- phases */

static int
apply_phase(bus_txn *t, const bus_event *ev, const char *kind,
            const char *name) {
  char phase[SCHED_PHASE_SZ] = "";
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  int rc;
  if (!strcmp(kind, "job")) {
    job_rec j;
    if ((rc = sched_job_get(t, name, &j)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    sched_copy(j.phase, sizeof j.phase, phase, strlen(phase));
    bus_obj_str(&ev->data, "reason", j.reason, sizeof j.reason);
    rc = sched_job_put(t, &j);
  } else {
    task_rec r;
    if ((rc = sched_task_get(t, name, &r)))
      return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
    sched_copy(r.phase, sizeof r.phase, phase, strlen(phase));
    rc = sched_task_put(t, &r);
  }
  bus_txn_unmark(t, ev->id, strlen(ev->id)); /* decide's note: landed */
  if (rc)
    return rc;
  if (!strcmp(kind, "job"))
    return sched_touch(t, name);
  task_rec r;
  return sched_task_get(t, name, &r) ? 0 : sched_touch(t, r.job);
}

/* ------------------------------------------------------------ dispatch */

/* The verb of a type "<kind>.<verb>". */
static const char *
verb_of(const bus_event *ev) {
  return strchr(ev->type, '.') + 1;
}

static int
on_node_state(bus_txn *t, const bus_event *ev, const char *id) {
  return sched_apply_node_state(t, ev, id, verb_of(ev));
}

static int
on_job_verb(bus_txn *t, const bus_event *ev, const char *id) {
  return sched_apply_job_verb(t, ev, id, verb_of(ev));
}

static int
on_job_placed(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return sched_apply_job_placed(t, ev);
}

static int
on_job_unplaced(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return sched_apply_job_unplaced(t, ev);
}

static int
on_job_phase(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_phase(t, ev, "job", id);
}

static int
on_task_phase(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_phase(t, ev, "task", id);
}

static int
on_domain(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return sched_apply_domain(t, ev, verb_of(ev));
}

static int
on_domain_released(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return sched_apply_domain_released(t, ev);
}

/* The event's type (libbus sets it, for an event built by hand too). */
static bus_type
type_of(const bus_event *ev) {
  return bus_type_name(ev->t) ? ev->t : BUS_T_UNKNOWN;
}

/* The types the view applies, indexed by the event's type (BUS_T_*); id
 * is the <id> of the event's subject lark.ev.<kind>.<id>. */
typedef int (*apply_fn)(bus_txn *t, const bus_event *ev, const char *id);

static const apply_fn apply_table[BUS_T__COUNT] = {
    [BUS_T_DOMAIN_ALLOCATED] = on_domain,
    [BUS_T_DOMAIN_DELETED] = on_domain_released,
    [BUS_T_DOMAIN_EXHAUSTED] = on_domain,
    [BUS_T_DOMAIN_RELEASED] = on_domain_released,
    [BUS_T_JOB_DELETED] = on_job_verb,
    [BUS_T_JOB_PHASE] = on_job_phase,
    [BUS_T_JOB_PLACED] = on_job_placed,
    [BUS_T_JOB_RESUMED] = on_job_verb,
    [BUS_T_JOB_STOPPED] = on_job_verb,
    [BUS_T_JOB_SUBMITTED] = sched_apply_job_submitted,
    [BUS_T_JOB_UNPLACED] = on_job_unplaced,
    [BUS_T_NODE_CORDONED] = on_node_state,
    [BUS_T_NODE_HEARTBEAT] = on_node_state,
    [BUS_T_NODE_NOTREADY] = on_node_state,
    [BUS_T_NODE_READY] = on_node_state,
    [BUS_T_NODE_REGISTERED] = sched_apply_node_registered,
    [BUS_T_NODE_UNCORDONED] = on_node_state,
    [BUS_T_POD_PHASE] = sched_apply_pod_phase,
    [BUS_T_TASK_PHASE] = on_task_phase,
};

int
sched_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  char kind[32];
  if (bus_event_kind(ev->type, kind, sizeof kind))
    return 0;
  apply_fn fn = apply_table[type_of(ev)];
  return fn ? fn(t, ev, subject_id(ev->subject)) : 0;
}
