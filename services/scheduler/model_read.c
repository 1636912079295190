/*
 * model_read.c - the readers of the scheduler's model: a Node resource
 * into a sched_node, a Job resource into a sched_job (its tasks,
 * templates, selectors, resources and runtimes).
 *
 * The readers never trust their input: every field is type-checked and a
 * wrong one becomes a {path, reason} entry, never a crash; they fill the
 * output as far as they can so all problems are reported at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-int.h"
#include "model.h"

/* ------------------------------------------------------------- readers */

/* Collects {path, reason} problems; the first code is the result. */
typedef struct errs {
  bus_field_err *v;
  int max, n, first;
} errs;

static void problem(errs *e, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
problem(errs *e, int code, const char *path, const char *fmt, ...) {
  if (!e->first)
    e->first = code;
  if (e->v && e->n < e->max) {
    va_list ap;
    snprintf(e->v[e->n].path, sizeof e->v[e->n].path, "%s", path);
    va_start(ap, fmt);
    vsnprintf(e->v[e->n].reason, sizeof e->v[e->n].reason, fmt, ap);
    va_end(ap);
  }
  e->n++;
}

/* A string object's bytes as a NUL-terminated copy into buf; 0 if the
 * object is not a string, holds a NUL or does not fit. */
static int
obj_strcpy(const msgpack_object *o, char *buf, size_t cap) {
  if (!o || o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap)
    return 0;
  if (o->via.str.size && memchr(o->via.str.ptr, 0, o->via.str.size))
    return 0;
  if (o->via.str.size)
    memcpy(buf, o->via.str.ptr, o->via.str.size);
  buf[o->via.str.size] = 0;
  return 1;
}

/* An unsigned integer field at most max into *out; absent keeps *out. */
static void
read_uint(errs *e, const msgpack_object *m, const char *key, uint64_t max,
          uint64_t *out, const char *path) {
  const msgpack_object *o = bus_obj_get(m, key);
  char p[128];
  if (!o)
    return;
  if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max) {
    snprintf(p, sizeof p, "%s.%s", path, key);
    problem(e, BUS_EFIELD, p, "must be an integer from 0 to %llu",
            (unsigned long long)max);
    return;
  }
  *out = o->via.u64;
}

static void
read_bool(errs *e, const msgpack_object *m, const char *key, int *out,
          const char *path) {
  const msgpack_object *o = bus_obj_get(m, key);
  char p[128];
  if (!o)
    return;
  if (o->type != MSGPACK_OBJECT_BOOLEAN) {
    snprintf(p, sizeof p, "%s.%s", path, key);
    problem(e, BUS_EFIELD, p, "must be true or false");
    return;
  }
  *out = o->via.boolean;
}

