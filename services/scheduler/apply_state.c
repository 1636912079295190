/*
 * apply_state.c - what every part of the scheduler's apply does to the
 * view's shared state: the queues decide reads (`queue`, `outgoing`), the
 * derived phases of Tasks and Jobs (`todo`), the capacity a bound pod
 * books on its node and gives back once, and a failed pod retried when
 * its Task may. The handlers (apply_node.c, apply_job.c, apply_pod.c and
 * the table in apply.c) call these; these call none of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "expand.h"
#include "phase.h"
#include "scheduler.h"

int
sched_terminal(const char *phase) {
  return !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ||
         !strcmp(phase, "Stopped");
}

/* ------------------------------------------------------------- queues */

int
sched_queue_job(bus_txn *t, const job_rec *j, int on) {
  unsigned char key[8 + SCHED_NAME_SZ];
  size_t n = sched_seq_key(key, j->sub_seq, j->name);
  return on ? bus_txn_put(t, "queue", key, n, "", 0)
            : bus_txn_del(t, "queue", key, n);
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
  size_t n;
  if (p->out_key[0] || p->out_key[7]) {
    n = sched_seq_key(key, sched_seq_of(p->out_key), p->name);
    bus_txn_del(t, "outgoing", key, n);
  }
  n = sched_seq_key(key, seq, p->name);
  memcpy(p->out_key, key, 8);
  return bus_txn_put(t, "outgoing", key, n, "", 0);
}

/* The entry is not the pod's out_key: its next attempt's desired state,
 * queued later, must not take it back. */
int
sched_outgoing_stop(bus_txn *t, pod_rec *p, uint64_t seq) {
  unsigned char key[8 + SCHED_DNAME_SZ], val[4 + SCHED_NAME_SZ];
  size_t nl = strlen(p->node);
  int rc = sched_outgoing(t, p, seq); /* its pending one goes */
  if (rc || !nl)
    return rc;
  size_t n = sched_seq_key(key, seq, p->name);
  for (int i = 0; i < 4; i++)
    val[i] = (unsigned char)(p->attempt >> (24 - 8 * i));
  memcpy(val + 4, p->node, nl);
  memset(p->out_key, 0, sizeof p->out_key);
  return bus_txn_put(t, "outgoing", key, n, val, 4 + nl);
}

/* --------------------------------------------------- derived phases */

#define MAX_TASK_PODS 1024

typedef struct derive_ctx {
  task_rec tasks[SCHED_MAX_TASKS];
  int ntasks;
  sched_pod *pods; /* every pod of the Job, room for cap */
  size_t npods, cap;
} derive_ctx;

