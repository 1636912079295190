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
 * This file holds what every part of apply shares: the dispatch table,
 * the queues decide reads, the derived phases and the phase records. The
 * events themselves are applied by kind: apply_node.c (nodes and the
 * capacity pods book on them), apply_job.c (Jobs and their placements),
 * apply_pod.c (pods and the addresses of their domains).
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

int
sched_terminal(const char *phase) {
  return !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ||
         !strcmp(phase, "Stopped");
}

/* ------------------------------------------------------------- queues */

int
sched_queue_job(bus_txn *t, const job_rec *j, int on) {
  unsigned char key[8 + SCHED_NAME_SZ];
  size_t n = strlen(j->name);
  for (int i = 0; i < 8; i++)
    key[i] = (unsigned char)(j->sub_seq >> (56 - 8 * i));
  memcpy(key + 8, j->name, n);
  return on ? bus_txn_put(t, "queue", key, 8 + n, "", 0)
            : bus_txn_del(t, "queue", key, 8 + n);
}

int
sched_pod_waiting(const pod_rec *p) {
  return !p->bound && !strcmp(p->desired, "Running") &&
         strcmp(p->phase, "Succeeded") && strcmp(p->phase, "Failed");
}

static int
find_waiting(bus_txn *t, pod_rec *p, void *ud) {
  (void)t;
  *(int *)ud |= sched_pod_waiting(p);
  return 0;
}

/*
 * Whether the Job still has a pod to place, read from its pods rather than
 * from the j.bound and j.ended counters: a pod that ended while bound
 * stays in j.bound (its binding is kept for describe) and is counted in
 * j.ended too. With pods sent back to Pending for a retry and placed one
 * job.placed at a time, the sum reached j.pods while a retried pod was
 * still unplaced, and the Job left the queue for good, Running forever.
 */
int
sched_job_waits(bus_txn *t, const char *job, int *waits) {
  *waits = 0;
  return sched_each_pod(t, job, find_waiting, waits);
}

/* Queue the pod's desired state for its node, keyed by the event's seq so
 * decide sends them in order and only once (its cursor is in _effects). */
int
sched_outgoing(bus_txn *t, pod_rec *p, uint64_t seq) {
  if (!p->node[0])
    return 0;
  unsigned char key[8 + SCHED_DNAME_SZ];
  size_t n = strlen(p->name);
  if (p->out_key[0] || p->out_key[7]) {
    unsigned char old[8 + SCHED_DNAME_SZ];
    memcpy(old, p->out_key, 8);
    memcpy(old + 8, p->name, n);
    bus_txn_del(t, "outgoing", old, 8 + n);
  }
  for (int i = 0; i < 8; i++)
    key[i] = (unsigned char)(seq >> (56 - 8 * i));
  memcpy(key + 8, p->name, n);
  memcpy(p->out_key, key, 8);
  return bus_txn_put(t, "outgoing", key, 8 + n, "", 0);
}

/* --------------------------------------------------- derived phases */

#define MAX_TASK_PODS 1024

typedef struct derive_ctx {
  task_rec tasks[SCHED_MAX_TASKS];
  int ntasks;
  sched_pod *pods; /* every pod of the Job */
  size_t npods;
} derive_ctx;

static int
take_task(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  derive_ctx *d = ud;
  if (vl != sizeof(task_rec) || d->ntasks == SCHED_MAX_TASKS)
    return 0;
  memcpy(&d->tasks[d->ntasks++], v, sizeof(task_rec));
  return 0;
}

static sched_phase
phase_of(const char *s) {
  sched_phase p = SCHED_PH_PENDING;
  sched_phase_parse(s, &p);
  return p;
}

static int
take_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)t;
  derive_ctx *d = ud;
  if (d->npods == SCHED_MAX_PODS)
    return 0;
  sched_pod *sp = &d->pods[d->npods];
  memset(sp, 0, sizeof *sp);
  sched_copy(sp->name, sizeof sp->name, p->name, strlen(p->name));
  sp->task = p->tmpl;
  sp->replica = p->replica;
  /* phase.c counts failures by attempt: the last failed one is
   * failures - 1 (a resumed Job starts counting again) */
  sp->attempt = p->failures ? p->failures - 1 : 0;
  sp->phase = phase_of(p->phase);
  sp->exit_code = p->exit_code;
  d->npods++;
  return 0;
}

/*
 * Recompute what the Job's and its Tasks' phases should be from its pods,
 * and keep the Job in `todo` while a recorded phase differs from it:
 * decide records the change as task.phase / job.phase events.
 */
int
sched_touch(bus_txn *t, const char *job) {
  job_rec j;
  int rc = sched_job_get(t, job, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  derive_ctx *d = calloc(1, sizeof *d);
  if (!d || !(d->pods = calloc(SCHED_MAX_PODS, sizeof *d->pods))) {
    free(d);
    return -ENOMEM;
  }
  char prefix[SCHED_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s-", job);
  rc = bus_txn_scan(t, "tasks", prefix, strlen(prefix), take_task, d);
  if (!rc)
    rc = sched_each_pod(t, job, take_pod, d);
  sched_phase tp[SCHED_MAX_TASKS];
  int differs = 0, n = 0;
  for (int i = 0; !rc && i < d->ntasks; i++) {
    task_rec *tr = &d->tasks[i];
    if (strcmp(tr->job, job))
      continue;
    sched_pod mine[MAX_TASK_PODS];
    size_t m = 0;
    for (size_t k = 0; k < d->npods && m < MAX_TASK_PODS; k++)
      if (d->pods[k].task == tr->index)
        mine[m++] = d->pods[k];
    sched_phase want =
        j.stopped ? SCHED_PH_STOPPED
                  : sched_task_phase(mine, m, tr->max_retries, NULL, 0);
    tp[n++] = want;
    const char *w = sched_phase_name(want);
    if (strcmp(tr->want, w)) {
      sched_copy(tr->want, sizeof tr->want, w, strlen(w));
      rc = sched_task_put(t, tr);
    }
    differs |= strcmp(tr->want, tr->phase) != 0;
  }
  if (!rc && !j.deleted) {
    const char *w = j.stopped
                        ? "Stopped"
                        : sched_phase_name(sched_job_phase(tp, (size_t)n));
    sched_copy(j.want, sizeof j.want, w, strlen(w));
    differs |= strcmp(j.want, j.phase) != 0;
    rc = sched_job_put(t, &j);
  }
  if (!rc)
    rc = differs ? bus_txn_put(t, "todo", job, strlen(job), "", 0)
                 : bus_txn_del(t, "todo", job, strlen(job));
  free(d->pods);
  free(d);
  return rc;
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

int
sched_repack(const msgpack_object *o, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  return msgpack_pack_object(&pk, *o);
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

/* The event's type: ev->t as decoded, or looked up by name for an event
 * built by hand (bus_view_apply takes those too). */
static bus_type
type_of(const bus_event *ev) {
  bus_type t = ev->t != BUS_T_UNKNOWN ? ev->t : bus_type_of(ev->type);
  return bus_type_name(t) ? t : BUS_T_UNKNOWN;
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
