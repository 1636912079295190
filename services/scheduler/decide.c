/*
 * decide.c - what the scheduler decides after each batch: one placement
 * (or release) on the placement log, the phases its Jobs and Tasks have
 * reached, and the desired states its nodes must be told.
 *
 * Every decision is an event or a message built only from the view, with
 * an id derived from what it was decided from, so deciding again after a
 * crash gives the same ids (the broker drops the copy). What decide has
 * emitted and not yet seen applied is noted in _effects, so the next pass
 * does not emit it twice:
 *   "p:<seq>"  a placement-log event emitted on top of version <seq>;
 *                the log moves on when it is applied (one per version:
 *                two would conflict on the same prev)
 *   "o"        the last `outgoing` key sent
 *   <id>       a phase event, until apply sees it
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "phase.h"
#include "placement.h"
#include "scheduler.h"

#define ACTOR "lark-scheduler"

typedef struct pass {
  bus_txn *t;
  sched_nodes nodes;
  int loaded;
  int emitted; /* a placement-log event this pass */
  uint64_t log_seq;
} pass;

/* ---------------------------------------------------------------- nodes */

static int
load_node(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  pass *p = ud;
  node_rec r;
  if (vl != sizeof r)
    return BUS_ECORRUPT;
  memcpy(&r, v, sizeof r);
  const void *spec;
  size_t len;
  if (sched_spec_get(p->t, "nodespecs", r.name, &spec, &len))
    return 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object o;
  sched_node n;
  bus_field_err err;
  int nerr = 0, rc = 0;
  if (msgpack_unpack(spec, len, NULL, &z, &o) < 0 ||
      sched_node_from_msgpack(&o, &n, &err, 1, &nerr)) {
    msgpack_zone_destroy(&z);
    sched_node_clear(&n);
    return 0; /* a node we cannot read takes no pods */
  }
  msgpack_zone_destroy(&z);
  n.ready = r.ready;
  n.cordoned = r.cordoned;
  n.cpu_used_m = r.cpu_used_m;
  n.memory_used_mib = r.memory_used_mib;
  n.gpu_taken = r.gpu_taken;
  n.pods = r.pods;
  for (int d = 0; d < n.capacity.ndevices; d++)
    for (uint32_t k2 = 0; k2 < r.ndev; k2++)
      if (!strcmp(n.capacity.devices[d].name, r.dev_name[k2]))
        n.dev_used[d] = r.dev_used[k2];
  rc = sched_nodes_put(&p->nodes, &n);
  sched_node_clear(&n);
  return rc;
}

static int
load_nodes(pass *p) {
  if (p->loaded)
    return 0;
  p->loaded = 1;
  return bus_txn_scan(p->t, "nodes", NULL, 0, load_node, p);
}

/* ------------------------------------------------------------ emitting */

static int
emit(bus_txn *t, const char *subject, const char *type, const char *id_src,
     const char *cause, uint64_t prev, int flags, const msgpack_sbuffer *data) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  bus_event ev = {.type = type,
                  .id = id,
                  .actor = ACTOR,
                  .cause = cause,
                  .prev = prev,
                  .data_mp = data->data,
                  .data_mp_len = data->size};
  return bus_txn_emit(t, subject, &ev, flags);
}

/* ----------------------------------------------------------- placement */

typedef struct waiting {
  uint32_t attempts[SCHED_MAX_PODS];
  size_t n, unbound, first_unbound;
  pod_rec first;
} waiting;

static int
count_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)t;
  waiting *w = ud;
  if (w->n < SCHED_MAX_PODS)
    w->attempts[w->n] = p->attempt;
  if (sched_pod_waiting(p)) {
    if (!w->unbound++) {
      w->first = *p;
      w->first_unbound = w->n;
    }
  }
  w->n++;
  return 0;
}

/*
 * One pod placed again (a retry): a Job of its template alone, one
 * replica, whose binding is then renamed to the real pod.
 */
