/*
 * model.c - nodes and Jobs of the scheduler's model, and their readers
 * from msgpack resources.
 *
 * Invariants: a sched_nodes set is sorted by name with unique names, so a
 * lookup is a binary search and placement's tie-break (name order) is the
 * array order. A node's dev_used has exactly capacity.ndevices entries.
 * The readers never trust their input: every field is type-checked and a
 * wrong one becomes a {path, reason} entry, never a crash; they fill the
 * output as far as they can so all problems are reported at once.
 *
 * This file keeps the rows of the model (names, resources, nodes, Jobs);
 * model_read.c reads them from msgpack resources.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-int.h"
#include "model.h"

/* ---------------------------------------------------------------- names */

static const char *const strategy_names[] = {"spread", "pack", "colocate",
                                             "disaggregate"};
static const char *const role_names[] = {"Actor", "Rollout", "Env"};

#define NNAMES(v) ((unsigned)(sizeof v / sizeof *v))

/* names[i], or NULL out of range. */
static const char *
name_at(const char *const *names, unsigned n, unsigned i) {
  return i < n ? names[i] : NULL;
}

/* The index of s in names into *out; BUS_EINVAL when absent. */
static int
index_of(const char *const *names, unsigned n, const char *s, unsigned *out) {
  for (unsigned i = 0; s && i < n; i++)
    if (!strcmp(s, names[i])) {
      *out = i;
      return 0;
    }
  return BUS_EINVAL;
}

/* The name of an enum's value and its parse, from its table of names. */
#define NAMED_ENUM(fn, type, names)                                            \
  const char *sched_##fn##_name(type v) {                                      \
    return name_at(names, NNAMES(names), (unsigned)v);                         \
  }                                                                            \
  int sched_##fn##_parse(const char *s, type *out) {                           \
    unsigned i;                                                                \
    int rc = index_of(names, NNAMES(names), s, &i);                            \
    if (!rc)                                                                   \
      *out = (type)i;                                                          \
    return rc;                                                                 \
  }

NAMED_ENUM(strategy, sched_strategy, strategy_names)
NAMED_ENUM(role, sched_role, role_names)

unsigned
sched_runtime_bit(const char *name) {
  if (!name)
    return 0;
  if (!strcmp(name, "raw"))
    return SCHED_RT_RAW;
  if (!strcmp(name, "raw+netns"))
    return SCHED_RT_RAW_NETNS;
  return 0;
}

const char *
sched_runtime_name(unsigned bit) {
  if (bit == SCHED_RT_RAW)
    return "raw";
  if (bit == SCHED_RT_RAW_NETNS)
    return "raw+netns";
  return NULL;
}

sched_key
sched_device_key(const char *key) {
  if (!strcmp(key, SCHED_DEVICE_CLASS))
    return SCHED_KEY_CLASS;
  const char *name = !strncmp(key, "robot/", 6)    ? key + 6
                     : !strncmp(key, "camera/", 7) ? key + 7
                                                   : NULL;
  if (!name)
    return SCHED_KEY_BARE;
  return bus_name_valid(name, BUS_NAME_MAX) ? SCHED_KEY_NAMED : SCHED_KEY_BAD;
}

/* ------------------------------------------------------------ resources */

void
sched_resources_clear(sched_resources *r) {
  if (!r)
    return;
  for (int i = 0; i < r->ndevices; i++)
    free(r->devices[i].name);
  free(r->devices);
  memset(r, 0, sizeof *r);
}

static int
device_index(const sched_resources *r, const char *name) {
  for (int i = 0; i < r->ndevices; i++)
    if (!strcmp(r->devices[i].name, name))
      return i;
  return -1;
}

/* Set device name to count in r, a table of at most max entries. */
static int
put_device(sched_resources *r, const char *name, uint32_t count, int max) {
  if (!r || !name || !*name)
    return BUS_EINVAL;
  int i = device_index(r, name);
  if (i >= 0) {
    r->devices[i].count = count;
    return 0;
  }
  if (r->ndevices >= max)
    return BUS_EINVAL;
  sched_device *d =
      realloc(r->devices, (size_t)(r->ndevices + 1) * sizeof *r->devices);
  if (!d)
    return -ENOMEM;
  r->devices = d;
  d[r->ndevices].name = strdup(name);
  if (!d[r->ndevices].name)
    return -ENOMEM;
  d[r->ndevices].flags = 0;
  d[r->ndevices++].count = count;
  return 0;
}

int
sched_resources_set_device(sched_resources *r, const char *name,
                           uint32_t count) {
  return put_device(r, name, count, SCHED_MAX_DEVICES);
}

uint32_t
sched_resources_device(const sched_resources *r, const char *name) {
  int i = r && name ? device_index(r, name) : -1;
  return i < 0 ? 0 : r->devices[i].count;
}

