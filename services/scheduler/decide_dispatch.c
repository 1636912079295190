/*
 * decide_dispatch.c - the desired states the scheduler's nodes must be
 * told: each pod queued in `outgoing` is sent to its node as pod.desired
 * (its command, environment, runtime, scripts and GPUs), in the order
 * apply queued them, once (the last key sent is in _effects, "o").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "scheduler.h"

/* ------------------------------------------------------------ dispatch */

static void
pack_env(msgpack_packer *pk, const pod_rec *p, const task_rec *tr,
         const char *head_addr) {
  char buf[32];
  msgpack_pack_str_with_body(pk, "env", 3);
  msgpack_pack_map(pk, 9);
  bus_pack_kv_str(pk, "LARK_JOB", p->job);
  bus_pack_kv_str(pk, "LARK_TASK", p->task);
  bus_pack_kv_str(pk, "LARK_POD", p->name);
  bus_pack_kv_str(pk, "LARK_NODE", p->node);
  snprintf(buf, sizeof buf, "%u", tr->rank_start + p->replica);
  bus_pack_kv_str(pk, "RLARK_NODE_RANK", buf);
  snprintf(buf, sizeof buf, "%u", tr->rank_start);
  bus_pack_kv_str(pk, "RLARK_NODE_RANK_START", buf);
  snprintf(buf, sizeof buf, "%u", tr->total_nodes);
  bus_pack_kv_str(pk, "RLARK_TOTAL_NODES", buf);
  bus_pack_kv_str(pk, "RLARK_RAY_ROLE", tr->head ? "head" : "worker");
  bus_pack_kv_str(pk, "RLARK_HEAD_TASK", head_addr);
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
  bus_pack_kv_str(&pk, "pod", p->name);
  msgpack_pack_str_with_body(&pk, "version", 7);
  msgpack_pack_uint64(&pk, version);
  bus_pack_kv_str(&pk, "job", p->job);
  bus_pack_kv_str(&pk, "task", p->task);
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, p->attempt);
  bus_pack_kv_str(&pk, "desired", p->desired);
  bus_pack_kv_str(&pk, "runtime",
                  p->runtime == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw");
  if (run) {
    pack_gpus(&pk, p->gpus);
    pack_runtime(&pk, &so, &tr);
    pack_env(&pk, p, &tr, tr.head_task);
  }
  if (j->domain[0])
    bus_pack_kv_str(&pk, "domain", j->domain);
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
    rc = sched_emit(w->t, subject, "pod.desired", src, j.sub_id, 0,
                    BUS_APPEND_NOCHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
sched_decide_dispatch(bus_txn *t) {
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