/* A map of string -> string into kv (labels, nodeSelector). */
static int
read_string_map(errs *e, const msgpack_object *o, sched_kv **kv, int *n,
                const char *path) {
  char k[BUS_DERIVED_NAME_MAX + 1], v[1025];
  if (!o)
    return 0;
  if (o->type != MSGPACK_OBJECT_MAP) {
    problem(e, BUS_EFIELD, path, "must be a map of strings");
    return 0;
  }
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *p = &o->via.map.ptr[i];
    if (!obj_strcpy(&p->key, k, sizeof k) || !*k ||
        !obj_strcpy(&p->val, v, sizeof v)) {
      problem(e, BUS_EFIELD, path, "entry %u must be a string to a string",
              (unsigned)i);
      continue;
    }
    int rc = sched_kv_set(kv, n, k, v);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Resources {cpu, memory, gpu, devices} into r. */
static int
read_resources(errs *e, const msgpack_object *o, sched_resources *r,
               const char *path) {
  char p[128], name[BUS_DERIVED_NAME_MAX + 1];
  uint64_t cpu = 0, mem = 0, gpu = 0;
  if (!o)
    return 0;
  if (o->type != MSGPACK_OBJECT_MAP) {
    problem(e, BUS_EFIELD, path, "must be a map");
    return 0;
  }
  read_uint(e, o, "cpu", 4096, &cpu, path);
  read_uint(e, o, "memory", 1073741824, &mem, path);
  read_uint(e, o, "gpu", SCHED_MAX_GPUS, &gpu, path);
  r->cpu_m = cpu * 1000;
  r->memory_mib = mem;
  r->gpu = (uint32_t)gpu;
  const msgpack_object *d = bus_obj_get(o, "devices");
  if (!d)
    return 0;
  snprintf(p, sizeof p, "%s.devices", path);
  if (d->type != MSGPACK_OBJECT_MAP || d->via.map.size > SCHED_MAX_DEVICES) {
    problem(e, BUS_EFIELD, p, "must be a map of at most %d counts",
            SCHED_MAX_DEVICES);
    return 0;
  }
  for (uint32_t i = 0; i < d->via.map.size; i++) {
    const msgpack_object_kv *kv = &d->via.map.ptr[i];
    if (!obj_strcpy(&kv->key, name, sizeof name) || !*name ||
        kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
        kv->val.via.u64 > 1024) {
      problem(e, BUS_EFIELD, p, "entry %u must be a name to a count 0..1024",
              (unsigned)i);
      continue;
    }
    int rc = sched_resources_set_device(r, name, (uint32_t)kv->val.via.u64);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* metadata.name into name, checked as a name. */
static void
read_meta_name(errs *e, const msgpack_object *res, char *name) {
  const msgpack_object *md = bus_obj_get(res, "metadata");
  const msgpack_object *o = bus_obj_get(md, "name");
  if (!o) {
    problem(e, BUS_EMISSING, "metadata.name", "is required");
    return;
  }
  if (!obj_strcpy(o, name, SCHED_NAME_SZ) ||
      !bus_name_valid(name, BUS_NAME_MAX)) {
    name[0] = 0;
    problem(e, BUS_ENAME, "metadata.name",
            "must be [a-z0-9-], at most 63, no '-' at either end");
  }
}

static const msgpack_object *
read_spec(errs *e, const msgpack_object *res) {
  const msgpack_object *spec = bus_obj_get(res, "spec");
  if (!res || res->type != MSGPACK_OBJECT_MAP) {
    problem(e, BUS_EFIELD, "", "the resource must be a map");
    return NULL;
  }
  if (!spec || spec->type != MSGPACK_OBJECT_MAP) {
    problem(e, spec ? BUS_EFIELD : BUS_EMISSING, "spec", "must be a map");
    return NULL;
  }
  return spec;
}

static void
read_runtimes(errs *e, const msgpack_object *o, unsigned *mask) {
  char s[SCHED_RUNTIME_SZ];
  if (!o)
    return;
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    problem(e, BUS_EFIELD, "spec.runtimes", "must be a list of runtimes");
    return;
  }
  *mask = 0;
  for (uint32_t i = 0; i < o->via.array.size; i++) {
    unsigned bit = obj_strcpy(&o->via.array.ptr[i], s, sizeof s)
                       ? sched_runtime_bit(s)
                       : 0;
    if (!bit) {
      char p[64];
      snprintf(p, sizeof p, "spec.runtimes[%u]", (unsigned)i);
      problem(e, BUS_EFIELD, p, "must be raw or raw+netns");
    }
    *mask |= bit;
  }
  if (!*mask)
    *mask = SCHED_RT_RAW;
}

int
sched_node_from_msgpack(const msgpack_object *resource, sched_node *out,
                        bus_field_err *errv, int max, int *n) {
  errs e = {errv, max, 0, 0};
  int rc = 0;
  sched_node_init(out, "");
  const msgpack_object *spec = read_spec(&e, resource);
  read_meta_name(&e, resource, out->name);
  if (spec) {
    const msgpack_object *c = bus_obj_get(spec, "cluster");
    if (!c)
      problem(&e, BUS_EMISSING, "spec.cluster", "is required");
    else if (!obj_strcpy(c, out->cluster, sizeof out->cluster) ||
             !bus_name_valid(out->cluster, BUS_NAME_MAX))
      problem(&e, BUS_ENAME, "spec.cluster", "must be a name");
    rc = read_string_map(&e, bus_obj_get(spec, "labels"), &out->labels,
                         &out->nlabels, "spec.labels");
    read_runtimes(&e, bus_obj_get(spec, "runtimes"), &out->runtimes);
    const msgpack_object *cap = bus_obj_get(spec, "capacity");
    if (!cap)
      problem(&e, BUS_EMISSING, "spec.capacity", "is required");
    if (rc == 0)
      rc = read_resources(&e, cap, &out->capacity, "spec.capacity");
  }
  if (rc == 0)
    rc = sched_node_fix_dev_used(out);
  if (n)
    *n = e.n;
  return rc < 0 ? rc : e.first;
}

/* Runtime of a task: the key of its runtime map ("raw" is the only one
 * larkbus runs; kubernetes or docker is kept so apply can name it as
 * one no node offers). A task naming two is refused, naming the task. */
static void
read_task_runtime(errs *e, const msgpack_object *o, sched_template *t,
                  const char *path) {
  char p[128];
  snprintf(p, sizeof p, "%s.runtime", path);
  if (!o) {
    problem(e, BUS_EMISSING, p, "is required");
    return;
  }
  if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size != 1 ||
      !obj_strcpy(&o->via.map.ptr[0].key, t->runtime, sizeof t->runtime)) {
    problem(e, BUS_EFIELD, p,
            "task %s: must be a map with one runtime (raw, kubernetes or "
            "docker)",
            t->name);
    snprintf(t->runtime, sizeof t->runtime, "raw");
  }
}

static int
read_task(errs *e, const msgpack_object *o, sched_job *job, int i) {
  char path[64], p[128], role[16];
  snprintf(path, sizeof path, "spec.tasks[%d]", i);
  sched_template *t = sched_job_add_task(job, "");
  if (!t)
    return -ENOMEM;
  if (o->type != MSGPACK_OBJECT_MAP) {
    problem(e, BUS_EFIELD, path, "must be a map");
    return 0;
  }
  const msgpack_object *nm = bus_obj_get(o, "name");
  snprintf(p, sizeof p, "%s.name", path);
  if (!nm)
    problem(e, BUS_EMISSING, p, "is required");
  else if (!obj_strcpy(nm, t->name, sizeof t->name) ||
           !bus_name_valid(t->name, BUS_NAME_MAX)) {
    t->name[0] = 0;
    problem(e, BUS_ENAME, p, "must be a name");
  } else if (sched_job_task_index(job, t->name) < i)
    problem(e, BUS_EFIELD, p, "task %s is listed twice", t->name);
  read_bool(e, o, "head", &t->head, path);
  snprintf(p, sizeof p, "%s.role", path);
  if (!obj_strcpy(bus_obj_get(o, "role"), role, sizeof role) ||
      sched_role_parse(role, &t->role))
    problem(e, bus_obj_get(o, "role") ? BUS_EFIELD : BUS_EMISSING, p,
            "must be Actor, Rollout or Env");
  uint64_t replicas = 1, retries = 0;
  read_uint(e, o, "replicas", 1024, &replicas, path);
  if (replicas == 0) {
    snprintf(p, sizeof p, "%s.replicas", path);
    problem(e, BUS_EFIELD, p, "must be an integer from 1 to 1024");
    replicas = 1;
  }
  read_uint(e, o, "maxRetries", 100, &retries, path);
  t->replicas = (uint32_t)replicas;
  t->max_retries = (uint32_t)retries;
  snprintf(p, sizeof p, "%s.nodeSelector", path);
  int rc = read_string_map(e, bus_obj_get(o, "nodeSelector"), &t->selector,
                           &t->nselector, p);
  snprintf(p, sizeof p, "%s.resources", path);
  if (rc == 0)
    rc = read_resources(e, bus_obj_get(o, "resources"), &t->req, p);
  read_task_runtime(e, bus_obj_get(o, "runtime"), t, path);
  return rc;
}

static int
read_tasks(errs *e, const msgpack_object *o, sched_job *job) {
  if (!o) {
    problem(e, BUS_EMISSING, "spec.tasks", "is required");
    return 0;
  }
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size == 0 ||
      o->via.array.size > SCHED_MAX_TASKS) {
    problem(e, BUS_EFIELD, "spec.tasks", "must be a list of 1 to %d tasks",
            SCHED_MAX_TASKS);
    return 0;
  }
  for (uint32_t i = 0; i < o->via.array.size; i++) {
    int rc = read_task(e, &o->via.array.ptr[i], job, (int)i);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* What the schema cannot say: one head at most, a bounded pod count; and
 * a domain makes every task need its own network namespace. */
static void
job_checks(errs *e, sched_job *job) {
  int heads = 0;
  for (int i = 0; i < job->ntasks; i++) {
    sched_template *t = &job->tasks[i];
    if (t->head && ++heads == 2) {
      char p[64];
      snprintf(p, sizeof p, "spec.tasks[%d].head", i);
      problem(e, BUS_EFIELD, p, "only one task may hold the head");
    }
    if (job->domain[0] && !strcmp(t->runtime, "raw"))
      snprintf(t->runtime, sizeof t->runtime, "raw+netns");
  }
  size_t pods = sched_job_pods(job);
  if (pods > SCHED_MAX_PODS)
    problem(e, BUS_EFIELD, "spec.tasks",
            "%zu pods in all: a Job has at most %d", pods, SCHED_MAX_PODS);
}

int
sched_job_from_msgpack(const msgpack_object *resource, sched_job *out,
                       bus_field_err *errv, int max, int *n) {
  errs e = {errv, max, 0, 0};
  char s[32];
  int rc = 0;
  sched_job_init(out, "");
  const msgpack_object *spec = read_spec(&e, resource);
  read_meta_name(&e, resource, out->name);
  if (spec) {
    const msgpack_object *d = bus_obj_get(spec, "domain");
    if (d && (!obj_strcpy(d, out->domain, sizeof out->domain) ||
              !bus_name_valid(out->domain, BUS_NAME_MAX))) {
      out->domain[0] = 0;
      problem(&e, BUS_ENAME, "spec.domain", "must be a name");
    }
    read_bool(&e, spec, "stopped", &out->stopped, "spec");
    const msgpack_object *st = bus_obj_get(spec, "strategy");
    if (st && (!obj_strcpy(st, s, sizeof s) ||
               sched_strategy_parse(s, &out->strategy)))
      problem(&e, BUS_EFIELD, "spec.strategy",
              "must be spread, pack, colocate or disaggregate");
    rc = read_tasks(&e, bus_obj_get(spec, "tasks"), out);
    job_checks(&e, out);
  }
  if (n)
    *n = e.n;
  return rc < 0 ? rc : e.first;
}
