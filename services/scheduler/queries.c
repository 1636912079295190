/*
 * queries.c - reads of the scheduler's view: jobs, tasks, pods and nodes,
 * listed or described. The same function answers live (lark-scheduler)
 * and in the past (larkctl --at, on a replay).
 */
#include <stdio.h>
#include <string.h>

#include "phase.h"
#include "scheduler.h"

static void
pack_gpus(msgpack_packer *pk, const char *k, uint64_t gpus) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
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
  msgpack_pack_map(pk, 9);
  bus_pack_kv_str(pk, "name", j->name);
  bus_pack_kv_str(pk, "phase", j->phase);
  bus_pack_kv_str(pk, "reason", j->reason);
  bus_pack_kv_uint(pk, "generation", j->generation);
  bus_pack_kv_str(pk, "pods", pods);
  bus_pack_kv_uint(pk, "bound", j->bound);
  bus_pack_kv_str(pk, "domain", j->domain);
  bus_pack_kv_uint(pk, "ts", j->sub_ts);
  bus_pack_kv_str(pk, "stopped", j->stopped ? "true" : "false");
}

static void
pack_task(msgpack_packer *pk, const task_rec *r) {
  char buf[3][24];
  msgpack_pack_map(pk, 6);
  bus_pack_kv_str(pk, "name", r->name);
  bus_pack_kv_str(pk, "job", r->job);
  bus_pack_kv_str(pk, "phase", r->phase);
  bus_pack_kv_uint(pk, "replicas", r->replicas);
  bus_pack_kv_str(pk, "role",
                  r->role == SCHED_ROLLOUT ? "Rollout"
                  : r->role == SCHED_ENV   ? "Env"
                                           : "Actor");
  msgpack_pack_str_with_body(pk, "annotations", 11);
  msgpack_pack_map(pk, 4);
  bus_pack_kv_str(pk, "ray-role", r->head ? "head" : "worker");
  snprintf(buf[0], sizeof buf[0], "%u", r->total_nodes);
  bus_pack_kv_str(pk, "ray-total-nodes", buf[0]);
  snprintf(buf[1], sizeof buf[1], "%u", r->rank_start);
  bus_pack_kv_str(pk, "ray-node-rank-start", buf[1]);
  bus_pack_kv_str(pk, "ray-head-task-name", r->head_task);
}

static void
pack_pod(msgpack_packer *pk, const pod_rec *p, bus_txn *t, int full) {
  const void *why = NULL;
  size_t wlen = 0;
  if (full)
    bus_txn_get(t, "why", p->name, strlen(p->name), &why, &wlen);
  msgpack_pack_map(pk, 10 + (why ? 1 : 0));
  bus_pack_kv_str(pk, "name", p->name);
  bus_pack_kv_str(pk, "job", p->job);
  bus_pack_kv_str(pk, "task", p->task);
  bus_pack_kv_str(pk, "phase", p->phase);
  bus_pack_kv_str(pk, "node", p->node);
  bus_pack_kv_uint(pk, "attempt", p->attempt);
  pack_gpus(pk, "gpus", p->gpus);
  bus_pack_kv_str(pk, "localIP", p->local_ip);
  bus_pack_kv_str(pk, "desired", p->desired);
  bus_pack_kv_str(pk, "reason", p->reason);
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
  msgpack_pack_map(pk, 8 + (spec ? 1 : 0));
  bus_pack_kv_str(pk, "name", r->name);
  bus_pack_kv_str(pk, "cluster", r->cluster);
  bus_pack_kv_str(pk, "status", r->ready ? "Ready" : "NotReady");
  bus_pack_kv_str(pk, "cordoned", r->cordoned ? "true" : "false");
  bus_pack_kv_uint(pk, "pods", r->pods);
  bus_pack_kv_str(pk, "cpuUsed", cpu);
  bus_pack_kv_str(pk, "memoryUsed", mem);
  pack_gpus(pk, "gpusUsed", r->gpu_taken);
  if (spec)
    bus_pack_kv_raw(pk, "resource", spec, len);
}

/* ------------------------------------------------------------- listing */

typedef struct lister {
  bus_txn *t;
  char kind;
  const char *name; /* only those it names; "" for all */
  bus_packbuf items;
  uint32_t n;
} lister;

/* 1 when l lists everything, or its name is one of a, b, c (b, c: may
 * be NULL). */
static int
names(const lister *l, const char *a, const char *b, const char *c) {
  return !*l->name || !strcmp(l->name, a) || (b && !strcmp(l->name, b)) ||
         (c && !strcmp(l->name, c));
}

/* One record of the kind listed (its first letter: j, t, p or n). */
static int
list_one(void *rec, void *ud) {
  lister *l = ud;
  msgpack_packer *pk = &l->items.pk;
  const job_rec *j = rec;
  const task_rec *r = rec;
  const pod_rec *p = rec;
  const node_rec *n = rec;
  if (l->kind == 'j' && !j->deleted && names(l, j->name, NULL, NULL))
    pack_job(pk, j);
  else if (l->kind == 't' && names(l, r->name, r->job, NULL))
    pack_task(pk, r);
  else if (l->kind == 'p' && strcmp(p->desired, "Deleted") &&
           names(l, p->name, p->job, p->task))
    pack_pod(pk, p, l->t, 0);
  else if (l->kind == 'n' && names(l, n->name, NULL, NULL))
    pack_node(pk, n, l->t, 0);
  else
    return 0;
  l->n++;
  return 0;
}

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

static int
list(bus_txn *t, const char *kind, const char *name, msgpack_packer *pk) {
  const kind_def *k = kind_of(kind);
  lister l = {.t = t, .kind = kind[0], .name = name};
  bus_packbuf_init(&l.items);
  int rc = sched_each_rec(t, k->table, NULL, k->size, 0, list_one, &l);
  if (!rc) {
    msgpack_pack_array(pk, l.n);
    pk->callback(pk->data, l.items.sb.data, l.items.sb.size);
  }
  bus_packbuf_destroy(&l.items);
  return rc;
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
