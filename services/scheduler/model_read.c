/*
 * model_read.c - the readers of the scheduler's model: a Node resource
 * into a sched_node, a Job resource into a sched_job (its tasks,
 * templates, selectors, resources and runtimes).
 *
 * They read the generated types (bus_node_res, bus_job_res), so the
 * schema has checked every field's type and bounds before; what is left
 * here is what the schema cannot say (a name listed twice, one head, one
 * runtime per task, the pod count), each a {path, reason} entry, with the
 * output filled as far as it goes so all problems are reported at once.
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

/* s as a NUL-terminated copy into buf; 0 if it holds a NUL or does not
 * fit. */
static int
str_copy(bus_str s, char *buf, size_t cap) {
  if (s.len >= cap || (s.len && memchr(s.ptr, 0, s.len)))
    return 0;
  bus_str_copy(s, buf, cap);
  return 1;
}

/* A map of string -> string into kv (labels, nodeSelector). */
static int
read_string_map(errs *e, const bus_str_map *m, sched_kv **kv, int *n,
                const char *path) {
  char k[BUS_DERIVED_NAME_MAX + 1], v[1025];
  for (uint32_t i = 0; i < m->n; i++) {
    if (!str_copy(m->v[i].key, k, sizeof k) || !*k ||
        !str_copy(m->v[i].val, v, sizeof v)) {
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

/* A device key of a task (node 0) or of a node's bare counts (node 1)
 * that cannot be: a named device's key without a valid name, more than
 * one of one named device, or a node counting one (they are declared in
 * spec.devices). */
static void
check_device_key(errs *e, const char *name, uint64_t count, int node,
                 const char *path) {
  sched_key k = sched_device_key(name);
  if (k == SCHED_KEY_BAD)
    problem(e, BUS_EFIELD, path,
            "%s: a named device is robot/<name> or camera/<name>, the name "
            "[a-z0-9-], at most 63, no '-' at either end",
            name);
  else if (k == SCHED_KEY_NAMED && node)
    problem(e, BUS_EFIELD, path,
            "%s: robots and cameras are declared in spec.devices, not counted",
            name);
  else if (k == SCHED_KEY_NAMED && count > 1)
    problem(e, BUS_EFIELD, path, "%s: a named device is one device: ask for 1",
            name);
}

/* Resources {cpu, memory, gpu, devices} into r; node: a node's capacity. */
static int
read_resources(errs *e, const bus_resources *o, sched_resources *r, int node,
               const char *path) {
  char p[128], name[BUS_DERIVED_NAME_MAX + 1];
  r->cpu_m = o->cpu * 1000;
  r->memory_mib = o->memory;
  r->gpu = (uint32_t)o->gpu;
  snprintf(p, sizeof p, "%s.devices", path);
  for (uint32_t i = 0; i < o->devices.n; i++) {
    const bus_u64_kv *kv = &o->devices.v[i];
    if (!str_copy(kv->key, name, sizeof name) || !*name) {
      problem(e, BUS_EFIELD, p, "entry %u must be a name to a count 0..1024",
              (unsigned)i);
      continue;
    }
    check_device_key(e, name, kv->val, node, p);
    int rc = sched_resources_set_device(r, name, (uint32_t)kv->val);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* metadata.name into name, checked as a name. */
static void
read_meta_name(errs *e, const bus_metadata *md, char *name) {
  if (!str_copy(md->name, name, SCHED_NAME_SZ) ||
      !bus_name_valid(name, BUS_NAME_MAX)) {
    name[0] = 0;
    problem(e, BUS_ENAME, "metadata.name",
            "must be [a-z0-9-], at most 63, no '-' at either end");
  }
}

/* A name field into out (SCHED_NAME_SZ), checked as a name. */
static void
read_name(errs *e, bus_str s, char *out, const char *path) {
  if (!str_copy(s, out, SCHED_NAME_SZ) || !bus_name_valid(out, BUS_NAME_MAX)) {
    out[0] = 0;
    problem(e, BUS_ENAME, path, "must be a name");
  }
}

static void
read_runtimes(errs *e, const bus_str_list *l, unsigned *mask) {
  char s[SCHED_RUNTIME_SZ];
  *mask = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    unsigned bit = str_copy(l->v[i], s, sizeof s) ? sched_runtime_bit(s) : 0;
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

/* NodeSpec.devices: each robot and camera a named device of out, counted
 * in the class, in name order (the order a class request takes them). */
static int
read_devices(errs *e, const bus_device_list *l, sched_node *out) {
  char names[64][SCHED_DEV_SZ];
  uint8_t subnet[64];
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->n && n < 64; i++) {
    const bus_device *d = &l->v[i];
    char name[SCHED_NAME_SZ], p[64];
    snprintf(p, sizeof p, "spec.devices[%u].name", (unsigned)i);
    read_name(e, d->name, name, p);
    if (!name[0])
      continue;
    int camera = bus_str_eq(d->kind, "camera");
    snprintf(names[n], SCHED_DEV_SZ, "%s/%s", camera ? "camera" : "robot",
             name);
    subnet[n] = !camera && d->has_subnet;
    for (uint32_t k = 0; k < n; k++)
      if (!strcmp(names[k] + (names[k][0] == 'c' ? 7 : 6), name)) {
        problem(e, BUS_EFIELD, p, "device %s is declared twice", name);
        n--;
        break;
      }
    n++;
  }
  for (uint32_t i = 0; i < n; i++) { /* n is small: a selection sort */
    uint32_t m = i;
    for (uint32_t k = i + 1; k < n; k++)
      if (strcmp(names[k], names[m]) < 0)
        m = k;
    int rc = sched_node_add_named(out, names[m], subnet[m]);
    if (rc < 0)
      return rc;
    memcpy(names[m], names[i], SCHED_DEV_SZ);
    subnet[m] = subnet[i];
  }
  return 0;
}

int
sched_node_read(const bus_node_res *res, sched_node *out, bus_field_err *errv,
                int max, int *n) {
  errs e = {errv, max, 0, 0};
  const bus_node_spec *spec = &res->spec;
  sched_node_init(out, "");
  read_meta_name(&e, &res->metadata, out->name);
  read_name(&e, spec->cluster, out->cluster, "spec.cluster");
  int rc = read_string_map(&e, &spec->labels, &out->labels, &out->nlabels,
                           "spec.labels");
  if (spec->has_runtimes)
    read_runtimes(&e, &spec->runtimes, &out->runtimes);
  if (rc == 0)
    rc =
        read_resources(&e, &spec->capacity, &out->capacity, 1, "spec.capacity");
  if (rc == 0)
    rc = sched_node_fix_dev_used(out);
  if (rc == 0 && spec->has_devices)
    rc = read_devices(&e, &spec->devices, out);
  if (n)
    *n = e.n;
  return rc < 0 ? rc : e.first;
}

/* Runtime of a task: the one runtime its runtime map names ("raw" is the
 * only one larkbus runs; kubernetes or docker is kept so apply can name
 * it as one no node offers). A task naming none or two is refused,
 * naming the task. */
static void
read_task_runtime(errs *e, const bus_runtime *o, sched_template *t,
                  const char *path) {
  char p[128];
  int named = o->has_raw + o->has_kubernetes + o->has_docker;
  snprintf(p, sizeof p, "%s.runtime", path);
  snprintf(t->runtime, sizeof t->runtime, "%s",
           o->has_raw          ? "raw"
           : o->has_kubernetes ? "kubernetes"
                               : "docker");
  if (named != 1) {
    problem(e, BUS_EFIELD, p,
            "task %s: must be a map with one runtime (raw, kubernetes or "
            "docker)",
            t->name);
    snprintf(t->runtime, sizeof t->runtime, "raw");
  }
}

static int
read_task(errs *e, const bus_task *o, sched_job *job, int i) {
  char path[64], p[128], role[16];
  snprintf(path, sizeof path, "spec.tasks[%d]", i);
  sched_template *t = sched_job_add_task(job, "");
  if (!t)
    return -ENOMEM;
  snprintf(p, sizeof p, "%s.name", path);
  read_name(e, o->name, t->name, p);
  if (t->name[0] && sched_job_task_index(job, t->name) < i)
    problem(e, BUS_EFIELD, p, "task %s is listed twice", t->name);
  t->head = o->has_head && o->head;
  snprintf(p, sizeof p, "%s.role", path);
  if (!str_copy(o->role, role, sizeof role) || sched_role_parse(role, &t->role))
    problem(e, BUS_EFIELD, p, "must be Actor, Rollout or Env");
  t->replicas = o->has_replicas ? (uint32_t)o->replicas : 1;
  t->max_retries = o->has_maxRetries ? (uint32_t)o->maxRetries : 0;
  snprintf(p, sizeof p, "%s.nodeSelector", path);
  int rc = read_string_map(e, &o->nodeSelector, &t->selector, &t->nselector, p);
  snprintf(p, sizeof p, "%s.resources", path);
  if (rc == 0)
    rc = read_resources(e, &o->resources, &t->req, 0, p);
  read_task_runtime(e, &o->runtime, t, path);
  return rc;
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
sched_job_read(const bus_job_res *res, sched_job *out, bus_field_err *errv,
               int max, int *n) {
  errs e = {errv, max, 0, 0};
  const bus_job_spec *spec = &res->spec;
  char s[32];
  int rc = 0;
  sched_job_init(out, "");
  read_meta_name(&e, &res->metadata, out->name);
  if (spec->has_domain)
    read_name(&e, spec->domain, out->domain, "spec.domain");
  out->stopped = spec->has_stopped && spec->stopped;
  if (spec->has_strategy && (!str_copy(spec->strategy, s, sizeof s) ||
                             sched_strategy_parse(s, &out->strategy)))
    problem(&e, BUS_EFIELD, "spec.strategy",
            "must be spread, pack, colocate or disaggregate");
  if (spec->tasks.n == 0 || spec->tasks.n > SCHED_MAX_TASKS)
    problem(&e, BUS_EFIELD, "spec.tasks", "must be a list of 1 to %d tasks",
            SCHED_MAX_TASKS);
  for (uint32_t i = 0; i < spec->tasks.n && i < SCHED_MAX_TASKS && !rc; i++)
    rc = read_task(&e, &spec->tasks.v[i], out, (int)i);
  job_checks(&e, out);
  if (n)
    *n = e.n;
  return rc < 0 ? rc : e.first;
}

/* ------------------------------------------------------ from msgpack */

typedef int (*read_fn)(const void *res, void *out, bus_field_err *errv, int max,
                       int *n);

static int
read_node(const void *res, void *out, bus_field_err *errv, int max, int *n) {
  return sched_node_read(res, out, errv, max, n);
}

static int
read_job(const void *res, void *out, bus_field_err *errv, int max, int *n) {
  return sched_job_read(res, out, errv, max, n);
}

/* resource checked against the schema of kind, its problems reported as
 * the readers report theirs, then unpacked as event type's data and read
 * into out. */
static int
from_msgpack(const char *kind, bus_type type, read_fn read,
             const msgpack_object *resource, void *out, bus_field_err *errv,
             int max, int *n) {
  msgpack_zone z;
  int found = 0;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  void *res = msgpack_zone_malloc(&z, bus_type_size(type));
  int rc = res ? bus_schema_check(kind, resource, errv, max, &found) : -ENOMEM;
  if (n)
    *n = found;
  if (!rc)
    rc = bus_data_unpack(type, resource, &z, res);
  if (!rc)
    rc = read(res, out, errv, max, n);
  msgpack_zone_destroy(&z);
  return rc;
}

int
sched_node_from_msgpack(const msgpack_object *resource, sched_node *out,
                        bus_field_err *errv, int max, int *n) {
  sched_node_init(out, "");
  return from_msgpack("Node", BUS_T_NODE_REGISTERED, read_node, resource, out,
                      errv, max, n);
}

int
sched_job_from_msgpack(const msgpack_object *resource, sched_job *out,
                       bus_field_err *errv, int max, int *n) {
  sched_job_init(out, "");
  return from_msgpack("Job", BUS_T_JOB_SUBMITTED, read_job, resource, out, errv,
                      max, n);
}
