/*
 * decide_dispatch.c - the desired states the scheduler's nodes must be
 * told: each pod queued in `outgoing` is sent to its node as pod.desired
 * (its command, environment, runtime, scripts, GPUs and the named devices
 * it holds), in the order
 * apply queued them, once (bus_txn_sendq: the last key sent is in
 * _effects, "o").
 *
 * A worker of a Job with a Ray head (rayhead.c) is held instead while the
 * head pod has not been reported Running: noted in _effects ("r:<pod>")
 * and sent by a later pass once it has, from what the view says then (so
 * a retried head's workers get its new address). Held or not, a pod's
 * desired state carries the version and id of its `outgoing` entry, so a
 * pass redone after a crash sends the same event.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "scheduler.h"

/* ------------------------------------------------------------ dispatch */

/* A pod.desired being built: its data and what that points at. */
typedef struct desired {
  bus_ev_pod_desired d;
  task_rec tr;
  uint64_t gpus[64];
  bus_value env[10];
  char ray[SCHED_RAY_ADDR_SZ];
  char num[3][16];
  bus_str bound[SCHED_MAX_DEVICES];
  char names[SCHED_MAX_DEVICES][SCHED_DEV_SZ];
} desired;

static int
add_bound(const char *device, void *ud) {
  desired *w = ud;
  uint32_t i = w->d.boundDevices.n;
  if (i == SCHED_MAX_DEVICES) /* the schema's bound: never more */
    return 0;
  snprintf(w->names[i], SCHED_DEV_SZ, "%s", device);
  w->bound[i] = bus_str_of(w->names[i]);
  w->d.boundDevices.n = i + 1;
  return 0;
}

/* The named devices the pod holds on its node (absent when none), in
 * name order: the node gives it their controller sockets. */
static int
fill_bound(bus_txn *t, const pod_rec *p, desired *w) {
  w->d.boundDevices = (bus_str_list){w->bound, 0};
  int rc = sched_each_hold(t, p->node, p->name, add_bound, w);
  w->d.has_boundDevices = w->d.boundDevices.n > 0;
  return rc;
}

static void
env_str(desired *w, int i, const char *key, const char *val) {
  w->env[i] = (bus_value){
      .key = bus_str_of(key), .kind = BUS_V_STR, .as.s = bus_str_of(val)};
}

static void
fill_env(desired *w, const pod_rec *p) {
  const task_rec *tr = &w->tr;
  snprintf(w->num[0], sizeof w->num[0], "%u", tr->rank_start + p->replica);
  snprintf(w->num[1], sizeof w->num[1], "%u", tr->rank_start);
  snprintf(w->num[2], sizeof w->num[2], "%u", tr->total_nodes);
  env_str(w, 0, "LARK_JOB", p->job);
  env_str(w, 1, "LARK_TASK", p->task);
  env_str(w, 2, "LARK_POD", p->name);
  env_str(w, 3, "LARK_NODE", p->node);
  env_str(w, 4, "RLARK_NODE_RANK", w->num[0]);
  env_str(w, 5, "RLARK_NODE_RANK_START", w->num[1]);
  env_str(w, 6, "RLARK_TOTAL_NODES", w->num[2]);
  env_str(w, 7, "RLARK_RAY_ROLE", tr->head ? "head" : "worker");
  env_str(w, 8, "RLARK_HEAD_TASK", tr->head_task);
  w->d.has_env = 1;
  w->d.env = (bus_values){w->env, 9};
}

/* The task's script (prepareScript, runScript), else its Job's; 0 when
 * neither gives a non-empty one. */
static bool
script(bool has_task, bus_str task, bool has_job, bus_str job, bus_str *out) {
  *out = has_task && task.len ? task : job;
  return (has_task && task.len) || (has_job && job.len);
}

/* The pod's GPUs, raw runtime, working directory and scripts (those
 * given), from its Job's spec (s: zeroed when there is none). */
