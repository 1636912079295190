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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "phase.h"
#include "scheduler.h"
#include "typetab.h"

/* The <id> of lark.ev.<kind>.<id>. */
static const char *
subject_id(const char *subject) {
  const char *p = strchr(subject + 8, '.');
  return p ? p + 1 : "";
}

static int
terminal(const char *phase) {
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
static int
job_waits(bus_txn *t, const char *job, int *waits) {
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

/* ----------------------------------------------------------- capacity */

static int
node_book(bus_txn *t, const pod_rec *p, int sign) {
  node_rec n;
  int rc = sched_noderec_get(t, p->node, &n);
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

/* Give a bound pod's capacity back, once. */
int
sched_pod_release(bus_txn *t, pod_rec *p) {
  if (!p->bound || p->released)
    return 0;
  p->released = 1;
  return node_book(t, p, -1);
}

/* ---------------------------------------------------------------- nodes */

static int
repack(const msgpack_object *o, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  return msgpack_pack_object(&pk, *o);
}

static int
apply_node_registered(bus_txn *t, const bus_event *ev, const char *name) {
  sched_node sn;
  bus_field_err err;
  int n = 0;
  int rc = sched_node_from_msgpack(&ev->data, &sn, &err, 1, &n);
  if (rc) {
    sched_node_clear(&sn);
    return BUS_EINVAL;
  }
  node_rec r;
  if ((rc = sched_noderec_get(t, name, &r)) == BUS_ENOT_FOUND) {
    memset(&r, 0, sizeof r);
    r.version = SCHED_REC_VERSION;
    sched_copy(r.name, sizeof r.name, name, strlen(name));
    rc = 0;
  }
  r.ready = 1;
  r.heartbeats = !strncmp(ev->actor, "node:", 5);
  sched_copy(r.cluster, sizeof r.cluster, sn.cluster, strlen(sn.cluster));
  sched_node_clear(&sn);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  repack(&ev->data, &sb);
  if (!rc)
    rc = bus_txn_put(t, "nodespecs", name, strlen(name), sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return rc ? rc : sched_noderec_put(t, &r);
}

static int fail_pod(bus_txn *t, pod_rec *p, const char *reason, uint64_t seq);

typedef struct lost {
  bus_txn *t;
  const char *node;
  uint64_t seq;
} lost;

/* A pod on a lost node failed (and retries elsewhere when it may). */
static int
lose_pod(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  lost *l = ud;
  pod_rec p;
  if (vl != sizeof p)
    return BUS_ECORRUPT;
  memcpy(&p, v, sizeof p);
  if (!p.bound || p.released || strcmp(p.node, l->node) ||
      strcmp(p.desired, "Running"))
    return 0;
  return fail_pod(l->t, &p, "NodeLost: the node stopped responding", l->seq);
}

static int
apply_node_state(bus_txn *t, const bus_event *ev, const char *name,
                 const char *verb) {
  node_rec r;
  int rc = sched_noderec_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL; /* a state change for a node never registered */
  if (rc)
    return rc;
  if (!strcmp(verb, "ready"))
    r.ready = 1;
  else if (!strcmp(verb, "notready"))
    r.ready = 0;
  else if (!strcmp(verb, "cordoned"))
    r.cordoned = 1;
  else if (!strcmp(verb, "uncordoned"))
    r.cordoned = 0;
  if ((rc = sched_noderec_put(t, &r)))
    return rc;
  if (strcmp(verb, "notready"))
    return 0;
  lost l = {t, name, ev->seq};
  return bus_txn_scan(t, "pods", NULL, 0, lose_pod, &l);
}

/* ----------------------------------------------------------------- jobs */

static int
drop_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)ud;
  if (p->out_key[0] || p->out_key[7]) {
    unsigned char key[8 + SCHED_DNAME_SZ];
    size_t n = strlen(p->name);
    memcpy(key, p->out_key, 8);
    memcpy(key + 8, p->name, n);
    bus_txn_del(t, "outgoing", key, 8 + n);
  }
  bus_txn_del(t, "why", p->name, strlen(p->name));
  return bus_txn_del(t, "pods", p->name, strlen(p->name));
}

static void
hold_request(pod_rec *p, const sched_template *tp) {
  p->cpu_m = tp->req.cpu_m;
  p->memory_mib = tp->req.memory_mib;
  p->gpu = tp->req.gpu;
  p->ndev = 0;
  for (int d = 0; d < tp->req.ndevices && p->ndev < SCHED_POD_DEVICES; d++) {
    sched_copy(p->dev_name[p->ndev], SCHED_NAME_SZ, tp->req.devices[d].name,
               strlen(tp->req.devices[d].name));
    p->dev_count[p->ndev++] = tp->req.devices[d].count;
  }
}

static int
put_tasks(bus_txn *t, const sched_job *job, const sched_expansion *x) {
  int rc = 0;
  for (int i = 0; i < x->ntasks && !rc; i++) {
    const sched_task_info *ti = &x->tasks[i];
    const sched_template *tp = &job->tasks[ti->tmpl];
    task_rec r;
    memset(&r, 0, sizeof r);
    r.version = SCHED_REC_VERSION;
    sched_copy(r.name, sizeof r.name, ti->name, strlen(ti->name));
    sched_copy(r.job, sizeof r.job, job->name, strlen(job->name));
    sched_copy(r.tmpl, sizeof r.tmpl, tp->name, strlen(tp->name));
    strcpy(r.phase, "Pending");
    strcpy(r.want, "Pending");
    sched_copy(r.head_task, sizeof r.head_task, x->head_task,
               strlen(x->head_task));
    r.index = ti->tmpl;
    r.replicas = tp->replicas;
    r.max_retries = tp->max_retries;
    r.rank_start = ti->rank_start;
    r.total_nodes = x->total_nodes;
    r.head = (uint8_t)ti->head;
    r.role = (uint8_t)tp->role;
    rc = sched_task_put(t, &r);
  }
  return rc;
}

static int
put_pods(bus_txn *t, const sched_job *job, const sched_expansion *x) {
  int rc = 0;
  for (size_t i = 0; i < x->npods && !rc; i++) {
    const sched_pod *sp = &x->pods[i];
    pod_rec p;
    memset(&p, 0, sizeof p);
    p.version = SCHED_REC_VERSION;
    sched_copy(p.name, sizeof p.name, sp->name, strlen(sp->name));
    sched_copy(p.job, sizeof p.job, job->name, strlen(job->name));
    const sched_task_info *ti = &x->tasks[0];
    for (int k = 0; k < x->ntasks; k++)
      if (x->tasks[k].tmpl == sp->task)
        ti = &x->tasks[k];
    sched_copy(p.task, sizeof p.task, ti->name, strlen(ti->name));
    strcpy(p.phase, "Pending");
    strcpy(p.desired, "Running");
    p.tmpl = sp->task;
    p.replica = sp->replica;
    hold_request(&p, &job->tasks[sp->task]);
    rc = sched_pod_put(t, &p);
  }
  return rc;
}

const char *
sched_owner_of(const char *kind, const char *name, void *ud) {
  sched_owner *o = ud;
  if (!strcmp(kind, "job")) {
    job_rec j;
    return sched_job_get(o->t, name, &j) == 0 && !j.deleted ? name : NULL;
  }
  if (!strcmp(kind, "task")) {
    task_rec r;
    if (sched_task_get(o->t, name, &r))
      return NULL;
    snprintf(o->owner, sizeof o->owner, "%s", r.job);
    return o->owner;
  }
  pod_rec p;
  if (sched_pod_get(o->t, name, &p))
    return NULL;
  snprintf(o->owner, sizeof o->owner, "%s", p.job);
  return o->owner;
}

/*
 * A job.submitted whose Task or Pod names another Job holds is refused
 * here too, not only by the command: two submissions can both pass the
 * command's check before either is applied (back to back, or two
 * schedulers), and the second would take over the first one's pods.
 * The first in stream order keeps the names, live and in replay.
 */
static int
names_taken(bus_txn *t, const sched_job *job) {
  sched_owner o = {.t = t};
  bus_field_err err;
  return sched_names_check(job, sched_owner_of, &o, &err) ? BUS_EINVAL : 0;
}

static int
apply_job_submitted(bus_txn *t, const bus_event *ev, const char *name) {
  sched_job job;
  sched_expansion x;
  bus_field_err err;
  int n = 0;
  memset(&x, 0, sizeof x);
  int rc = sched_job_from_msgpack(&ev->data, &job, &err, 1, &n);
  if (rc == 0 && strcmp(job.name, name))
    rc = BUS_EINVAL; /* the resource names another Job than its subject */
  if (rc == 0)
    rc = names_taken(t, &job);
  if (rc == 0)
    rc = sched_expand(&job, &x);
  if (rc) {
    sched_job_clear(&job);
    return rc == -ENOMEM ? rc : BUS_EINVAL;
  }
  bus_version ver;
  job_rec j;
  memset(&j, 0, sizeof j);
  rc = bus_txn_version(t, ev->subject, &ver);
  if (!rc)
    rc = sched_each_pod(t, name, drop_pod, NULL); /* a former generation */
  j.version = SCHED_REC_VERSION;
  sched_copy(j.name, sizeof j.name, name, strlen(name));
  sched_copy(j.domain, sizeof j.domain, job.domain, strlen(job.domain));
  sched_copy(j.sub_id, sizeof j.sub_id, ev->id, strlen(ev->id));
  strcpy(j.phase, "Pending");
  strcpy(j.want, "Pending");
  j.generation = ver.generation;
  j.sub_seq = ev->seq;
  j.sub_ts = (uint64_t)ev->ts;
  j.pods = (uint32_t)x.npods;
  j.stopped = (uint8_t)(job.stopped != 0);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  repack(&ev->data, &sb);
  if (!rc)
    rc = bus_txn_put(t, "specs", name, strlen(name), sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  if (!rc)
    rc = put_tasks(t, &job, &x);
  if (!rc)
    rc = put_pods(t, &job, &x);
  if (!rc)
    rc = sched_job_put(t, &j);
  if (!rc && !j.stopped)
    rc = sched_queue_job(t, &j, 1);
  sched_expansion_clear(&x);
  sched_job_clear(&job);
  return rc;
}

typedef struct pods_ctx {
  job_rec *j;
  const char *desired; /* set desired state to this */
  uint64_t seq;
  int reset; /* resume: back to unbound, next attempt */
} pods_ctx;

static int
set_desired(bus_txn *t, pod_rec *p, void *ud) {
  pods_ctx *c = ud;
  int was_sent = p->bound && !p->released;
  int rc = sched_pod_release(t, p);
  if (rc)
    return rc;
  if (c->reset) {
    if (p->bound)
      p->attempt++;
    p->bound = p->released = 0;
    p->node[0] = 0;
    p->gpus = 0;
    p->failures = 0;
    strcpy(p->phase, "Pending");
    strcpy(p->desired, "Running");
    p->reason[0] = 0;
    return sched_pod_put(t, p);
  }
  sched_copy(p->desired, sizeof p->desired, c->desired, strlen(c->desired));
  if (!terminal(p->phase))
    strcpy(p->phase, "Stopped");
  if (was_sent || p->bound)
    rc = sched_outgoing(t, p, c->seq);
  return rc ? rc : sched_pod_put(t, p);
}

static int
apply_job_verb(bus_txn *t, const bus_event *ev, const char *name,
               const char *verb) {
  job_rec j;
  int rc = sched_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL;
  if (rc)
    return rc;
  pods_ctx c = {&j, "Stopped", ev->seq, 0};
  if (!strcmp(verb, "stopped")) {
    j.stopped = 1;
    strcpy(j.phase, "Stopped");
    strcpy(j.want, "Stopped");
    snprintf(j.reason, sizeof j.reason, "stopped by %s", ev->actor);
  } else if (!strcmp(verb, "resumed")) {
    j.stopped = 0;
    j.bound = j.ended = 0;
    j.addressed = j.exhausted = 0; /* a new run gets its addresses anew */
    strcpy(j.phase, "Pending");
    strcpy(j.want, "Pending");
    j.reason[0] = 0;
    c.reset = 1;
  } else { /* deleted */
    j.stopped = j.deleted = 1;
    c.desired = "Deleted";
  }
  if ((rc = sched_queue_job(t, &j, c.reset)))
    return rc;
  if ((rc = sched_each_pod(t, name, set_desired, &c)))
    return rc;
  if ((rc = sched_job_put(t, &j)))
    return rc;
  return sched_touch(t, name);
}

/* ------------------------------------------------------------ placement */

static int
store_why(bus_txn *t, const char *pod, const msgpack_object *why) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  repack(why, &sb);
  int rc = bus_txn_put(t, "why", pod, strlen(pod), sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static uint64_t
gpu_mask(const msgpack_object *gpus) {
  uint64_t m = 0;
  for (uint32_t i = 0;
       gpus && gpus->type == MSGPACK_OBJECT_ARRAY && i < gpus->via.array.size;
       i++)
    if (gpus->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
        gpus->via.array.ptr[i].via.u64 < 64)
      m |= 1ull << gpus->via.array.ptr[i].via.u64;
  return m;
}

/* One binding of a job.placed. A binding for a pod that is not waiting
 * with that attempt is passed over (it cannot book twice). */
static int
bind_one(bus_txn *t, job_rec *j, const msgpack_object *b,
         const msgpack_object *why, uint64_t seq) {
  char pod[SCHED_DNAME_SZ], node[SCHED_NAME_SZ], rt[32] = "raw";
  pod_rec p;
  if (!bus_obj_str(b, "pod", pod, sizeof pod) ||
      !bus_obj_str(b, "node", node, sizeof node))
    return 0;
  bus_obj_str(b, "runtime", rt, sizeof rt);
  int rc = sched_pod_get(t, pod, &p);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc)
    return rc;
  if (strcmp(p.job, j->name) || p.bound ||
      (uint32_t)bus_obj_int(b, "attempt", 0) != p.attempt)
    return 0;
  sched_copy(p.node, sizeof p.node, node, strlen(node));
  p.gpus = gpu_mask(bus_obj_get(b, "gpus"));
  p.runtime = (uint8_t)sched_runtime_bit(rt);
  p.bound = 1;
  p.released = 0;
  if ((rc = node_book(t, &p, +1)))
    return rc;
  j->bound++;
  if (why && (rc = store_why(t, pod, why)))
    return rc;
  if (!j->domain[0] || j->addressed)
    rc = sched_outgoing(t, &p, seq);
  return rc ? rc : sched_pod_put(t, &p);
}

static int
apply_job_placed(bus_txn *t, const bus_event *ev) {
  char name[SCHED_NAME_SZ];
  job_rec j;
  if (!bus_obj_str(&ev->data, "job", name, sizeof name))
    return BUS_EINVAL;
  int rc = sched_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL;
  if (rc)
    return rc;
  if (j.stopped ||
      j.generation !=
          (uint64_t)bus_obj_int(&ev->data, "generation", (int64_t)j.generation))
    return 0; /* placed for a Job that has moved on: books nothing */
  const msgpack_object *bs = bus_obj_get(&ev->data, "bindings");
  const msgpack_object *why = bus_obj_get(&ev->data, "why");
  for (uint32_t i = 0;
       !rc && bs && bs->type == MSGPACK_OBJECT_ARRAY && i < bs->via.array.size;
       i++)
    rc = bind_one(t, &j, &bs->via.array.ptr[i], why, ev->seq);
  j.reason[0] = 0;
  int waits = 0;
  if (!rc)
    rc = job_waits(t, name, &waits);
  if (!rc && !waits)
    rc = sched_queue_job(t, &j, 0);
  return rc ? rc : sched_job_put(t, &j);
}

static int
unbind(bus_txn *t, pod_rec *p, void *ud) {
  pods_ctx *c = ud;
  if (!p->bound || terminal(p->phase))
    return 0;
  int sent = !c->j->domain[0] || c->j->addressed;
  int rc = sched_pod_release(t, p);
  if (!rc && sent) { /* tell the node to stop what it may have started */
    strcpy(p->desired, "Stopped");
    rc = sched_outgoing(t, p, c->seq);
  }
  p->bound = p->released = 0;
  p->node[0] = 0;
  p->gpus = 0;
  p->attempt += sent ? 1 : 0;
  strcpy(p->desired, "Running");
  return rc ? rc : sched_pod_put(t, p);
}

static int
apply_job_unplaced(bus_txn *t, const bus_event *ev) {
  char name[SCHED_NAME_SZ], reason[SCHED_REASON_SZ] = "";
  job_rec j;
  if (!bus_obj_str(&ev->data, "job", name, sizeof name))
    return BUS_EINVAL;
  int rc = sched_job_get(t, name, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
  bus_obj_str(&ev->data, "reason", reason, sizeof reason);
  pods_ctx c = {&j, "Stopped", ev->seq, 0};
  if ((rc = sched_each_pod(t, name, unbind, &c)))
    return rc;
  j.bound = 0;
  j.addressed = 0;
  sched_copy(j.reason, sizeof j.reason, reason, strlen(reason));
  if (!j.stopped && (rc = sched_queue_job(t, &j, 1)))
    return rc;
  return sched_job_put(t, &j);
}

/* ------------------------------------------------------------------ pods */

static int
fail_pod(bus_txn *t, pod_rec *p, const char *reason, uint64_t seq) {
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
    if (p->node[0] && strcmp(p->phase, "Failed")) {
      strcpy(p->desired, "Stopped");
      sched_outgoing(t, p, seq);
    }
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
    j.ended++;
    if ((rc = sched_job_put(t, &j)))
      return rc;
  }
  if ((rc = sched_pod_put(t, p)))
    return rc;
  return sched_touch(t, p->job);
}

static int
apply_pod_phase(bus_txn *t, const bus_event *ev, const char *name) {
  char phase[SCHED_PHASE_SZ] = "", node[SCHED_NAME_SZ] = "";
  char reason[SCHED_REASON_SZ] = "";
  pod_rec p;
  int rc = sched_pod_get(t, name, &p);
  if (rc)
    return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  bus_obj_str(&ev->data, "node", node, sizeof node);
  bus_obj_str(&ev->data, "reason", reason, sizeof reason);
  if ((uint32_t)bus_obj_int(&ev->data, "attempt", 0) != p.attempt ||
      strcmp(node, p.node) || !p.bound || p.released)
    return 0; /* about an earlier attempt, or a pod no longer there */
  bus_obj_str(&ev->data, "localIP", p.local_ip, sizeof p.local_ip);
  p.exit_code = (int32_t)bus_obj_int(&ev->data, "exitCode", 0);
  p.signal = (uint32_t)bus_obj_int(&ev->data, "signal", 0);
  if (!strcmp(phase, "Failed"))
    return fail_pod(t, &p, reason[0] ? reason : "the pod failed", ev->seq);
  sched_copy(p.phase, sizeof p.phase, phase, strlen(phase));
  sched_copy(p.reason, sizeof p.reason, reason, strlen(reason));
  if (terminal(phase)) {
    job_rec j;
    if ((rc = sched_pod_release(t, &p)) || (rc = sched_job_get(t, p.job, &j)))
      return rc;
    j.ended++;
    if ((rc = sched_job_put(t, &j)))
      return rc;
  }
  if ((rc = sched_pod_put(t, &p)))
    return rc;
  return sched_touch(t, p.job);
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

/* ------------------------------------------------------------- domains */

static int
address(bus_txn *t, pod_rec *p, void *ud) {
  pods_ctx *c = ud;
  if (!p->bound || p->released)
    return 0;
  int rc = sched_outgoing(t, p, c->seq);
  return rc ? rc : sched_pod_put(t, p);
}

static int
apply_domain(bus_txn *t, const bus_event *ev, const char *verb) {
  char name[SCHED_NAME_SZ];
  job_rec j;
  if (!bus_obj_str(&ev->data, "job", name, sizeof name))
    return 0;
  int rc = sched_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc)
    return rc;
  if (!strcmp(verb, "exhausted")) {
    snprintf(j.reason, sizeof j.reason,
             "DomainExhausted: %lld addresses needed, %lld free",
             (long long)bus_obj_int(&ev->data, "needed", 0),
             (long long)bus_obj_int(&ev->data, "free", 0));
    j.exhausted = 1; /* decide gives its capacity back (job.unplaced) */
    if ((rc = sched_queue_job(t, &j, 1)))
      return rc;
    return sched_job_put(t, &j);
  }
  uint64_t gen =
      (uint64_t)bus_obj_int(&ev->data, "generation", (int64_t)j.generation);
  if (j.addressed || j.stopped || gen != j.generation)
    return 0; /* already addressed, or addresses for an earlier run */
  j.addressed = 1;
  pods_ctx c = {&j, "Running", ev->seq, 0};
  if ((rc = sched_each_pod(t, name, address, &c)))
    return rc;
  return sched_job_put(t, &j);
}

typedef struct wake {
  bus_txn *t;
  const char *domain;
} wake;

static int
wake_job(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  wake *w = ud;
  job_rec j;
  if (vl != sizeof j)
    return 0;
  memcpy(&j, v, sizeof j);
  if (!j.exhausted || strcmp(j.domain, w->domain))
    return 0;
  j.exhausted = 0;
  j.reason[0] = 0;
  return sched_job_put(w->t, &j);
}

/* Addresses came free in a domain: its waiting Jobs may be placed again. */
static int
apply_domain_released(bus_txn *t, const bus_event *ev) {
  char domain[SCHED_NAME_SZ];
  if (!bus_obj_str(&ev->data, "domain", domain, sizeof domain))
    return 0;
  wake w = {t, domain};
  return bus_txn_scan(t, "jobs", NULL, 0, wake_job, &w);
}

/* ------------------------------------------------------------ dispatch */

/* The verb of a type "<kind>.<verb>". */
static const char *
verb_of(const bus_event *ev) {
  return strchr(ev->type, '.') + 1;
}

static int
on_node_state(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_node_state(t, ev, id, verb_of(ev));
}

static int
on_job_verb(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_job_verb(t, ev, id, verb_of(ev));
}

static int
on_job_placed(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return apply_job_placed(t, ev);
}

static int
on_job_unplaced(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return apply_job_unplaced(t, ev);
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
  return apply_domain(t, ev, verb_of(ev));
}

static int
on_domain_released(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return apply_domain_released(t, ev);
}

/* The types the view applies, sorted by type (typetab.h); id is the <id>
 * of the event's subject lark.ev.<kind>.<id>. */
typedef struct apply_entry {
  const char *type;
  int (*fn)(bus_txn *t, const bus_event *ev, const char *id);
} apply_entry;

static const apply_entry apply_table[] = {
    {"domain.allocated", on_domain},
    {"domain.deleted", on_domain_released},
    {"domain.exhausted", on_domain},
    {"domain.released", on_domain_released},
    {"job.deleted", on_job_verb},
    {"job.phase", on_job_phase},
    {"job.placed", on_job_placed},
    {"job.resumed", on_job_verb},
    {"job.stopped", on_job_verb},
    {"job.submitted", apply_job_submitted},
    {"job.unplaced", on_job_unplaced},
    {"node.cordoned", on_node_state},
    {"node.heartbeat", on_node_state},
    {"node.notready", on_node_state},
    {"node.ready", on_node_state},
    {"node.registered", apply_node_registered},
    {"node.uncordoned", on_node_state},
    {"pod.phase", apply_pod_phase},
    {"task.phase", on_task_phase},
};

int
sched_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  char kind[32];
  if (bus_event_kind(ev->type, kind, sizeof kind))
    return 0;
  const apply_entry *e = SVC_TYPE_FIND(apply_table, ev->type);
  return e ? e->fn(t, ev, subject_id(ev->subject)) : 0;
}