/* ------------------------------------------------------------- key/value */

static void
kv_free(sched_kv *kv, int n) {
  for (int i = 0; i < n; i++) {
    free(kv[i].key);
    free(kv[i].value);
  }
  free(kv);
}

/* Set key=value in the array *kv of *n entries. */
int
sched_kv_set(sched_kv **kv, int *n, const char *key, const char *value) {
  if (!key || !value)
    return BUS_EINVAL;
  char *v = strdup(value);
  if (!v)
    return -ENOMEM;
  for (int i = 0; i < *n; i++)
    if (!strcmp((*kv)[i].key, key)) {
      free((*kv)[i].value);
      (*kv)[i].value = v;
      return 0;
    }
  sched_kv *a = realloc(*kv, (size_t)(*n + 1) * sizeof **kv);
  char *k = strdup(key);
  if (!a || !k) {
    free(v);
    free(k);
    if (a)
      *kv = a;
    return -ENOMEM;
  }
  *kv = a;
  a[*n].key = k;
  a[*n].value = v;
  (*n)++;
  return 0;
}

static void
copy_name(char *dst, const char *src) {
  snprintf(dst, SCHED_NAME_SZ, "%s", src ? src : "");
}

/* ----------------------------------------------------------------- nodes */

void
sched_node_init(sched_node *n, const char *name) {
  memset(n, 0, sizeof *n);
  copy_name(n->name, name);
  n->runtimes = SCHED_RT_RAW;
  n->ready = 1;
}

void
sched_node_clear(sched_node *n) {
  if (!n)
    return;
  kv_free(n->labels, n->nlabels);
  sched_resources_clear(&n->capacity);
  free(n->dev_used);
  memset(n, 0, sizeof *n);
}

int
sched_node_set_label(sched_node *n, const char *key, const char *value) {
  return sched_kv_set(&n->labels, &n->nlabels, key, value);
}

const char *
sched_node_label(const sched_node *n, const char *key) {
  for (int i = 0; i < n->nlabels; i++)
    if (!strcmp(n->labels[i].key, key))
      return n->labels[i].value;
  return NULL;
}

int
sched_node_set_device(sched_node *n, const char *name, uint32_t count) {
  uint32_t *u =
      realloc(n->dev_used, (size_t)(n->capacity.ndevices + 1) * sizeof *u);
  if (!u)
    return -ENOMEM;
  n->dev_used = u;
  int had = n->capacity.ndevices;
  int rc = put_device(&n->capacity, name, count, SCHED_NODE_DEVICES);
  if (rc == 0 && n->capacity.ndevices > had)
    u[had] = 0;
  return rc;
}

int
sched_node_add_named(sched_node *n, const char *name, int subnet) {
  if (sched_device_key(name) != SCHED_KEY_NAMED ||
      device_index(&n->capacity, name) >= 0)
    return BUS_EINVAL;
  uint32_t cls = sched_resources_device(&n->capacity, SCHED_DEVICE_CLASS);
  int rc = sched_node_set_device(n, SCHED_DEVICE_CLASS, cls + 1);
  if (rc == 0 && (rc = sched_node_set_device(n, name, 1)))
    sched_node_set_device(n, SCHED_DEVICE_CLASS, cls); /* as it was */
  if (rc)
    return rc;
  n->capacity.devices[n->capacity.ndevices - 1].flags =
      SCHED_DEV_NAMED | (subnet ? SCHED_DEV_SUBNET : 0);
  n->nnamed++;
  return 0;
}

uint32_t
sched_node_free_gpus(const sched_node *n) {
  uint32_t taken = (uint32_t)__builtin_popcountll(n->gpu_taken);
  return n->capacity.gpu > taken ? n->capacity.gpu - taken : 0;
}

void
sched_nodes_init(sched_nodes *s) {
  memset(s, 0, sizeof *s);
}

void
sched_nodes_clear(sched_nodes *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++) {
    sched_node_clear(s->v[i]);
    free(s->v[i]);
  }
  free(s->v);
  memset(s, 0, sizeof *s);
}

static int
by_name(const void *key, const void *item) {
  return strcmp(key, (*(sched_node *const *)item)->name);
}

/* Index of name, or of where it would go (*found 0). */
static size_t
nodes_search(const sched_nodes *s, const char *name, int *found) {
  return bus_bsearch(name, s->v, s->n, sizeof *s->v, by_name, found);
}

sched_node *
sched_nodes_find(const sched_nodes *s, const char *name) {
  int found;
  if (!s || !name)
    return NULL;
  size_t i = nodes_search(s, name, &found);
  return found ? s->v[i] : NULL;
}