static int
take_task(void *rec, void *ud) {
  derive_ctx *d = ud;
  if (d->ntasks < SCHED_MAX_TASKS)
    d->tasks[d->ntasks++] = *(task_rec *)rec;
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
  if (d->npods == d->cap) { /* as many as the Job has: 4,096 were zeroed
                             * for every pod event */
    size_t cap = d->cap ? d->cap * 2 : 64;
    sched_pod *more = realloc(d->pods, cap * sizeof *more);
    if (!more)
      return -ENOMEM;
    d->pods = more;
    d->cap = cap;
  }
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

/* field (a want) set to phase, zeroed past it: 1 when its bytes changed.
 * Its bytes then depend on the pods alone, not on what it held before
 * (the digest reads bytes, and batches cut the stream differently live
 * and in replay). */
static int
set_want(char field[SCHED_PHASE_SZ], const char *phase) {
  char v[SCHED_PHASE_SZ] = {0};
  sched_copy(v, sizeof v, phase, strlen(phase));
  if (!memcmp(field, v, sizeof v))
    return 0;
  memcpy(field, v, sizeof v);
  return 1;
}

/*
 * Recompute what the Job's and its Tasks' phases should be from its pods,
 * and keep the Job in `todo` while a recorded phase differs from it:
 * decide records the change as task.phase / job.phase events. What it
 * writes is a function of the view as it is now, whatever it was before:
 * a deleted Job's want too (Stopped), though decide records no phase for
 * it.
 */
static int
derive(bus_txn *t, const char *job) {
  job_rec j;
  int rc = sched_job_get(t, job, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  derive_ctx *d = malloc(sizeof *d);
  if (!d)
    return -ENOMEM;
  d->ntasks = 0;
  d->pods = NULL;
  d->npods = d->cap = 0;
  char prefix[SCHED_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s-", job);
  rc = sched_each_rec(t, "tasks", prefix, sizeof(task_rec), 0, take_task, d);
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
    if (set_want(tr->want, sched_phase_name(want)))
      rc = sched_task_put(t, tr);
    differs |= strcmp(tr->want, tr->phase) != 0;
  }
  if (!rc) {
    const char *w = j.stopped
                        ? "Stopped"
                        : sched_phase_name(sched_job_phase(tp, (size_t)n));
    if (set_want(j.want, w))
      rc = sched_job_put(t, &j);
    differs |= !j.deleted && strcmp(j.want, j.phase) != 0;
  }
  if (!rc)
    rc = differs ? bus_txn_put(t, "todo", job, strlen(job), "", 0)
                 : bus_txn_del(t, "todo", job, strlen(job));
  free(d->pods);
  free(d);
  return rc;
}

int
sched_touch(bus_txn *t, const char *job) {
  return bus_txn_put(t, SCHED_TOUCHED, job, strlen(job), "", 0);
}

int
sched_touched_derive(bus_txn *t) {
  sched_keys w;
  int rc = sched_keys_of(t, SCHED_TOUCHED, NULL, &w);
  for (size_t i = 0; !rc && i < w.n; i++) {
    rc = derive(t, w.v[i]);
    if (!rc)
      rc = bus_txn_del(t, SCHED_TOUCHED, w.v[i], strlen(w.v[i]));
  }
  free(w.v);
  return rc;
}

const char *
sched_subject_id(const bus_event *ev) {
  const char *p = ev->subject ? strchr(ev->subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

int
sched_job_named(bus_txn *t, bus_str job, job_rec *j) {
  char name[SCHED_NAME_SZ];
  int rc = sched_job_get(t, bus_str_copy(job, name, sizeof name), j);
  return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
}

int
sched_put_object(bus_txn *t, const char *table, const char *key,
                 const msgpack_object *o) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  int rc = msgpack_pack_object(&b.pk, *o)
               ? bus_error(-ENOMEM, "out of memory keeping %s/%s", table, key)
               : bus_txn_put(t, table, key, strlen(key), b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
  return rc;
}

/* ----------------------------------------------------------- capacity */

int
sched_node_book(bus_txn *t, const pod_rec *p, int sign) {
  node_rec n;
  int rc = sched_nodepod_mark(t, p, sign > 0);
  if (!rc)
    rc = sched_noderec_get(t, p->node, &n);
  if (rc == BUS_ENOT_FOUND)
    return 0; /* the node is gone: nothing to give back */
  if (rc)
    return rc;
  if (sign > 0) {
    n.cpu_used_m += p->cpu_m;
    n.memory_used_mib += p->memory_mib;
    n.gpu_taken |= p->gpus;
    n.pods++;
  } else {
    n.cpu_used_m -= p->cpu_m < n.cpu_used_m ? p->cpu_m : n.cpu_used_m;
    n.memory_used_mib -=
        p->memory_mib < n.memory_used_mib ? p->memory_mib : n.memory_used_mib;
    n.gpu_taken &= ~p->gpus;
    n.pods -= n.pods ? 1 : 0;
  }
  for (uint32_t i = 0; i < p->ndev; i++) {
    uint32_t k = 0;
    while (k < n.ndev && strcmp(n.dev_name[k], p->dev_name[i]))
      k++;
    if (k == n.ndev) {
      if (sign < 0 || n.ndev == SCHED_POD_DEVICES * 2)
        continue;
      sched_copy(n.dev_name[k], SCHED_NAME_SZ, p->dev_name[i],
                 strlen(p->dev_name[i]));
      n.ndev++;
    }
    if (sign > 0)
      n.dev_used[k] += p->dev_count[i];
    else
      n.dev_used[k] -=
          p->dev_count[i] < n.dev_used[k] ? p->dev_count[i] : n.dev_used[k];
  }
  return sched_noderec_put(t, &n);
}

/* Give a bound pod's capacity back, once, and the named devices it held. */
int
sched_pod_release(bus_txn *t, pod_rec *p) {
  if (!p->bound || p->released)
    return 0;
  p->released = 1;
  int rc = sched_node_book(t, p, -1);
  return rc ? rc : sched_drop_holds(t, p);
}

/* ----------------------------------------------------------- failures */

int
sched_fail_pod(bus_txn *t, pod_rec *p, const char *reason, uint64_t seq,
               int stop) {
  job_rec j;
  task_rec tr;
  int rc = sched_job_get(t, p->job, &j);
  if (!rc)
    rc = sched_task_get(t, p->task, &tr);
  if (rc)
    return rc;
  if ((rc = sched_pod_release(t, p)))
    return rc;
  sched_copy(p->reason, sizeof p->reason, reason, strlen(reason));
  p->failures++;
  if (p->failures <= tr.max_retries && !j.stopped) {
    /* retry: same name, next attempt, placed again */
    if (stop && (rc = sched_outgoing_stop(t, p, seq)))
      return rc;
    p->attempt++;
    p->bound = p->released = 0;
    p->node[0] = 0;
    p->gpus = 0;
    strcpy(p->phase, "Pending");
    strcpy(p->desired, "Running");
    j.bound -= j.bound ? 1 : 0;
    if ((rc = sched_queue_job(t, &j, 1)) || (rc = sched_job_put(t, &j)))
      return rc;
  } else {
    strcpy(p->phase, "Failed");
    if (stop) {
      strcpy(p->desired, "Stopped");
      if ((rc = sched_outgoing(t, p, seq)))
        return rc;
    }
    j.ended++;
    if ((rc = sched_job_put(t, &j)))
      return rc;
  }
  if ((rc = sched_pod_put(t, p)))
    return rc;
  return sched_touch(t, p->job);
}