static void
fill_run(desired *w, const pod_rec *p, const bus_job_spec *s) {
  bus_ev_pod_desired *d = &w->d;
  const bus_task *tk = (uint32_t)w->tr.index < s->tasks.n
                           ? &s->tasks.v[w->tr.index]
                           : &(const bus_task){0};
  uint32_t n = 0;
  for (int i = 0; i < 64; i++)
    if (p->gpus & (1ull << i))
      w->gpus[n++] = (uint64_t)i;
  d->has_gpus = 1;
  d->gpus = (bus_u64_list){w->gpus, n};
  d->has_raw = 1;
  if (tk->runtime.has_raw)
    d->raw = tk->runtime.raw;
  d->has_workingDir = 1;
  d->workingDir = s->has_workingDir ? s->workingDir : BUS_STR("");
  d->has_prepareScript =
      script(tk->has_prepareScript, tk->prepareScript, s->has_prepareScript,
             s->prepareScript, &d->prepareScript);
  d->has_runScript = script(tk->has_runScript, tk->runScript, s->has_runScript,
                            s->runScript, &d->runScript);
  fill_env(w, p);
}

/* What fill_desired returns for a worker whose Ray head is not up. */
#define HELD 1

/* RAY_ADDRESS for a pod of a Job with a Ray head (head: its pod's name),
 * or HELD when p is a worker and the head has not been reported Running. */
static int
ray_env(bus_txn *t, const pod_rec *p, const job_rec *j, const bus_job_spec *s,
        desired *w, char head[SCHED_DNAME_SZ]) {
  pod_rec h;
  if (!sched_ray_head_pod(p->job, s, head))
    return 0;
  int own = !strcmp(head, p->name);
  if (own)
    h = *p;
  else if (sched_pod_get(t, head, &h) || !sched_ray_head_up(&h))
    return HELD;
  if (sched_ray_addr(t, j, &h, s, own, w->ray, sizeof w->ray) == 0)
    env_str(w, (int)w->d.env.n++, "RAY_ADDRESS", w->ray);
  return 0;
}

/* version: the sequence of the event that decided it, which only grows
 * for a pod, whichever node stream carries it (the node keeps the
 * highest; a stream made anew starts its own sequences from 1). The
 * Job's spec is unpacked into z. HELD (head: the Ray head pod) when p
 * must wait for its Job's Ray head. */
