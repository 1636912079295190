/*
 * expand.c - Job -> Tasks -> Pods, the Ray annotations and head, and the
 * name and runtime checks of apply.
 *
 * Invariants: names are derived by exactly one pair of functions
 * (sched_task_name, sched_pod_name), so the expansion, the collision check
 * and placement always agree on them. Order is fixed: template order, then
 * replica order, which makes ray-node-rank-start a running total and pods'
 * indices stable across replays.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"

int
sched_task_name(const char *job, const char *tmpl, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%s-%s", job, tmpl);
  if (n < 0 || (size_t)n >= cap || n > BUS_DERIVED_NAME_MAX)
    return bus_error(BUS_ENAME,
                     "%s-%s: a derived name has at most %d "
                     "characters",
                     job, tmpl, BUS_DERIVED_NAME_MAX);
  return 0;
}

int
sched_pod_name(const char *task, uint32_t i, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%s-%u", task, (unsigned)i);
  if (n < 0 || (size_t)n >= cap || n > BUS_DERIVED_NAME_MAX)
    return bus_error(BUS_ENAME,
                     "%s-%u: a derived name has at most %d "
                     "characters",
                     task, (unsigned)i, BUS_DERIVED_NAME_MAX);
  return 0;
}

int
sched_job_head(const sched_job *job) {
  if (!job || job->ntasks <= 0)
    return -1;
  for (int i = 0; i < job->ntasks; i++)
    if (job->tasks[i].head)
      return i;
  return 0;
}

void
sched_expansion_clear(sched_expansion *x) {
  if (!x)
    return;
  free(x->tasks);
  free(x->pods);
  memset(x, 0, sizeof *x);
}

/* Tasks with their annotations; pods counted. */
static int
expand_tasks(const sched_job *job, sched_expansion *x) {
  int head = sched_job_head(job);
  size_t pods = 0;
  for (int i = 0; i < job->ntasks; i++) {
    sched_task_info *t = &x->tasks[i];
    int rc =
        sched_task_name(job->name, job->tasks[i].name, t->name, sizeof t->name);
    if (rc)
      return rc;
    t->tmpl = i;
    t->head = i == head;
    t->pods = job->tasks[i].replicas;
    t->rank_start = (uint32_t)pods;
    t->first_pod = pods;
    pods += t->pods;
  }
  x->ntasks = job->ntasks;
  x->npods = pods;
  x->total_nodes = (uint32_t)pods;
  if (head >= 0)
    snprintf(x->head_task, sizeof x->head_task, "%s", x->tasks[head].name);
  return 0;
}

static int
expand_pods(sched_expansion *x) {
  size_t k = 0;
  for (int i = 0; i < x->ntasks; i++)
    for (uint32_t r = 0; r < x->tasks[i].pods; r++, k++) {
      sched_pod *p = &x->pods[k];
      int rc = sched_pod_name(x->tasks[i].name, r, p->name, sizeof p->name);
      if (rc)
        return rc;
      p->task = i;
      p->replica = r;
      p->phase = SCHED_PH_PENDING;
    }
  return 0;
}

int
sched_expand(const sched_job *job, sched_expansion *out) {
  size_t pods;
  memset(out, 0, sizeof *out);
  int rc = sched_job_sized(job, &pods);
  if (rc)
    return rc;
  out->tasks = calloc((size_t)job->ntasks, sizeof *out->tasks);
  out->pods = calloc(pods ? pods : 1, sizeof *out->pods);
  if (!out->tasks || !out->pods)
    rc = -ENOMEM;
  else if ((rc = expand_tasks(job, out)) == 0)
    rc = expand_pods(out);
  if (rc)
    sched_expansion_clear(out);
  return rc;
}

int
sched_pack_ray_annotations(msgpack_packer *pk, const sched_expansion *x,
                           int i) {
  char num[24];
  if (!x || i < 0 || i >= x->ntasks)
    return BUS_EINVAL;
  msgpack_pack_map(pk, 4);
  bus_pack_str(pk, "ray-role");
  bus_pack_str(pk, x->tasks[i].head ? "head" : "worker");
  bus_pack_str(pk, "ray-total-nodes");
  snprintf(num, sizeof num, "%u", (unsigned)x->total_nodes);
  bus_pack_str(pk, num);
  bus_pack_str(pk, "ray-node-rank-start");
  snprintf(num, sizeof num, "%u", (unsigned)x->tasks[i].rank_start);
  bus_pack_str(pk, num);
  bus_pack_str(pk, "ray-head-task-name");
  bus_pack_str(pk, x->head_task);
  return 0;
}

/* ------------------------------------------------------------ Ray head */

int
sched_spec_ray_head(const bus_job_spec *s) {
  for (uint32_t i = 0; s && i < s->tasks.n; i++)
    if (s->tasks.v[i].has_head && s->tasks.v[i].head)
      return (int)i;
  return -1;
}

