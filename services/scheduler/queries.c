/*
 * queries.c - reads of the scheduler's view: jobs, tasks, pods and nodes,
 * listed or described. The same function answers live (lark-scheduler)
 * and in the past (larkctl --at, on a replay).
 */
#include <stdio.h>
#include <string.h>

#include "phase.h"
#include "scheduler.h"

/* One entry of a reply's map: a string, or (s NULL) a count. */
typedef struct field {
  const char *key;
  const char *s;
  uint64_t u;
} field;

#define NFIELDS(f) (sizeof f / sizeof *f)
#define F_STR(k, v)                                                            \
  { (k), (v), 0 }
#define F_NUM(k, v)                                                            \
  { (k), NULL, (v) }

static void
pack_fields(msgpack_packer *pk, const field *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (f[i].s)
      bus_pack_kv_str(pk, f[i].key, f[i].s);
    else
      bus_pack_kv_uint(pk, f[i].key, f[i].u);
}

static void
pack_gpus(msgpack_packer *pk, const char *k, uint64_t gpus) {
  bus_pack_str(pk, k);
  msgpack_pack_array(pk, (uint32_t)__builtin_popcountll(gpus));
  for (int i = 0; i < 64; i++)
    if (gpus & (1ull << i))
      msgpack_pack_uint32(pk, (uint32_t)i);
}

/* ------------------------------------------------------------ records */

static void
pack_job(msgpack_packer *pk, const job_rec *j) {
  char pods[32];
  snprintf(pods, sizeof pods, "%u/%u", j->ended, j->pods);
  const field f[] = {F_STR("name", j->name),
                     F_STR("phase", j->phase),
                     F_STR("reason", j->reason),
                     F_NUM("generation", j->generation),
                     F_STR("pods", pods),
                     F_NUM("bound", j->bound),
                     F_STR("domain", j->domain),
                     F_NUM("ts", j->sub_ts),
                     F_STR("stopped", j->stopped ? "true" : "false")};
  msgpack_pack_map(pk, NFIELDS(f));
  pack_fields(pk, f, NFIELDS(f));
}

static void
pack_task(msgpack_packer *pk, const task_rec *r) {
  char total[24], start[24];
  snprintf(total, sizeof total, "%u", r->total_nodes);
  snprintf(start, sizeof start, "%u", r->rank_start);
  const field f[] = {F_STR("name", r->name), F_STR("job", r->job),
                     F_STR("phase", r->phase), F_NUM("replicas", r->replicas),
                     F_STR("role", r->role == SCHED_ROLLOUT ? "Rollout"
                                   : r->role == SCHED_ENV   ? "Env"
                                                            : "Actor")};
  const field ray[] = {F_STR("ray-role", r->head ? "head" : "worker"),
                       F_STR("ray-total-nodes", total),
                       F_STR("ray-node-rank-start", start),
                       F_STR("ray-head-task-name", r->head_task)};
  msgpack_pack_map(pk, NFIELDS(f) + 1);
  pack_fields(pk, f, NFIELDS(f));
  bus_pack_str(pk, "annotations");
  msgpack_pack_map(pk, NFIELDS(ray));
  pack_fields(pk, ray, NFIELDS(ray));
}

/* The named devices a pod holds, for its row (absent when none). */
typedef struct held_list {
  char v[SCHED_MAX_DEVICES][SCHED_DEV_SZ];
  uint32_t n;
} held_list;

static int
add_held(const char *device, void *ud) {
  held_list *h = ud;
  if (h->n < SCHED_MAX_DEVICES)
    snprintf(h->v[h->n++], SCHED_DEV_SZ, "%s", device);
  return 0;
}

static void
pack_held(msgpack_packer *pk, const held_list *h) {
  bus_pack_str(pk, "devices");
  msgpack_pack_array(pk, h->n);
  for (uint32_t i = 0; i < h->n; i++)
    bus_pack_str(pk, h->v[i]);
}

