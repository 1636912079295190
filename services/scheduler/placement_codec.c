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

static const char *
runtime_name(unsigned bit) {
  return bit == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw";
}

static void
fill_binding(bus_binding *o, const sched_binding *b, uint64_t *gpus,
             bus_str *devs) {
  for (int g = 0; g < b->ngpus; g++)
    gpus[g] = b->gpus[g];
  for (int d = 0; d < b->ndevices; d++)
    devs[d] = bus_str_of(b->devices[d]);
  *o = (bus_binding){.pod = bus_str_of(b->pod),
                     .task = bus_str_of(b->task),
                     .node = bus_str_of(b->node),
                     .has_attempt = 1,
                     .attempt = b->attempt,
                     .has_gpus = 1,
                     .gpus = {gpus, (uint32_t)b->ngpus},
                     .has_runtime = 1,
                     .runtime = bus_str_of(runtime_name(b->runtime)),
                     .has_devices = b->ndevices > 0,
                     .devices = {devs, (uint32_t)b->ndevices}};
}

static void
fill_why(bus_why *o, const sched_why *w, bus_value *scores) {
  size_t n = w->nscores < SCHED_WHY_SCORES ? w->nscores : SCHED_WHY_SCORES;
  const char *s = sched_strategy_name(w->strategy);
  for (size_t i = 0; i < n; i++)
    scores[i] = (bus_value){.key = bus_str_of(w->scores[i].node),
                            .kind = BUS_V_INT,
                            .as.i = w->scores[i].score};
  *o = (bus_why){.has_strategy = 1,
                 .strategy = bus_str_of(s ? s : "spread"),
                 .has_nodes = 1,
                 .nodes = w->nodes,
                 .has_selector = 1,
                 .selector = w->selector,
                 .has_runtime = 1,
                 .runtime = w->runtime,
                 .has_ready = 1,
                 .ready = w->ready,
                 .has_capacity = 1,
                 .capacity = w->capacity,
                 .has_scores = 1,
                 .scores = {scores, (uint32_t)n}};
}

int
sched_placed_data(const char *pool, const char *job, uint64_t generation,
                  const sched_placement *p, msgpack_zone *z,
                  bus_ev_job_placed *out) {
  if (!p || !p->ok || !pool || !job)
    return BUS_EINVAL;
  size_t n = p->n ? p->n : 1;
  bus_binding *bs = msgpack_zone_malloc(z, n * sizeof *bs);
  uint64_t *gpus = msgpack_zone_malloc(z, n * SCHED_MAX_GPUS * sizeof *gpus);
  bus_value *scores =
      msgpack_zone_malloc(z, (SCHED_WHY_SCORES + 1) * sizeof *scores);
  if (!bs || !gpus || !scores)
    return -ENOMEM;
  for (size_t i = 0; i < p->n; i++) {
    const sched_binding *b = &p->bindings[i];
    bus_str *devs = NULL;
    if (b->ndevices &&
        !(devs = msgpack_zone_malloc(z, (size_t)b->ndevices * sizeof *devs)))
      return -ENOMEM;
    fill_binding(&bs[i], b, gpus + i * SCHED_MAX_GPUS, devs);
  }
  *out = (bus_ev_job_placed){.pool = bus_str_of(pool),
                             .job = bus_str_of(job),
                             .has_generation = 1,
                             .generation = generation,
                             .bindings = {bs, (uint32_t)p->n},
                             .has_why = 1};
  fill_why(&out->why, &p->why, scores);
  return 0;
}

int
sched_pack_placed(msgpack_packer *pk, const char *pool, const char *job,
                  uint64_t generation, const sched_placement *p) {
  msgpack_zone z;
  bus_ev_job_placed d;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = sched_placed_data(pool, job, generation, p, &z, &d);
  if (!rc && bus_ev_job_placed_write(pk, &d))
    rc = -ENOMEM;
  msgpack_zone_destroy(&z);
  return rc;
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

/* Binding.devices into b->devices: each a named device's key. */
static int
read_devices(const bus_str_list *l, sched_binding *b) {
  if (!l->n)
    return 0;
  if (l->n > SCHED_NODE_DEVICES ||
      !(b->devices = calloc(l->n, sizeof *b->devices)))
    return l->n > SCHED_NODE_DEVICES
               ? bus_error(BUS_EMALFORMED, "pod %s: too many devices", b->pod)
               : -ENOMEM;
  for (uint32_t i = 0; i < l->n; i++) {
    char name[SCHED_DEV_SZ];
    if (l->v[i].len >= sizeof name || memchr(l->v[i].ptr, 0, l->v[i].len) ||
        sched_device_key(bus_str_copy(l->v[i], name, sizeof name)) !=
            SCHED_KEY_NAMED)
      return bus_error(BUS_EMALFORMED, "pod %s: bad device", b->pod);
    if (!(b->devices[b->ndevices] = strdup(name)))
      return -ENOMEM;
    b->ndevices++;
  }
  return 0;
}

static int
read_binding(const bus_binding *o, const sched_job *job, sched_binding *b) {
  char rt[SCHED_RUNTIME_SZ] = "raw";
  if (o->gpus.n > SCHED_MAX_GPUS)
    return bus_error(BUS_EMALFORMED, "a binding of job %s is malformed",
                     job->name);
  bus_str_copy(o->pod, b->pod, sizeof b->pod);
  bus_str_copy(o->task, b->task, sizeof b->task);
  bus_str_copy(o->node, b->node, sizeof b->node);
  b->attempt = (uint32_t)o->attempt;
  if (o->has_runtime)
    bus_str_copy(o->runtime, rt, sizeof rt);
  b->runtime = sched_runtime_bit(rt);
  for (uint32_t i = 0; i < o->gpus.n; i++) {
    if (o->gpus.v[i] >= SCHED_MAX_GPUS)
      return bus_error(BUS_EMALFORMED, "pod %s: bad GPU index", b->pod);
    b->gpus[b->ngpus++] = (uint8_t)o->gpus.v[i];
  }
  int rc = read_devices(&o->devices, b);
  if (rc)
    return rc;
  if (!b->runtime)
    return bus_error(BUS_EMALFORMED, "pod %s: unknown runtime %s", b->pod, rt);
  return binding_owner(job, b);
}

int
sched_placement_from_msgpack(const msgpack_object *data, const sched_job *job,
                             sched_placement *out) {
  msgpack_zone z;
  bus_ev_job_placed d;
  sched_placement_clear(out);
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = bus_job_placed_unpack(data, &z, &d);
  if (rc != -ENOMEM && (rc || d.bindings.n > SCHED_MAX_PODS))
    rc = bus_error(BUS_EMALFORMED, "job.placed without bindings");
  if (!rc && !(out->bindings = calloc(d.bindings.n ? d.bindings.n : 1,
                                      sizeof *out->bindings)))
    rc = -ENOMEM;
  for (uint32_t i = 0; !rc && i < d.bindings.n; i++) {
    rc = read_binding(&d.bindings.v[i], job, &out->bindings[i]);
    out->n = i + 1; /* cleared below on failure, with its devices */
  }
  if (!rc) {
    out->n = d.bindings.n;
    out->ok = 1;
    out->why.strategy = job->strategy;
  } else {
    sched_placement_clear(out);
  }
  msgpack_zone_destroy(&z);
  return rc;
}