static int
place_one(pass *p, const sched_job *job, const waiting *w,
          sched_placement *pl) {
  sched_job one;
  sched_job_init(&one, job->name);
  one.strategy = job->strategy;
  const sched_template *src = &job->tasks[w->first.tmpl];
  sched_template *tp = sched_job_add_task(&one, src->name);
  int rc = tp ? 0 : -ENOMEM;
  if (!rc) {
    *tp = *src; /* shares src's arrays: detached below before clear */
    tp->replicas = 1;
    uint32_t attempt = w->first.attempt;
    rc = sched_place(&p->nodes, &one, &attempt, pl);
    memset(tp, 0, sizeof *tp);
  }
  if (!rc && pl->ok && pl->n == 1) {
    sched_binding *b = &pl->bindings[0];
    sched_copy(b->pod, sizeof b->pod, w->first.name, strlen(w->first.name));
    b->replica = w->first.replica;
    b->tmpl = w->first.tmpl;
  }
  sched_job_clear(&one);
  return rc;
}

static int
emit_placed(pass *p, const job_rec *j, const sched_placement *pl) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  int rc = sched_pack_placed(&pk, SCHED_POOL, j->name, j->generation, pl);
  char src[160];
  snprintf(src, sizeof src, "placed:%s:%llu", j->name,
           (unsigned long long)p->log_seq);
  if (!rc)
    rc = emit(p->t, SCHED_PLACEMENT_SUBJECT, "job.placed", src, j->sub_id,
              p->log_seq, BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
emit_unplaced(pass *p, const job_rec *j) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, "pool", 4);
  msgpack_pack_str_with_body(&pk, SCHED_POOL, strlen(SCHED_POOL));
  msgpack_pack_str_with_body(&pk, "job", 3);
  msgpack_pack_str_with_body(&pk, j->name, strlen(j->name));
  msgpack_pack_str_with_body(&pk, "reason", 6);
  msgpack_pack_str_with_body(&pk, j->reason, strlen(j->reason));
  char src[160];
  snprintf(src, sizeof src, "unplaced:%s:%llu", j->name,
           (unsigned long long)p->log_seq);
  int rc = emit(p->t, SCHED_PLACEMENT_SUBJECT, "job.unplaced", src, j->sub_id,
                p->log_seq, BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/*
 * Whether two Pending reasons name the same blockers: equal once runs of
 * digits are dropped ("0/3 nodes ... 3 lack cpu" is "0/4 ... 4 lack
 * cpu"). Only the first SCHED_REASON_SZ - 1 bytes count, as the view
 * keeps no more.
 */
static int
same_blockers(const char *a, const char *b) {
  size_t i = 0, k = 0, lim = SCHED_REASON_SZ - 1;
  for (;;) {
    while (i < lim && a[i] >= '0' && a[i] <= '9')
      i++;
    while (k < lim && b[k] >= '0' && b[k] <= '9')
      k++;
    int ea = i >= lim || !a[i], eb = k >= lim || !b[k];
    if (ea || eb)
      return ea && eb;
    if (a[i++] != b[k++])
      return 0;
  }
}

/*
 * A Job that does not fit says why: once, and again only when what blocks
 * it changes. Counts of nodes and free capacity move with every node that
 * comes, goes or fills up; writing each of them would fill the log (kept
 * forever) with the same Pending Job.
 */
static int
emit_pending(pass *p, const job_rec *j, const char *reason) {
  if (j->reason[0] && same_blockers(j->reason, reason))
    return 0;
  char subject[BUS_SUBJECT_MAX], src[700];
  bus_version ver;
  snprintf(subject, sizeof subject, "lark.ev.job.%s", j->name);
  int rc = bus_txn_version(p->t, subject, &ver);
  snprintf(src, sizeof src, "pending:%s:%llu:%s", j->name,
           (unsigned long long)ver.seq, reason);
  char id[33];
  bus_event_derive_id(src, 0, id);
  if (rc || bus_txn_marked(p->t, id, strlen(id)) == 1)
    return rc;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "phase", 5);
  msgpack_pack_str_with_body(&pk, j->phase, strlen(j->phase));
  msgpack_pack_str_with_body(&pk, "reason", 6);
  msgpack_pack_str_with_body(&pk, reason, strnlen(reason, 1000));
  rc = emit(p->t, subject, "job.phase", src, j->sub_id, ver.seq,
            BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc ? rc : bus_txn_mark(p->t, id, strlen(id));
}

/* Try to place job; 1 when a placement-log event was emitted. */
static int
try_job(pass *p, const char *name) {
  job_rec j;
  int rc = sched_job_get(p->t, name, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  if (j.stopped || j.deleted)
    return 0;
  if (j.exhausted && j.bound)
    return (rc = emit_unplaced(p, &j)) ? rc : 1;
  if (j.exhausted)
    return 0; /* waits until its domain releases addresses */
  waiting *w = calloc(1, sizeof *w);
  sched_job job;
  sched_placement pl;
  sched_placement_init(&pl);
  memset(&job, 0, sizeof job);
  if (!w)
    return -ENOMEM;
  rc = sched_each_pod(p->t, name, count_pod, w);
  if (!rc && w->unbound)
    rc = load_nodes(p);
  if (!rc && w->unbound)
    rc = sched_job_load(p->t, name, &job);
  if (!rc && w->unbound)
    rc = w->unbound == w->n ? sched_place(&p->nodes, &job, w->attempts, &pl)
                            : place_one(p, &job, w, &pl);
  if (!rc && w->unbound)
    rc = pl.ok ? emit_placed(p, &j, &pl) : emit_pending(p, &j, pl.reason);
  int placed = !rc && w->unbound && pl.ok;
  sched_placement_clear(&pl);
  sched_job_clear(&job);
  free(w);
  return rc ? rc : placed;
}

typedef struct queue_walk {
  pass *p;
  int rc;
} queue_walk;

static int
visit_queued(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  queue_walk *q = ud;
  char name[SCHED_NAME_SZ];
  if (kl <= 8)
    return 0;
  sched_copy(name, sizeof name, (const char *)k + 8, kl - 8);
  int rc = try_job(q->p, name);
  if (rc < 0)
    return rc;
  return rc == 1; /* one placement-log event per pass */
}

static int
decide_placement(pass *p) {
  bus_version ver;
  int rc = bus_txn_version(p->t, SCHED_PLACEMENT_SUBJECT, &ver);
  if (rc)
    return rc;
  p->log_seq = ver.seq;
  char mark[40];
  snprintf(mark, sizeof mark, "p:%llu", (unsigned long long)ver.seq);
  if (bus_txn_marked(p->t, mark, strlen(mark)) == 1)
    return 0; /* our last one is on its way */
  queue_walk q = {p, 0};
  rc = bus_txn_scan(p->t, "queue", NULL, 0, visit_queued, &q);
  if (rc < 0)
    return rc;
  return rc == 1 ? bus_txn_mark(p->t, mark, strlen(mark)) : 0;
}

/* -------------------------------------------------------------- phases */

static int
emit_phase(bus_txn *t, const char *kind, const char *name, const char *job,
           const char *phase, const char *cause) {
  char subject[BUS_SUBJECT_MAX], src[600], id[33];
  bus_version ver;
  snprintf(subject, sizeof subject, "lark.ev.%s.%s", kind, name);
  int rc = bus_txn_version(t, subject, &ver);
  snprintf(src, sizeof src, "phase:%s:%llu:%s", subject,
           (unsigned long long)ver.seq, phase);
  bus_event_derive_id(src, 0, id);
  if (rc || bus_txn_marked(t, id, strlen(id)) == 1)
    return rc;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, job ? 2 : 1);
  msgpack_pack_str_with_body(&pk, "phase", 5);
  msgpack_pack_str_with_body(&pk, phase, strlen(phase));
  if (job) {
    msgpack_pack_str_with_body(&pk, "job", 3);
    msgpack_pack_str_with_body(&pk, job, strlen(job));
  }
  char type[32];
  snprintf(type, sizeof type, "%s.phase", kind);
  rc = emit(t, subject, type, src, cause, ver.seq, BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc ? rc : bus_txn_mark(t, id, strlen(id));
}

typedef struct phase_walk {
  bus_txn *t;
  const job_rec *j;
} phase_walk;

static int
task_phase(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  phase_walk *w = ud;
  task_rec r;
  if (vl != sizeof r)
    return 0;
  memcpy(&r, v, sizeof r);
  if (strcmp(r.job, w->j->name) || !strcmp(r.want, r.phase))
    return 0;
  return emit_phase(w->t, "task", r.name, r.job, r.want, w->j->sub_id);
}

static int
job_phases(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  bus_txn *t = ud;
  char name[SCHED_NAME_SZ], prefix[SCHED_NAME_SZ + 1];
  job_rec j;
  sched_copy(name, sizeof name, k, kl);
  if (sched_job_get(t, name, &j))
    return 0;
  phase_walk w = {t, &j};
  snprintf(prefix, sizeof prefix, "%s-", name);
  int rc = bus_txn_scan(t, "tasks", prefix, strlen(prefix), task_phase, &w);
  if (!rc && strcmp(j.want, j.phase) && !j.deleted)
    rc = emit_phase(t, "job", name, NULL, j.want, j.sub_id);
  return rc;
}

/* ------------------------------------------------------------ dispatch */

static void
pack_kv(msgpack_packer *pk, const char *k, const char *v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
}

static void
pack_env(msgpack_packer *pk, const pod_rec *p, const task_rec *tr,
         const char *head_addr) {
  char buf[32];
  msgpack_pack_str_with_body(pk, "env", 3);
  msgpack_pack_map(pk, 9);
  pack_kv(pk, "LARK_JOB", p->job);
  pack_kv(pk, "LARK_TASK", p->task);
  pack_kv(pk, "LARK_POD", p->name);
  pack_kv(pk, "LARK_NODE", p->node);
  snprintf(buf, sizeof buf, "%u", tr->rank_start + p->replica);
  pack_kv(pk, "RLARK_NODE_RANK", buf);
  snprintf(buf, sizeof buf, "%u", tr->rank_start);
  pack_kv(pk, "RLARK_NODE_RANK_START", buf);
  snprintf(buf, sizeof buf, "%u", tr->total_nodes);
  pack_kv(pk, "RLARK_TOTAL_NODES", buf);
  pack_kv(pk, "RLARK_RAY_ROLE", tr->head ? "head" : "worker");
  pack_kv(pk, "RLARK_HEAD_TASK", head_addr);
}

/* The task's script (prepareScript, runScript), else its Job's; NULL
 * when neither gives a non-empty one. */
static const msgpack_object *
task_script(const msgpack_object *spec, const task_rec *tr, const char *key) {
  const msgpack_object *s = bus_obj_get(spec, "spec");
  const msgpack_object *tasks = bus_obj_get(s, "tasks");
  const msgpack_object *v = NULL;
  if (tasks && tasks->type == MSGPACK_OBJECT_ARRAY &&
      (uint32_t)tr->index < tasks->via.array.size)
    v = bus_obj_get(&tasks->via.array.ptr[tr->index], key);
  if (!v || v->type != MSGPACK_OBJECT_STR || !v->via.str.size)
    v = bus_obj_get(s, key);
  return v && v->type == MSGPACK_OBJECT_STR && v->via.str.size ? v : NULL;
}

/* The pod's raw runtime, working directory and scripts (those given),
 * from its Job's spec. */
static void
pack_runtime(msgpack_packer *pk, const msgpack_object *spec,
             const task_rec *tr) {
  const msgpack_object *s = bus_obj_get(spec, "spec");
  const msgpack_object *tasks = bus_obj_get(s, "tasks");
  const msgpack_object *raw = NULL, *wd = bus_obj_get(s, "workingDir");
  static const char *const scripts[] = {"prepareScript", "runScript"};
  for (int i = 0; i < 2; i++) {
    const msgpack_object *v = task_script(spec, tr, scripts[i]);
    if (v) {
      msgpack_pack_str_with_body(pk, scripts[i], strlen(scripts[i]));
      msgpack_pack_object(pk, *v);
    }
  }
  if (tasks && tasks->type == MSGPACK_OBJECT_ARRAY &&
      (uint32_t)tr->index < tasks->via.array.size)
    raw = bus_obj_get(bus_obj_get(&tasks->via.array.ptr[tr->index], "runtime"),
                      "raw");
  msgpack_pack_str_with_body(pk, "raw", 3);
  if (raw)
    msgpack_pack_object(pk, *raw);
  else
    msgpack_pack_map(pk, 0);
  msgpack_pack_str_with_body(pk, "workingDir", 10);
  if (wd && wd->type == MSGPACK_OBJECT_STR)
    msgpack_pack_object(pk, *wd);
  else
    msgpack_pack_str_with_body(pk, "", 0);
}

static void
pack_gpus(msgpack_packer *pk, uint64_t gpus) {
  int n = __builtin_popcountll(gpus);
  msgpack_pack_str_with_body(pk, "gpus", 4);
  msgpack_pack_array(pk, (uint32_t)n);
  for (int i = 0; i < 64; i++)
    if (gpus & (1ull << i))
      msgpack_pack_uint32(pk, (uint32_t)i);
}

/* version: the sequence of the event that decided it, which only grows
 * for a pod, whichever node stream carries it (the node keeps the
 * highest; a stream made anew starts its own sequences from 1). */
static int
pack_desired(bus_txn *t, const pod_rec *p, const job_rec *j, uint64_t version,
             msgpack_sbuffer *sb) {
  task_rec tr;
  int rc = sched_task_get(t, p->task, &tr);
  if (rc)
    return rc;
  int run = !strcmp(p->desired, "Running");
  const void *spec = NULL;
  size_t len = 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object so = {.type = MSGPACK_OBJECT_NIL};
  if (run && !sched_spec_get(t, "specs", p->job, &spec, &len))
    msgpack_unpack(spec, len, NULL, &z, &so);
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  uint32_t n = 7 + (run ? 4 : 0) + (j->domain[0] ? 1 : 0);
  if (run)
    n += (task_script(&so, &tr, "prepareScript") != NULL) +
         (task_script(&so, &tr, "runScript") != NULL);
  msgpack_pack_map(&pk, n);
  pack_kv(&pk, "pod", p->name);
  msgpack_pack_str_with_body(&pk, "version", 7);
  msgpack_pack_uint64(&pk, version);
  pack_kv(&pk, "job", p->job);
  pack_kv(&pk, "task", p->task);
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, p->attempt);
  pack_kv(&pk, "desired", p->desired);
  pack_kv(&pk, "runtime",
          p->runtime == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw");
  if (run) {
    pack_gpus(&pk, p->gpus);
    pack_runtime(&pk, &so, &tr);
    pack_env(&pk, p, &tr, tr.head_task);
  }
  if (j->domain[0])
    pack_kv(&pk, "domain", j->domain);
  msgpack_zone_destroy(&z);
  return 0;
}

typedef struct out_walk {
  bus_txn *t;
  unsigned char last[8 + SCHED_DNAME_SZ];
  size_t last_len;
  int moved; /* sent something: the cursor moves */
} out_walk;

static int
send_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  out_walk *w = ud;
  char name[SCHED_DNAME_SZ];
  pod_rec p;
  job_rec j;
  if (kl <= 8 || kl > sizeof w->last)
    return 0;
  memcpy(w->last, k, kl);
  w->last_len = kl;
  w->moved = 1;
  sched_copy(name, sizeof name, (const char *)k + 8, kl - 8);
  if (sched_pod_get(w->t, name, &p) || !p.node[0] ||
      sched_job_get(w->t, p.job, &j))
    return 0;
  uint64_t seq = 0;
  for (int i = 0; i < 8; i++)
    seq = seq << 8 | ((const unsigned char *)k)[i];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = pack_desired(w->t, &p, &j, seq, &sb);
  char subject[BUS_SUBJECT_MAX], src[400];
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", p.node, p.name);
  snprintf(src, sizeof src, "desired:%s:%llu", p.name, (unsigned long long)seq);
  if (!rc)
    rc = emit(w->t, subject, "pod.desired", src, j.sub_id, 0,
              BUS_APPEND_NOCHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
decide_dispatch(bus_txn *t) {
  out_walk w = {.t = t};
  const void *cur = NULL;
  size_t clen = 0;
  if (bus_txn_note_get(t, "o", 1, &cur, &clen) == 0 && clen <= sizeof w.last) {
    memcpy(w.last, cur, clen);
    w.last_len = clen;
  }
  unsigned char after[8 + SCHED_DNAME_SZ];
  size_t alen = w.last_len;
  memcpy(after, w.last, alen);
  int rc = bus_txn_scan_after(t, "outgoing", after, alen, send_one, &w);
  if (!rc && w.moved)
    rc = bus_txn_note_put(t, "o", 1, w.last, w.last_len);
  return rc;
}

/* --------------------------------------------------------------- decide */

int
sched_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now;
  (void)ud;
  if (cause)
    return 0; /* everything is decided on the whole view, once a batch */
  pass p = {.t = t};
  sched_nodes_init(&p.nodes);
  int rc = decide_placement(&p);
  if (!rc)
    rc = bus_txn_scan(t, "todo", NULL, 0, job_phases, t);
  if (!rc)
    rc = decide_dispatch(t);
  sched_nodes_clear(&p.nodes);
  return rc;
}