static void
pack_pod(msgpack_packer *pk, const pod_rec *p, bus_txn *t, int full) {
  const void *why = NULL;
  size_t wlen = 0;
  held_list held = {.n = 0};
  char head[SCHED_DNAME_SZ], reason[SCHED_REASON_SZ + SCHED_DNAME_SZ];
  snprintf(reason, sizeof reason, "%s", p->reason);
  if (full)
    sched_why_get(t, p, &why, &wlen);
  if (full && !reason[0] && sched_ray_waiting(t, p, head))
    snprintf(reason, sizeof reason, "waiting for the Ray head %s to be Running",
             head);
  if (p->bound && !p->released)
    sched_each_hold(t, p->node, p->name, add_held, &held);
  const field f[] = {F_STR("name", p->name), F_STR("job", p->job),
                     F_STR("task", p->task), F_STR("phase", p->phase),
                     F_STR("node", p->node), F_NUM("attempt", p->attempt)};
  const field g[] = {F_STR("localIP", p->local_ip),
                     F_STR("desired", p->desired), F_STR("reason", reason)};
  msgpack_pack_map(pk, NFIELDS(f) + 1 + NFIELDS(g) + (why ? 1 : 0) +
                           (held.n ? 1 : 0));
  pack_fields(pk, f, NFIELDS(f));
  pack_gpus(pk, "gpus", p->gpus);
  if (held.n)
    pack_held(pk, &held);
  pack_fields(pk, g, NFIELDS(g));
  if (why)
    bus_pack_kv_raw(pk, "why", why, wlen);
}

static void
pack_node(msgpack_packer *pk, const node_rec *r, bus_txn *t, int full) {
  const void *spec = NULL;
  size_t len = 0;
  if (full)
    sched_spec_get(t, "nodespecs", r->name, &spec, &len);
  char cpu[32], mem[32];
  snprintf(cpu, sizeof cpu, "%llum", (unsigned long long)r->cpu_used_m);
  snprintf(mem, sizeof mem, "%lluMi", (unsigned long long)r->memory_used_mib);
  const field f[] = {F_STR("name", r->name),
                     F_STR("cluster", r->cluster),
                     F_STR("status", r->ready ? "Ready" : "NotReady"),
                     F_STR("cordoned", r->cordoned ? "true" : "false"),
                     F_NUM("pods", r->pods),
                     F_STR("cpuUsed", cpu),
                     F_STR("memoryUsed", mem)};
  msgpack_pack_map(pk, NFIELDS(f) + 1 + (spec ? 1 : 0));
  pack_fields(pk, f, NFIELDS(f));
  pack_gpus(pk, "gpusUsed", r->gpu_taken);
  if (spec)
    bus_pack_kv_raw(pk, "resource", spec, len);
}

/* ------------------------------------------------------------- listing */

/* The kinds the scheduler answers for: their table and records. */
typedef struct kind_def {
  const char *kind, *table;
  size_t size;
} kind_def;

static const kind_def kinds[] = {
    {"job", "jobs", sizeof(job_rec)},
    {"task", "tasks", sizeof(task_rec)},
    {"pod", "pods", sizeof(pod_rec)},
    {"node", "nodes", sizeof(node_rec)},
};

static const kind_def *
kind_of(const char *kind) {
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(kind, kinds[i].kind))
      return &kinds[i];
  return NULL;
}

typedef struct lister {
  bus_txn *t;
  const kind_def *k;
  const char *name; /* only those it names; "" for all */
} lister;

/* 1 when l lists everything, or its name is one of a, b, c (b, c: may
 * be NULL). */
static int
names(const lister *l, const char *a, const char *b, const char *c) {
  return !*l->name || !strcmp(l->name, a) || (b && !strcmp(l->name, b)) ||
         (c && !strcmp(l->name, c));
}