static int
fill_desired(bus_txn *t, const pod_rec *p, const job_rec *j, uint64_t version,
             msgpack_zone *z, desired *w, char head[SCHED_DNAME_SZ]) {
  int rc = sched_task_get(t, p->task, &w->tr);
  if (rc)
    return rc;
  w->d = (bus_ev_pod_desired){
      .pod = bus_str_of(p->name),
      .has_version = 1,
      .version = version,
      .job = bus_str_of(p->job),
      .task = bus_str_of(p->task),
      .has_attempt = 1,
      .attempt = p->attempt,
      .desired = bus_str_of(p->desired),
      .has_runtime = 1,
      .runtime =
          bus_str_of(p->runtime == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw"),
      .has_domain = j->domain[0] != 0,
      .domain = bus_str_of(j->domain)};
  if (strcmp(p->desired, "Running"))
    return 0;
  bus_job_res res;
  if (sched_spec_read(t, BUS_T_JOB_SUBMITTED, p->job, z, &res))
    memset(&res, 0, sizeof res);
  fill_run(w, p, &res.spec);
  if ((rc = ray_env(t, p, j, &res.spec, w, head)))
    return rc;
  return fill_bound(t, p, w);
}

/* The note of a held pod: "r:<pod>" -> u64be(seq) <head pod> (the form
 * of an `outgoing` key). */
static size_t
held_key(char *key, size_t cap, const char *pod) {
  int n = snprintf(key, cap, "r:%s", pod);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static int
hold(bus_txn *t, const char *pod, uint64_t seq, const char *head) {
  char key[2 + SCHED_DNAME_SZ];
  unsigned char val[8 + SCHED_DNAME_SZ];
  size_t kl = held_key(key, sizeof key, pod);
  size_t vl = sched_seq_key(val, seq, head);
  return kl ? bus_txn_note_put(t, key, kl, val, vl) : 0;
}

/* Send pod p's desired state decided at seq (its `outgoing` entry), or
 * hold it (a Ray worker whose head is not up). */
static int
dispatch_rec(bus_txn *t, const pod_rec *p, uint64_t seq) {
  char head[SCHED_DNAME_SZ] = "";
  job_rec j;
  if (!p->node[0] || sched_job_get(t, p->job, &j))
    return 0;
  desired *d = malloc(sizeof *d);
  msgpack_zone z;
  if (!d || !msgpack_zone_init(&z, 4096)) {
    free(d);
    return -ENOMEM;
  }
  char subject[BUS_SUBJECT_MAX], src[400];
  int rc = fill_desired(t, p, &j, seq, &z, d, head);
  if (rc == HELD)
    rc = hold(t, p->name, seq, head);
  else if (!rc && !(rc = bus_subj_pod_desired(subject, sizeof subject, p->node,
                                              p->name))) {
    snprintf(src, sizeof src, "desired:%s:%llu", p->name,
             (unsigned long long)seq);
    rc = sched_emit(t, subject, BUS_T_POD_DESIRED, &d->d, src, j.sub_id, 0,
                    BUS_APPEND_NOCHECK);
  }
  msgpack_zone_destroy(&z);
  free(d);
  return rc;
}

static int
dispatch_pod(bus_txn *t, const char *name, uint64_t seq) {
  pod_rec p;
  return sched_pod_get(t, name, &p) ? 0 : dispatch_rec(t, &p, seq);
}

/* A stop of an earlier attempt on the node it ran on (sched_outgoing_stop:
 * v is u32be attempt, node), whatever the pod has become since. */
static int
dispatch_stop(bus_txn *t, const char *name, const unsigned char *v, size_t vl,
              uint64_t seq) {
  pod_rec p;
  if (vl <= 4 || vl - 4 >= sizeof p.node || sched_pod_get(t, name, &p))
    return 0;
  p.attempt =
      (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
  sched_copy(p.node, sizeof p.node, (const char *)v + 4, vl - 4);
  strcpy(p.desired, "Stopped");
  node_rec n; /* a node deleted since is told nothing (gone.c) */
  return sched_noderec_get(t, p.node, &n) ? 0 : dispatch_rec(t, &p, seq);
}

typedef struct out_walk {
  bus_txn *t;
  bus_sendq out; /* outgoing, sent in order */
} out_walk;

static int
send_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  out_walk *w = ud;
  char name[SCHED_DNAME_SZ];
  if (kl > 8 + SCHED_DNAME_SZ || !sched_seq_key_name(k, kl, name, sizeof name))
    return 0;
  bus_sendq_sent(&w->out, k, kl);
  if (vl)
    return dispatch_stop(w->t, name, v, vl, sched_seq_of(k));
  return dispatch_pod(w->t, name, sched_seq_of(k));
}

/* ---------------------------------------------------------------- held */

typedef struct held_pod {
  uint64_t seq;
  char pod[SCHED_DNAME_SZ], head[SCHED_DNAME_SZ];
} held_pod;

typedef struct held_walk {
  held_pod *v;
  size_t n, cap;
} held_walk;

static int
take_held(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  held_walk *w = ud;
  int rc;
  if (kl < 3 || kl - 2 >= SCHED_DNAME_SZ || vl < 8 || vl - 8 >= SCHED_DNAME_SZ)
    return 0;
  if ((rc = bus_grow(&w->v, w->n, &w->cap, sizeof *w->v, 16)))
    return rc;
  held_pod *h = &w->v[w->n++];
  h->seq = sched_seq_of(v);
  sched_copy(h->pod, sizeof h->pod, (const char *)k + 2, kl - 2);
  sched_seq_key_name(v, vl, h->head, sizeof h->head);
  return 0;
}

/* One held pod: sent when its head is up, forgotten when its entry in
 * `outgoing` is no longer the one held (stopped, retried, deleted). */
static int
release_one(bus_txn *t, const held_pod *h) {
  char key[2 + SCHED_DNAME_SZ];
  size_t kl = held_key(key, sizeof key, h->pod);
  pod_rec p, head;
  int gone = sched_pod_get(t, h->pod, &p) || !p.bound || p.released ||
             strcmp(p.desired, "Running") || sched_seq_of(p.out_key) != h->seq;
  if (!gone && (sched_pod_get(t, h->head, &head) || !sched_ray_head_up(&head)))
    return 0; /* still waiting */
  int rc = bus_txn_unmark(t, key, kl);
  return rc || gone ? rc : dispatch_pod(t, h->pod, h->seq);
}

static int
release_held(bus_txn *t) {
  held_walk w = {0};
  int rc = bus_txn_notes(t, "r:", 2, take_held, &w);
  for (size_t i = 0; i < w.n && !rc; i++)
    rc = release_one(t, &w.v[i]);
  free(w.v);
  return rc;
}

int
sched_decide_dispatch(bus_txn *t) {
  out_walk w = {.t = t};
  int rc = release_held(t);
  return rc ? rc : bus_txn_sendq(t, "outgoing", "o", &w.out, send_one, &w);
}
