/*
 * placement_codec.c - a placement as job.placed's data: packed with its
 * bindings and why, and read back from an event against the Job it binds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "placement.h"

/* --------------------------------------------------------------- codec */

static void
pack_binding(msgpack_packer *pk, const sched_binding *b) {
  msgpack_pack_map(pk, 6);
  bus_pack_str(pk, "pod");
  bus_pack_str(pk, b->pod);
  bus_pack_str(pk, "task");
  bus_pack_str(pk, b->task);
  bus_pack_str(pk, "node");
  bus_pack_str(pk, b->node);
  bus_pack_str(pk, "attempt");
  msgpack_pack_uint32(pk, b->attempt);
  bus_pack_str(pk, "gpus");
  msgpack_pack_array(pk, (size_t)b->ngpus);
  for (int g = 0; g < b->ngpus; g++)
    msgpack_pack_uint8(pk, b->gpus[g]);
  bus_pack_str(pk, "runtime");
  bus_pack_str(pk, b->runtime == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw");
}

static void
pack_why(msgpack_packer *pk, const sched_why *w) {
  size_t n = w->nscores < SCHED_WHY_SCORES ? w->nscores : SCHED_WHY_SCORES;
  const char *s = sched_strategy_name(w->strategy);
  msgpack_pack_map(pk, 7);
  bus_pack_str(pk, "strategy");
  bus_pack_str(pk, s ? s : "spread");
  bus_pack_str(pk, "nodes");
  msgpack_pack_uint32(pk, w->nodes);
  bus_pack_str(pk, "selector");
  msgpack_pack_uint32(pk, w->selector);
  bus_pack_str(pk, "runtime");
  msgpack_pack_uint32(pk, w->runtime);
  bus_pack_str(pk, "ready");
  msgpack_pack_uint32(pk, w->ready);
  bus_pack_str(pk, "capacity");
  msgpack_pack_uint32(pk, w->capacity);
  bus_pack_str(pk, "scores");
  msgpack_pack_map(pk, n);
  for (size_t i = 0; i < n; i++) {
    bus_pack_str(pk, w->scores[i].node);
    msgpack_pack_int64(pk, w->scores[i].score);
  }
}

int
sched_pack_placed(msgpack_packer *pk, const char *pool, const char *job,
                  uint64_t generation, const sched_placement *p) {
  if (!p || !p->ok || !pool || !job)
    return BUS_EINVAL;
  msgpack_pack_map(pk, 5);
  bus_pack_str(pk, "pool");
  bus_pack_str(pk, pool);
  bus_pack_str(pk, "job");
  bus_pack_str(pk, job);
  bus_pack_str(pk, "generation");
  msgpack_pack_uint64(pk, generation);
  bus_pack_str(pk, "bindings");
  msgpack_pack_array(pk, p->n);
  for (size_t i = 0; i < p->n; i++)
    pack_binding(pk, &p->bindings[i]);
  bus_pack_str(pk, "why");
  pack_why(pk, &p->why);
  return 0;
}

/* The template of a binding's task name, and the pod's replica. */
static int
binding_owner(const sched_job *job, sched_binding *b) {
  char task[SCHED_DNAME_SZ];
  for (int i = 0; i < job->ntasks; i++) {
    if (sched_task_name(job->name, job->tasks[i].name, task, sizeof task) ||
        strcmp(task, b->task))
      continue;
    size_t tl = strlen(task);
    const char *num = b->pod + tl + 1;
    char *end;
    if (strncmp(b->pod, task, tl) || b->pod[tl] != '-' || *num < '0' ||
        *num > '9')
      return bus_error(BUS_EINVAL, "pod %s is not of task %s", b->pod, task);
    unsigned long r = strtoul(num, &end, 10);
    if (*end || r >= job->tasks[i].replicas)
      return bus_error(BUS_EINVAL, "pod %s is not of task %s", b->pod, task);
    b->tmpl = i;
    b->replica = (uint32_t)r;
    return 0;
  }
  return bus_error(BUS_EINVAL, "task %s is not of job %s", b->task, job->name);
}

static int
read_binding(const msgpack_object *o, const sched_job *job, sched_binding *b) {
  char rt[SCHED_RUNTIME_SZ] = "raw";
  const msgpack_object *g = bus_obj_get(o, "gpus");
  int64_t attempt = bus_obj_int(o, "attempt", 0);
  if (!bus_obj_str(o, "pod", b->pod, sizeof b->pod) ||
      !bus_obj_str(o, "task", b->task, sizeof b->task) ||
      !bus_obj_str(o, "node", b->node, sizeof b->node) || attempt < 0 ||
      attempt > 1000 || (g && g->type != MSGPACK_OBJECT_ARRAY) ||
      (g && g->via.array.size > SCHED_MAX_GPUS))
    return bus_error(BUS_EMALFORMED, "a binding of job %s is malformed",
                     job->name);
  b->attempt = (uint32_t)attempt;
  bus_obj_str(o, "runtime", rt, sizeof rt);
  b->runtime = sched_runtime_bit(rt);
  for (uint32_t i = 0; g && i < g->via.array.size; i++) {
    const msgpack_object *v = &g->via.array.ptr[i];
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
        v->via.u64 >= SCHED_MAX_GPUS)
      return bus_error(BUS_EMALFORMED, "pod %s: bad GPU index", b->pod);
    b->gpus[b->ngpus++] = (uint8_t)v->via.u64;
  }
  if (!b->runtime)
    return bus_error(BUS_EMALFORMED, "pod %s: unknown runtime %s", b->pod, rt);
  return binding_owner(job, b);
}

int
sched_placement_from_msgpack(const msgpack_object *data, const sched_job *job,
                             sched_placement *out) {
  const msgpack_object *bs = bus_obj_get(data, "bindings");
  int rc = 0;
  sched_placement_clear(out);
  if (!bs || bs->type != MSGPACK_OBJECT_ARRAY ||
      bs->via.array.size > SCHED_MAX_PODS)
    return bus_error(BUS_EMALFORMED, "job.placed without bindings");
  out->bindings = calloc(bs->via.array.size ? bs->via.array.size : 1,
                         sizeof *out->bindings);
  if (!out->bindings)
    return -ENOMEM;
  for (uint32_t i = 0; i < bs->via.array.size && rc == 0; i++)
    rc = read_binding(&bs->via.array.ptr[i], job, &out->bindings[i]);
  if (rc) {
    sched_placement_clear(out);
    return rc;
  }
  out->n = bs->via.array.size;
  out->ok = 1;
  out->why.strategy = job->strategy;
  return 0;
}
