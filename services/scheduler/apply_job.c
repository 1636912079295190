/*
 * apply_job.c - the scheduler's view follows its Jobs: job.submitted
 * expands a Job into Tasks and Pods, job.stopped / resumed / deleted
 * change what its pods should be, job.placed binds pods to nodes (booking
 * their capacity) and job.unplaced takes the bindings back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "expand.h"
#include "phase.h"
#include "scheduler.h"

/* ----------------------------------------------------------------- jobs */

static int
drop_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)ud;
  if (p->out_key[0] || p->out_key[7]) {
    unsigned char key[8 + SCHED_DNAME_SZ];
    bus_txn_del(t, "outgoing", key,
                sched_seq_key(key, sched_seq_of(p->out_key), p->name));
  }
  bus_txn_del(t, "why", p->name, strlen(p->name));
  int rc = p->bound && !p->released ? sched_nodepod_mark(t, p, 0) : 0;
  return rc ? rc : bus_txn_del(t, "pods", p->name, strlen(p->name));
}

/* What a pod of tp holds while bound, counted per device name. A named
 * device asked for by name is counted as one unit of the class: which
 * named devices it holds is in `held` (holds.c), the class's count on
 * the node covers them all. */
static void
hold_request(pod_rec *p, const sched_template *tp) {
  p->cpu_m = tp->req.cpu_m;
  p->memory_mib = tp->req.memory_mib;
  p->gpu = tp->req.gpu;
  p->ndev = 0;
  for (int d = 0; d < tp->req.ndevices; d++) {
    const char *name = tp->req.devices[d].name;
    if (sched_device_key(name) == SCHED_KEY_NAMED)
      name = SCHED_DEVICE_CLASS;
    uint32_t k = 0;
    while (k < p->ndev && strcmp(p->dev_name[k], name))
      k++;
    if (k == SCHED_POD_DEVICES)
      continue;
    if (k == p->ndev) {
      sched_copy(p->dev_name[k], SCHED_NAME_SZ, name, strlen(name));
      p->ndev++;
    }
    p->dev_count[k] += tp->req.devices[d].count;
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

int
sched_apply_job_submitted(bus_txn *t, const bus_event *ev, const void *data,
                          void *ud) {
  const char *name = sched_subject_id(ev);
  const bus_job_res *res = data;
  (void)ud;
  sched_job job;
  sched_expansion x;
  bus_field_err err;
  int n = 0;
  memset(&x, 0, sizeof x);
  int rc = sched_job_read(res, &job, &err, 1, &n);
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
  /* a former generation's records: their phases derived anew below */
  int former = sched_job_get(t, name, &j) == 0;
  memset(&j, 0, sizeof j);
  rc = bus_txn_version(t, ev->subject, &ver);
  if (!rc)
    rc = sched_each_pod(t, name, drop_pod, NULL); /* a former generation */
  if (!rc)
    rc = sched_why_drop(t, name);
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
  if (!rc)
    rc = sched_put_object(t, "specs", name, &ev->data);
  if (!rc)
    rc = put_tasks(t, &job, &x);
  if (!rc)
    rc = put_pods(t, &job, &x);
  if (!rc)
    rc = sched_job_put(t, &j);
  if (!rc && !j.stopped)
    rc = sched_queue_job(t, &j, 1);
  /* A first Job not stopped is as derive would leave it (every want
   * Pending, zeroed past it, nothing in todo); a Job submitted stopped, or
   * over a former generation's records, has its phases derived */
  if (!rc && (j.stopped || former))
    rc = sched_touch(t, name);
  sched_expansion_clear(&x);
  sched_job_clear(&job);
  return rc;
}

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
  if (!sched_terminal(p->phase))
    strcpy(p->phase, "Stopped");
  if (was_sent || p->bound)
    rc = sched_outgoing(t, p, c->seq);
  return rc ? rc : sched_pod_put(t, p);
}

int
sched_apply_job_verb(bus_txn *t, const bus_event *ev, const void *data,
                     void *ud) {
  const char *name = sched_subject_id(ev);
  (void)data, (void)ud;
  job_rec j;
  int rc = sched_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL;
  if (rc)
    return rc;
  pods_ctx c = {&j, "Stopped", ev->seq, 0};
  if (ev->t == BUS_T_JOB_STOPPED) {
    j.stopped = 1;
    strcpy(j.phase, "Stopped");
    strcpy(j.want, "Stopped");
    snprintf(j.reason, sizeof j.reason, "stopped by %s", ev->actor);
  } else if (ev->t == BUS_T_JOB_RESUMED) {
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
    if ((rc = bus_txn_del(t, "rayhead", name, strlen(name))))
      return rc;
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

/* The Why of a job.placed, packed once for all its bindings' pods. */
static int
pack_why(bus_packbuf *b, const bus_why *why) {
  bus_packbuf_init(b);
  if (!bus_why_write(&b->pk, why))
    return 0;
  bus_packbuf_destroy(b);
  return bus_error(-ENOMEM, "out of memory packing a placement's why");
}

static uint64_t
gpu_mask(const bus_u64_list *gpus) {
  uint64_t m = 0;
  for (uint32_t i = 0; i < gpus->n; i++)
    if (gpus->v[i] < 64)
      m |= 1ull << gpus->v[i];
  return m;
}

/* One binding of a job.placed. A binding for a pod that is not waiting
 * with that attempt is passed over (it cannot book twice). With why, the
 * pod points to the placement's Why (kept once, sched_why_put). */
static int
bind_one(bus_txn *t, job_rec *j, const bus_binding *b, int why, uint64_t seq) {
  char pod[SCHED_DNAME_SZ], rt[32] = "raw";
  pod_rec p;
  bus_str_copy(b->pod, pod, sizeof pod);
  if (b->has_runtime)
    bus_str_copy(b->runtime, rt, sizeof rt);
  int rc = sched_pod_get(t, pod, &p);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc)
    return rc;
  if (strcmp(p.job, j->name) || p.bound || (uint32_t)b->attempt != p.attempt)
    return 0;
  bus_str_copy(b->node, p.node, sizeof p.node);
  p.gpus = gpu_mask(&b->gpus);
  p.runtime = (uint8_t)sched_runtime_bit(rt);
  p.bound = 1;
  p.released = 0;
  if ((rc = sched_node_book(t, &p, +1)))
    return rc;
  if (b->has_devices && (rc = sched_hold_devices(t, &p, &b->devices)))
    return rc;
  j->bound++;
  if (why && (rc = sched_why_link(t, pod, seq)))
    return rc;
  if (!j->domain[0] || j->addressed)
    rc = sched_outgoing(t, &p, seq);
  return rc ? rc : sched_pod_put(t, &p);
}

int
sched_apply_job_placed(bus_txn *t, const bus_event *ev, const void *data,
                       void *ud) {
  const bus_ev_job_placed *d = data;
  (void)ud;
  job_rec j;
  int rc = sched_job_named(t, d->job, &j);
  if (rc)
    return rc;
  if (j.stopped || (d->has_generation && d->generation != j.generation))
    return 0; /* placed for a Job that has moved on: books nothing */
  bus_packbuf why;
  int has_why = d->has_why;
  if (has_why && (rc = pack_why(&why, &d->why)))
    return rc;
  uint32_t bound = j.bound;
  for (uint32_t i = 0; !rc && i < d->bindings.n; i++)
    rc = bind_one(t, &j, &d->bindings.v[i], has_why, ev->seq);
  if (!rc && has_why && j.bound != bound)
    rc = sched_why_put(t, j.name, ev->seq, why.sb.data, why.sb.size);
  if (has_why)
    bus_packbuf_destroy(&why);
  j.reason[0] = 0;
  int waits = 0;
  if (!rc)
    rc = sched_job_waits(t, j.name, &waits);
  if (!rc && !waits)
    rc = sched_queue_job(t, &j, 0);
  return rc ? rc : sched_job_put(t, &j);
}

static int
unbind(bus_txn *t, pod_rec *p, void *ud) {
  pods_ctx *c = ud;
  if (!p->bound || sched_terminal(p->phase))
    return 0;
  int sent = !c->j->domain[0] || c->j->addressed;
  int rc = sched_pod_release(t, p);
  /* Tell the node to stop what it may have started: an entry of its own
   * naming this attempt and node, as the pod moves on to its next attempt
   * before decide reads it (sched_outgoing_stop). */
  if (!rc && sent)
    rc = sched_outgoing_stop(t, p, c->seq);
  p->bound = p->released = 0;
  p->node[0] = 0;
  p->gpus = 0;
  p->attempt += sent ? 1 : 0;
  strcpy(p->desired, "Running");
  return rc ? rc : sched_pod_put(t, p);
}

int
sched_apply_job_unplaced(bus_txn *t, const bus_event *ev, const void *data,
                         void *ud) {
  const bus_ev_job_unplaced *d = data;
  (void)ud;
  job_rec j;
  int rc = sched_job_named(t, d->job, &j);
  if (rc)
    return rc;
  pods_ctx c = {&j, "Stopped", ev->seq, 0};
  if ((rc = sched_each_pod(t, j.name, unbind, &c)))
    return rc;
  j.bound = 0;
  j.addressed = 0;
  bus_str_copy(d->has_reason ? d->reason : BUS_STR(""), j.reason,
               sizeof j.reason);
  if (!j.stopped && (rc = sched_queue_job(t, &j, 1)))
    return rc;
  return sched_job_put(t, &j);
}