int
sched_ray_address(const char *vip, const char *local_ip, const char *node_addr,
                  uint32_t port, char *out, size_t cap) {
  const char *a = vip && *vip             ? vip
                  : local_ip && *local_ip ? local_ip
                                          : node_addr;
  int n = -1;
  if (a && *a)
    n = snprintf(out, cap, strchr(a, ':') ? "[%s]:%u" : "%s:%u", a,
                 (unsigned)port);
  if (n < 0 || (size_t)n >= cap) {
    if (cap)
      out[0] = 0;
    return BUS_ENOT_FOUND;
  }
  return 0;
}

/* ------------------------------------------------------------ names */

static int refuse(bus_field_err *err, int code, int tmpl, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fill *err (path of the template, or metadata.name) and the last error. */
static int
refuse(bus_field_err *err, int code, int tmpl, const char *fmt, ...) {
  char reason[sizeof err->reason];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (err) {
    if (tmpl < 0)
      snprintf(err->path, sizeof err->path, "metadata.name");
    else
      snprintf(err->path, sizeof err->path, "spec.tasks[%d].name", tmpl);
    snprintf(err->reason, sizeof err->reason, "%s", reason);
  }
  return bus_error(code, "%s", reason);
}

/* One object of job against the existing ones. */
static int
check_one(const sched_job *job, const char *kind, const char *name, int tmpl,
          sched_exists_fn exists, void *ud, bus_field_err *err) {
  const char *owner = exists ? exists(kind, name, ud) : NULL;
  if (!owner || !strcmp(owner, job->name))
    return 0;
  if (tmpl < 0)
    return refuse(err, BUS_EEXISTS, tmpl,
                  "job %s collides with the job of that "
                  "name owned by %s",
                  name, owner);
  return refuse(err, BUS_EEXISTS, tmpl,
                "%s %s (job %s, template %s) collides with %s %s of job %s",
                kind, name, job->name, job->tasks[tmpl].name, kind, name,
                owner);
}

/* The same derived task name twice in one Job (repeated template). */
static int
check_duplicates(const sched_job *job, bus_field_err *err) {
  for (int i = 1; i < job->ntasks; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(job->tasks[i].name, job->tasks[j].name))
        return refuse(err, BUS_EEXISTS, i,
                      "task %s-%s is derived twice in job %s", job->name,
                      job->tasks[i].name, job->name);
  return 0;
}

static int
check_task(const sched_job *job, int i, sched_exists_fn exists, void *ud,
           bus_field_err *err) {
  char task[SCHED_DNAME_SZ], pod[SCHED_DNAME_SZ];
  const sched_template *t = &job->tasks[i];
  int rc;
  if (!bus_name_valid(t->name, BUS_NAME_MAX))
    return refuse(err, BUS_ENAME, i, "task name '%s' is not a name", t->name);
  if (sched_task_name(job->name, t->name, task, sizeof task) ||
      sched_pod_name(task, t->replicas ? t->replicas - 1 : 0, pod, sizeof pod))
    return refuse(err, BUS_ENAME, i,
                  "the names derived from %s-%s are longer than 253", job->name,
                  t->name);
  if ((rc = check_one(job, "task", task, i, exists, ud, err)))
    return rc;
  for (uint32_t r = 0; exists && r < t->replicas; r++) {
    sched_pod_name(task, r, pod, sizeof pod);
    if ((rc = check_one(job, "pod", pod, i, exists, ud, err)))
      return rc;
  }
  return 0;
}

int
sched_names_check(const sched_job *job, sched_exists_fn exists, void *ud,
                  bus_field_err *err) {
  int rc;
  if (!bus_name_valid(job->name, BUS_NAME_MAX))
    return refuse(err, BUS_ENAME, -1, "job name '%s' is not a name", job->name);
  if ((rc = check_duplicates(job, err)))
    return rc;
  if ((rc = check_one(job, "job", job->name, -1, exists, ud, err)))
    return rc;
  for (int i = 0; i < job->ntasks; i++)
    if ((rc = check_task(job, i, exists, ud, err)))
      return rc;
  return 0;
}

/* ---------------------------------------------------------- runtimes */

unsigned
sched_job_runtimes(const sched_job *job) {
  unsigned m = 0;
  for (int i = 0; job && i < job->ntasks; i++)
    m |= sched_runtime_bit(job->tasks[i].runtime);
  return m;
}

int
sched_job_runtimes_check(const sched_job *job, unsigned offered,
                         bus_field_err *errs, int max, int *n) {
  int count = 0;
  for (int i = 0; i < job->ntasks; i++) {
    const sched_template *t = &job->tasks[i];
    unsigned bit = sched_runtime_bit(t->runtime);
    if (bit && (bit & offered))
      continue;
    if (errs && count < max) {
      snprintf(errs[count].path, sizeof errs[count].path,
               "spec.tasks[%d].runtime", i);
      snprintf(errs[count].reason, sizeof errs[count].reason,
               "task %s needs runtime %s, which no node offers", t->name,
               t->runtime);
    }
    count++;
  }
  if (n)
    *n = count;
  return count ? BUS_EFIELD : 0;
}