/* Carry old's state into fresh (same name): allocations, ready, cordon. */
static void
carry_state(sched_node *fresh, const sched_node *old) {
  fresh->ready = old->ready;
  fresh->cordoned = old->cordoned;
  fresh->cpu_used_m = old->cpu_used_m;
  fresh->memory_used_mib = old->memory_used_mib;
  fresh->gpu_taken = old->gpu_taken;
  fresh->pods = old->pods;
  for (int i = 0; i < fresh->capacity.ndevices; i++) {
    int j = device_index(&old->capacity, fresh->capacity.devices[i].name);
    fresh->dev_used[i] = j < 0 ? 0 : old->dev_used[j];
  }
}

/* Make sure dev_used has one entry per device. */
int
sched_node_fix_dev_used(sched_node *n) {
  size_t k = (size_t)n->capacity.ndevices;
  uint32_t *u = calloc(k ? k : 1, sizeof *u);
  if (!u)
    return -ENOMEM;
  if (n->dev_used)
    memcpy(u, n->dev_used, k * sizeof *u);
  free(n->dev_used);
  n->dev_used = u;
  return 0;
}

int
sched_nodes_put(sched_nodes *s, sched_node *node) {
  int found, rc;
  if (!bus_name_valid(node->name, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "node name '%s' is not valid", node->name);
  if ((rc = sched_node_fix_dev_used(node)) < 0)
    return rc;
  size_t i = nodes_search(s, node->name, &found);
  sched_node *slot = found ? s->v[i] : malloc(sizeof *slot);
  if (!slot)
    return -ENOMEM;
  if (!found && bus_grow(&s->v, s->n, &s->cap, sizeof *s->v, 16)) {
    free(slot);
    return -ENOMEM;
  }
  if (found) {
    carry_state(node, slot);
    sched_node_clear(slot);
  } else {
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
    s->v[i] = slot;
    s->n++;
  }
  *slot = *node;
  memset(node, 0, sizeof *node);
  return 0;
}

int
sched_nodes_remove(sched_nodes *s, const char *name) {
  int found;
  size_t i = nodes_search(s, name, &found);
  if (!found)
    return bus_error(BUS_ENOT_FOUND, "no node %s", name);
  sched_node_clear(s->v[i]);
  free(s->v[i]);
  memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
  s->n--;
  return 0;
}

unsigned
sched_nodes_runtimes(const sched_nodes *s) {
  unsigned m = 0;
  for (size_t i = 0; s && i < s->n; i++)
    m |= s->v[i]->runtimes;
  return m;
}

/* ------------------------------------------------------------------ jobs */

void
sched_job_init(sched_job *job, const char *name) {
  memset(job, 0, sizeof *job);
  copy_name(job->name, name);
  job->strategy = SCHED_SPREAD;
}

static void
template_clear(sched_template *t) {
  kv_free(t->selector, t->nselector);
  sched_resources_clear(&t->req);
}

void
sched_job_clear(sched_job *job) {
  if (!job)
    return;
  for (int i = 0; i < job->ntasks; i++)
    template_clear(&job->tasks[i]);
  free(job->tasks);
  memset(job, 0, sizeof *job);
}

sched_template *
sched_job_add_task(sched_job *job, const char *name) {
  if (job->ntasks >= SCHED_MAX_TASKS)
    return NULL;
  sched_template *t =
      realloc(job->tasks, (size_t)(job->ntasks + 1) * sizeof *t);
  if (!t)
    return NULL;
  job->tasks = t;
  t += job->ntasks++;
  memset(t, 0, sizeof *t);
  copy_name(t->name, name);
  t->replicas = 1;
  snprintf(t->runtime, sizeof t->runtime, "raw");
  return t;
}

int
sched_template_set_selector(sched_template *t, const char *key,
                            const char *value) {
  return sched_kv_set(&t->selector, &t->nselector, key, value);
}

size_t
sched_job_pods(const sched_job *job) {
  size_t n = 0;
  for (int i = 0; i < job->ntasks; i++)
    n += job->tasks[i].replicas;
  return n;
}

int
sched_job_sized(const sched_job *job, size_t *pods) {
  if (!job || job->ntasks <= 0)
    return bus_error(BUS_EINVAL, "a Job needs at least one task");
  *pods = sched_job_pods(job);
  if (*pods > SCHED_MAX_PODS)
    return bus_error(BUS_EINVAL, "job %s has %zu pods: at most %d", job->name,
                     *pods, SCHED_MAX_PODS);
  return 0;
}

int
sched_job_task_index(const sched_job *job, const char *name) {
  for (int i = 0; i < job->ntasks; i++)
    if (!strcmp(job->tasks[i].name, name))
      return i;
  return -1;
}