/* One record of the kind listed: 1 when packed. */
static int
list_one(const void *key, size_t klen, const void *val, size_t vlen,
         msgpack_packer *pk, void *ud) {
  (void)key, (void)klen;
  lister *l = ud;
  union {
    job_rec j;
    task_rec r;
    pod_rec p;
    node_rec n;
  } u;
  char kind = l->k->kind[0];
  if (sched_rec_unpack(val, vlen, &u, l->k->size))
    return 0;
  if (kind == 'j' && !u.j.deleted && names(l, u.j.name, NULL, NULL))
    pack_job(pk, &u.j);
  else if (kind == 't' && names(l, u.r.name, u.r.job, NULL))
    pack_task(pk, &u.r);
  else if (kind == 'p' && strcmp(u.p.desired, "Deleted") &&
           names(l, u.p.name, u.p.job, u.p.task))
    pack_pod(pk, &u.p, l->t, 0);
  else if (kind == 'n' && names(l, u.n.name, NULL, NULL))
    pack_node(pk, &u.n, l->t, 0);
  else
    return 0;
  return 1;
}

/* Jobs and nodes are keyed by their name, which is all a name selects of
 * them: only the keys it starts are read (the list of one Job costs the
 * same with 10,000 Jobs). Tasks and pods a name selects by Job or Task. */
static int
list(bus_txn *t, const char *kind, const char *name, msgpack_packer *pk) {
  lister l = {t, kind_of(kind), name};
  size_t plen = *name && (*kind == 'j' || *kind == 'n') ? strlen(name) : 0;
  return bus_txn_list(t, l.k->table, name, plen, 0, list_one, &l, pk);
}

/* ------------------------------------------------------------ describe */

static int
describe_job(bus_txn *t, const char *name, msgpack_packer *pk) {
  job_rec j;
  int rc = sched_job_get(t, name, &j);
  if (rc || j.deleted)
    return bus_error(BUS_ENOT_FOUND, "no job %s", name);
  msgpack_pack_map(pk, 3);
  msgpack_pack_str_with_body(pk, "job", 3);
  pack_job(pk, &j);
  msgpack_pack_str_with_body(pk, "tasks", 5);
  if ((rc = list(t, "task", name, pk)))
    return rc;
  msgpack_pack_str_with_body(pk, "pods", 4);
  return list(t, "pod", name, pk);
}

static int
describe(bus_txn *t, const char *kind, const char *name, msgpack_packer *pk) {
  if (!strcmp(kind, "job"))
    return describe_job(t, name, pk);
  if (!strcmp(kind, "task")) {
    task_rec r;
    if (sched_task_get(t, name, &r))
      return bus_error(BUS_ENOT_FOUND, "no task %s", name);
    pack_task(pk, &r);
    return 0;
  }
  if (!strcmp(kind, "pod")) {
    pod_rec p;
    if (sched_pod_get(t, name, &p))
      return bus_error(BUS_ENOT_FOUND, "no pod %s", name);
    pack_pod(pk, &p, t, 1);
    return 0;
  }
  node_rec r;
  if (sched_noderec_get(t, name, &r))
    return bus_error(BUS_ENOT_FOUND, "no node %s", name);
  pack_node(pk, &r, t, 1);
  return 0;
}

int
sched_query(bus_txn *t, const char *kind, const char *verb,
            const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)ud;
  char name[SCHED_DNAME_SZ] = "";
  bus_obj_str(req, "name", name, sizeof name);
  if (!kind_of(kind))
    return bus_error(BUS_EINVAL,
                     "the scheduler knows jobs, tasks, pods "
                     "and nodes, not %s",
                     kind);
  if (!strcmp(verb, "list"))
    return list(t, kind, name, pk);
  if (!strcmp(verb, "describe") && name[0])
    return describe(t, kind, name, pk);
  return bus_error(BUS_EINVAL, "verbs: list {name?}, describe {name}");
}
