/*
 * placement.c - filter, score and gang-bind a Job's pods.
 *
 * Invariants and why they hold:
 * - All or nothing: every pod booked during sched_place is remembered with
 *   its node; when one pod finds no node, the booked ones are unbooked in
 *   reverse order before returning, which restores each counter and GPU
 *   bit exactly (booking and unbooking are exact inverses).
 * - Deterministic: candidates are visited in the set's name order and the
 *   heap compares (score, secondary score, name order), so no two
 *   candidates are ever equal.
 * - Fast: the static filters (selector, runtime, Ready, devices offered)
 *   run once per template over all nodes. Each template then keeps its
 *   candidates in a max-heap; booking a pod changes only the top node's
 *   score, so it is sifted down, and a node that no longer fits (capacity
 *   only shrinks while one Job is placed, disaggregate's marks only grow)
 *   leaves the heap for good.
 * - A node's scratch fields are valid only when scratch_epoch equals the
 *   set's epoch, which each sched_place advances: no reset pass needed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "placement.h"

#define PPM 1000000 /* fractions in parts per million */
#define ROLE_ACTOR 1u
#define ROLE_OTHER 2u /* Rollout and Env */

/* ------------------------------------------------------------- lifecycle */

void
sched_placement_init(sched_placement *p) {
  memset(p, 0, sizeof *p);
}

void
sched_placement_clear(sched_placement *p) {
  if (!p)
    return;
  free(p->bindings);
  free(p->why.scores);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ filters */

/* 1 when value is one of the comma-separated items of list. */
static int
in_list(const char *list, const char *value) {
  size_t vl = strlen(value);
  for (const char *s = list;;) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len == vl && !memcmp(s, value, vl))
      return 1;
    if (!comma)
      return 0;
    s = comma + 1;
  }
}

int
sched_selector_match(const sched_template *t, const sched_node *node) {
  for (int i = 0; i < t->nselector; i++) {
    const char *v = sched_node_label(node, t->selector[i].key);
    if (!v || !in_list(t->selector[i].value, v))
      return 0;
  }
  return 1;
}

/* The index of device name on n, or -1. */
static int
node_device(const sched_node *n, const char *name) {
  for (int j = 0; j < n->capacity.ndevices; j++)
    if (!strcmp(n->capacity.devices[j].name, name))
      return j;
  return -1;
}

/* The node's slot for each device t asks for (-1: not offered). Returns 0
 * when a device asked for (count > 0) is not offered at all, else 1. */
static int
resolve_slots(const sched_template *t, const sched_node *n, int16_t *slots) {
  int ok = 1;
  for (int d = 0; d < t->req.ndevices; d++) {
    slots[d] = (int16_t)node_device(n, t->req.devices[d].name);
    if (slots[d] < 0 && t->req.devices[d].count)
      ok = 0;
  }
  return ok;
}

/* Why a pod of t does not fit on n now; NOFIT_NONE when it does. */
enum nofit { NOFIT_NONE = 0, NOFIT_CPU, NOFIT_MEMORY, NOFIT_GPU, NOFIT_DEVICE };

static enum nofit
fits(const sched_node *n, const sched_template *t, const int16_t *slots) {
  if (n->cpu_used_m + t->req.cpu_m > n->capacity.cpu_m)
    return NOFIT_CPU;
  if (n->memory_used_mib + t->req.memory_mib > n->capacity.memory_mib)
    return NOFIT_MEMORY;
  if (t->req.gpu > sched_node_free_gpus(n))
    return NOFIT_GPU;
  for (int d = 0; d < t->req.ndevices; d++) {
    uint32_t want = t->req.devices[d].count;
    if (want && (uint64_t)n->dev_used[slots[d]] + want >
                    n->capacity.devices[slots[d]].count)
      return NOFIT_DEVICE;
  }
  return NOFIT_NONE;
}

/* Mean fraction used (ppm) once cpu, memory, gpu more are booked. */
static int64_t
allocated_after(const sched_node *n, uint64_t cpu, uint64_t mem, uint32_t gpu) {
  int64_t sum = 0, dims = 0;
  if (n->capacity.cpu_m) {
    sum += (int64_t)((n->cpu_used_m + cpu) * PPM / n->capacity.cpu_m);
    dims++;
  }
  if (n->capacity.memory_mib) {
    sum += (int64_t)((n->memory_used_mib + mem) * PPM / n->capacity.memory_mib);
    dims++;
  }
  if (n->capacity.gpu) {
    uint64_t taken = (uint64_t)__builtin_popcountll(n->gpu_taken) + gpu;
    sum += (int64_t)(taken * PPM / n->capacity.gpu);
    dims++;
  }
  return dims ? sum / dims : 0;
}

/* ------------------------------------------------------------ booking */

static void
book(sched_node *n, const sched_template *t, const int16_t *slots,
     sched_binding *b) {
  n->cpu_used_m += t->req.cpu_m;
  n->memory_used_mib += t->req.memory_mib;
  b->ngpus = 0;
  for (uint32_t i = 0; i < n->capacity.gpu && (uint32_t)b->ngpus < t->req.gpu;
       i++)
    if (!(n->gpu_taken & (1ull << i))) {
      n->gpu_taken |= 1ull << i;
      b->gpus[b->ngpus++] = (uint8_t)i;
    }
  for (int d = 0; d < t->req.ndevices; d++)
    if (slots[d] >= 0)
      n->dev_used[slots[d]] += t->req.devices[d].count;
  n->pods++;
}

static uint64_t
sub_clamp(uint64_t a, uint64_t b) {
  return a > b ? a - b : 0;
}

static void
unbook(sched_node *n, const sched_template *t, const int16_t *slots,
       const sched_binding *b) {
  n->cpu_used_m = sub_clamp(n->cpu_used_m, t->req.cpu_m);
  n->memory_used_mib = sub_clamp(n->memory_used_mib, t->req.memory_mib);
  for (int i = 0; i < b->ngpus && i < SCHED_MAX_GPUS; i++)
    if (b->gpus[i] < SCHED_MAX_GPUS)
      n->gpu_taken &= ~(1ull << b->gpus[i]);
  for (int d = 0; d < t->req.ndevices; d++)
    if (slots[d] >= 0)
      n->dev_used[slots[d]] =
          (uint32_t)sub_clamp(n->dev_used[slots[d]], t->req.devices[d].count);
  n->pods = n->pods ? n->pods - 1 : 0;
}

/* ------------------------------------------------------------- context */

typedef struct cand {
  sched_node *node;
  uint32_t idx; /* name order */
  int64_t key, key2;
} cand;

typedef struct counts {
  uint32_t nodes, selector, runtime, ready, capacity;
  uint32_t notready, cordoned;
} counts;

typedef struct ctx {
  sched_nodes *nodes;
  const sched_job *job;
  sched_placement *out;
  uint64_t epoch;
  cand *c;        /* candidates of the current template */
  int16_t *slots; /* nodes->n x SCHED_MAX_DEVICES: per candidate */
  size_t nc;
  size_t *heap;
  size_t nheap;
  sched_node **bnode; /* node of each binding made */
  size_t nb;
  sched_node **chosen; /* nodes that took a pod, in first-use order */
  size_t nchosen;
  counts best; /* the tightest template's counts */
  int have_best;
} ctx;

static int16_t *
cand_slots(ctx *x, size_t i) {
  return x->slots + i * SCHED_MAX_DEVICES;
}

static int
ctx_init(ctx *x, sched_nodes *nodes, const sched_job *job, sched_placement *out,
         size_t pods) {
  memset(x, 0, sizeof *x);
  x->nodes = nodes;
  x->job = job;
  x->out = out;
  x->epoch = ++nodes->epoch;
  size_t nn = nodes->n ? nodes->n : 1;
  x->c = malloc(nn * sizeof *x->c);
  x->slots = malloc(nn * SCHED_MAX_DEVICES * sizeof *x->slots);
  x->heap = malloc(nn * sizeof *x->heap);
  x->bnode = malloc((pods ? pods : 1) * sizeof *x->bnode);
  x->chosen = malloc(nn * sizeof *x->chosen);
  out->bindings = calloc(pods ? pods : 1, sizeof *out->bindings);
  if (!x->c || !x->slots || !x->heap || !x->bnode || !x->chosen ||
      !out->bindings)
    return -ENOMEM;
  return 0;
}

static void
ctx_free(ctx *x) {
  free(x->c);
  free(x->slots);
  free(x->heap);
  free(x->bnode);
  free(x->chosen);
}

/* -------------------------------------------------------------- scores */

static unsigned
role_bit(sched_role r) {
  return r == SCHED_ACTOR ? ROLE_ACTOR : ROLE_OTHER;
}

static int
hosts_job(const ctx *x, const sched_node *n) {
  return n->scratch_epoch == x->epoch;
}

/* disaggregate: n already hosts the Job's pods of the other side. */
static int
role_conflict(const ctx *x, const sched_node *n, const sched_template *t) {
  if (x->job->strategy != SCHED_DISAGGREGATE || !hosts_job(x, n))
    return 0;
  return (n->scratch_roles & ~role_bit(t->role)) != 0;
}

/* Heap keys of a candidate for the next pod of t. */
static void
score(const ctx *x, cand *c, const sched_template *t) {
  const sched_node *n = c->node;
  int64_t a = allocated_after(n, t->req.cpu_m, t->req.memory_mib, t->req.gpu);
  switch (x->job->strategy) {
  case SCHED_PACK:
  case SCHED_DISAGGREGATE:
    c->key = a;
    c->key2 = n->pods;
    break;
  case SCHED_COLOCATE:
    c->key = (hosts_job(x, n) ? 2 * PPM : 0) + (PPM - a);
    c->key2 = -(int64_t)n->pods;
    break;
  default:
    c->key = -a;
    c->key2 = -(int64_t)n->pods;
  }
}

/* The score shown in why, 0..100, for the node's first pod of the Job. */
static int64_t
shown_score(const ctx *x, const sched_node *n, const sched_template *t) {
  int64_t a = allocated_after(n, t->req.cpu_m, t->req.memory_mib, t->req.gpu);
  int64_t pct = a / (PPM / 100);
  if (x->job->strategy == SCHED_PACK || x->job->strategy == SCHED_DISAGGREGATE)
    return pct;
  return 100 - pct;
}

/* ---------------------------------------------------------------- heap */

static int
better(const ctx *x, size_t a, size_t b) {
  const cand *p = &x->c[a], *q = &x->c[b];
  if (p->key != q->key)
    return p->key > q->key;
  if (p->key2 != q->key2)
    return p->key2 > q->key2;
  return p->idx < q->idx;
}

static void
sift_down(ctx *x, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < x->nheap && better(x, x->heap[l], x->heap[m]))
      m = l;
    if (r < x->nheap && better(x, x->heap[r], x->heap[m]))
      m = r;
    if (m == i)
      return;
    size_t tmp = x->heap[i];
    x->heap[i] = x->heap[m];
    x->heap[m] = tmp;
    i = m;
  }
}

static void
heap_build(ctx *x) {
  x->nheap = x->nc;
  for (size_t i = 0; i < x->nc; i++)
    x->heap[i] = i;
  for (size_t i = x->nheap / 2; i-- > 0;)
    sift_down(x, i);
}

static void
heap_pop(ctx *x) {
  x->heap[0] = x->heap[--x->nheap];
  sift_down(x, 0);
}

/* ------------------------------------------------------------- filter */

/* The static filters of t over every node: candidates into x->c, counts
 * into *k. */
static void
filter(ctx *x, const sched_template *t, counts *k) {
  unsigned rt = sched_runtime_bit(t->runtime);
  memset(k, 0, sizeof *k);
  x->nc = 0;
  k->nodes = (uint32_t)x->nodes->n;
  for (size_t i = 0; i < x->nodes->n; i++) {
    sched_node *n = x->nodes->v[i];
    if (!sched_selector_match(t, n))
      continue;
    k->selector++;
    if (!(n->runtimes & rt))
      continue;
    k->runtime++;
    if (!n->ready || n->cordoned) {
      k->notready += !n->ready;
      k->cordoned += n->ready && n->cordoned;
      continue;
    }
    k->ready++;
    cand *c = &x->c[x->nc];
    if (!resolve_slots(t, n, cand_slots(x, x->nc)))
      continue;
    c->node = n;
    c->idx = (uint32_t)i;
    if (fits(n, t, cand_slots(x, x->nc)) == NOFIT_NONE &&
        !role_conflict(x, n, t))
      k->capacity++;
    x->nc++;
  }
}

/* Keep the counts of the tightest template for why. */
static void
keep_counts(ctx *x, const counts *k) {
  if (!x->have_best || k->capacity < x->best.capacity) {
    x->best = *k;
    x->have_best = 1;
  }
}

/* --------------------------------------------------------------- reasons */

static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
append(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  va_list ap;
  if (len + 1 >= cap)
    return;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* What one pod of t asks for: "(4 cpu, 2048 MiB, 2 GPUs, x 1)". */
static void
describe_request(char *buf, size_t cap, const sched_template *t) {
  const char *sep = "";
  append(buf, cap, " (");
  if (t->req.cpu_m) {
    append(buf, cap, "%s%llu cpu", sep,
           (unsigned long long)t->req.cpu_m / 1000);
    sep = ", ";
  }
  if (t->req.memory_mib) {
    append(buf, cap, "%s%llu MiB", sep, (unsigned long long)t->req.memory_mib);
    sep = ", ";
  }
  if (t->req.gpu) {
    append(buf, cap, "%s%u GPU%s", sep, t->req.gpu, t->req.gpu > 1 ? "s" : "");
    sep = ", ";
  }
  for (int d = 0; d < t->req.ndevices; d++) {
    append(buf, cap, "%s%s %u", sep, t->req.devices[d].name,
           t->req.devices[d].count);
    sep = ", ";
  }
  append(buf, cap, "%s)", *sep ? "" : "nothing");
}

static void
part(char *buf, size_t cap, int *first, uint32_t count, const char *fmt,
     const char *arg) {
  char text[160];
  if (!count)
    return;
  snprintf(text, sizeof text, fmt, arg);
  append(buf, cap, "%s%u %s", *first ? ": " : ", ", (unsigned)count, text);
  *first = 0;
}

/* The Pending reason when pod `replica` of template t finds no node, with
 * the Job's pods booked so far still in place. */
static void
explain(ctx *x, const sched_template *t, uint32_t replica, size_t placed) {
  char *buf = x->out->reason, task[SCHED_DNAME_SZ], gpus[32];
  size_t cap = sizeof x->out->reason;
  uint32_t why[5] = {0}, conflict = 0, nodev = 0;
  int first = 1;
  counts k;
  filter(x, t, &k);
  for (size_t i = 0; i < x->nc; i++) {
    if (role_conflict(x, x->c[i].node, t))
      conflict++;
    else
      why[fits(x->c[i].node, t, cand_slots(x, i))]++;
  }
  nodev = k.ready - (uint32_t)x->nc;
  sched_task_name(x->job->name, t->name, task, sizeof task);
  buf[0] = 0;
  append(buf, cap, "task %s: 0/%u nodes can take pod %s-%u", task, k.nodes,
         task, (unsigned)replica);
  describe_request(buf, cap, t);
  part(buf, cap, &first, k.nodes - k.selector, "fail the selector%s", "");
  part(buf, cap, &first, k.selector - k.runtime, "lack runtime %s", t->runtime);
  part(buf, cap, &first, k.notready, "not ready%s", "");
  part(buf, cap, &first, k.cordoned, "cordoned%s", "");
  part(buf, cap, &first, nodev, "lack a device asked for%s", "");
  part(buf, cap, &first, conflict, "%s",
       t->role == SCHED_ACTOR ? "host the Job's Rollout/Env pods"
                              : "host the Job's Actor pods");
  part(buf, cap, &first, why[NOFIT_CPU], "lack cpu%s", "");
  part(buf, cap, &first, why[NOFIT_MEMORY], "lack memory%s", "");
  snprintf(gpus, sizeof gpus, "%u", t->req.gpu);
  part(buf, cap, &first, why[NOFIT_GPU], "have fewer than %s free GPUs", gpus);
  part(buf, cap, &first, why[NOFIT_DEVICE], "lack free devices%s", "");
  if (placed)
    append(buf, cap, "; %zu of %zu pods fit before", placed,
           sched_job_pods(x->job));
}

/* ------------------------------------------------------------- binding */

/* Bind the next pod of t (template i, replica r) to n. */
static int
bind_pod(ctx *x, sched_node *n, int i, uint32_t r, const int16_t *slots,
         const uint32_t *attempts) {
  const sched_template *t = &x->job->tasks[i];
  sched_binding *b = &x->out->bindings[x->nb];
  int rc = sched_task_name(x->job->name, t->name, b->task, sizeof b->task);
  if (rc == 0)
    rc = sched_pod_name(b->task, r, b->pod, sizeof b->pod);
  if (rc)
    return rc;
  memcpy(b->node, n->name, sizeof b->node);
  b->tmpl = i;
  b->replica = r;
  b->attempt = attempts ? attempts[x->nb] : 0;
  b->runtime = sched_runtime_bit(t->runtime);
  if (!hosts_job(x, n)) {
    n->scratch_epoch = x->epoch;
    n->scratch_roles = 0;
    n->scratch_score = shown_score(x, n, t);
    x->chosen[x->nchosen++] = n;
  }
  n->scratch_roles |= role_bit(t->role);
  book(n, t, slots, b);
  x->bnode[x->nb++] = n;
  return 0;
}

/* Undo every booking of this placement, newest first. */
static void
rollback(ctx *x) {
  int16_t slots[SCHED_MAX_DEVICES];
  while (x->nb > 0) {
    x->nb--;
    const sched_binding *b = &x->out->bindings[x->nb];
    const sched_template *t = &x->job->tasks[b->tmpl];
    resolve_slots(t, x->bnode[x->nb], slots);
    unbook(x->bnode[x->nb], t, slots, b);
  }
  for (size_t i = 0; i < x->nchosen; i++)
    x->chosen[i]->scratch_epoch = 0;
  x->nchosen = 0;
}

/* All pods of template i, best candidate first. 1 bound, 0 no room. */
static int
place_template(ctx *x, int i, const uint32_t *attempts, int *rc) {
  const sched_template *t = &x->job->tasks[i];
  counts k;
  filter(x, t, &k);
  keep_counts(x, &k);
  for (size_t j = 0; j < x->nc; j++)
    score(x, &x->c[j], t);
  heap_build(x);
  for (uint32_t r = 0; r < t->replicas; r++) {
    for (;;) {
      if (x->nheap == 0) {
        explain(x, t, r, x->nb);
        return 0;
      }
      size_t top = x->heap[0];
      cand *c = &x->c[top];
      if (fits(c->node, t, cand_slots(x, top)) == NOFIT_NONE &&
          !role_conflict(x, c->node, t)) {
        if ((*rc = bind_pod(x, c->node, i, r, cand_slots(x, top), attempts)))
          return 0;
        score(x, c, t);
        sift_down(x, 0);
        break;
      }
      heap_pop(x);
    }
  }
  return 1;
}

/* ------------------------------------------------------------- colocate */

/* Everything the Job asks for, summed over its pods. */
typedef struct total {
  uint64_t cpu_m, memory_mib, gpu;
} total;

/* 1 when n passes every template's static filters and has room for the
 * whole Job at once. */
static int
whole_job_fits(const ctx *x, const sched_node *n, const total *tot) {
  if (!n->ready || n->cordoned ||
      n->cpu_used_m + tot->cpu_m > n->capacity.cpu_m ||
      n->memory_used_mib + tot->memory_mib > n->capacity.memory_mib ||
      tot->gpu > sched_node_free_gpus(n))
    return 0;
  for (int i = 0; i < x->job->ntasks; i++) {
    const sched_template *t = &x->job->tasks[i];
    if (!sched_selector_match(t, n) ||
        !(n->runtimes & sched_runtime_bit(t->runtime)))
      return 0;
    for (int d = 0; d < t->req.ndevices; d++) {
      uint64_t want = 0;
      const char *name = t->req.devices[d].name;
      for (int j = 0; j < x->job->ntasks; j++)
        want += (uint64_t)sched_resources_device(&x->job->tasks[j].req, name) *
                x->job->tasks[j].replicas;
      int slot = node_device(n, name);
      if (want && (slot < 0 ||
                   n->dev_used[slot] + want > n->capacity.devices[slot].count))
        return 0;
    }
  }
  return 1;
}

/* The fullest node with room for the whole Job, or NULL. */
static sched_node *
colocate_node(const ctx *x) {
  total tot = {0, 0, 0};
  sched_node *best = NULL;
  int64_t best_a = -1;
  for (int i = 0; i < x->job->ntasks; i++) {
    const sched_template *t = &x->job->tasks[i];
    tot.cpu_m += t->req.cpu_m * t->replicas;
    tot.memory_mib += t->req.memory_mib * t->replicas;
    tot.gpu += (uint64_t)t->req.gpu * t->replicas;
  }
  if (tot.gpu > SCHED_MAX_GPUS)
    return NULL;
  for (size_t i = 0; i < x->nodes->n; i++) {
    sched_node *n = x->nodes->v[i];
    if (!whole_job_fits(x, n, &tot))
      continue;
    int64_t a =
        allocated_after(n, tot.cpu_m, tot.memory_mib, (uint32_t)tot.gpu);
    if (a > best_a) {
      best_a = a;
      best = n;
    }
  }
  return best;
}

/* Every pod on n, known to have room. */
static int
place_on_one(ctx *x, sched_node *n, const uint32_t *attempts) {
  int16_t slots[SCHED_MAX_DEVICES];
  counts k;
  for (int i = 0; i < x->job->ntasks; i++) {
    const sched_template *t = &x->job->tasks[i];
    filter(x, t, &k);
    keep_counts(x, &k);
    resolve_slots(t, n, slots);
    for (uint32_t r = 0; r < t->replicas; r++) {
      int rc = bind_pod(x, n, i, r, slots, attempts);
      if (rc)
        return rc;
    }
  }
  /* best fit: the score is how full the node is with the whole Job */
  n->scratch_score = allocated_after(n, 0, 0, 0) / (PPM / 100);
  return 0;
}

/* ---------------------------------------------------------------- why */

static int
by_name(const void *a, const void *b) {
  return strcmp((*(sched_node *const *)a)->name,
                (*(sched_node *const *)b)->name);
}

static int
fill_why(ctx *x) {
  sched_why *w = &x->out->why;
  w->strategy = x->job->strategy;
  w->nodes = x->best.nodes;
  w->selector = x->best.selector;
  w->runtime = x->best.runtime;
  w->ready = x->best.ready;
  w->capacity = x->best.capacity;
  qsort(x->chosen, x->nchosen, sizeof *x->chosen, by_name);
  w->scores = calloc(x->nchosen ? x->nchosen : 1, sizeof *w->scores);
  if (!w->scores)
    return -ENOMEM;
  for (size_t i = 0; i < x->nchosen; i++) {
    memcpy(w->scores[i].node, x->chosen[i]->name, SCHED_NAME_SZ);
    w->scores[i].score = x->chosen[i]->scratch_score;
  }
  w->nscores = x->nchosen;
  return 0;
}

/* -------------------------------------------------------------- place */

static int
place_all(ctx *x, const uint32_t *attempts) {
  int rc = 0;
  if (x->job->strategy == SCHED_COLOCATE) {
    sched_node *n = colocate_node(x);
    if (n)
      return place_on_one(x, n, attempts);
  }
  for (int i = 0; i < x->job->ntasks; i++)
    if (!place_template(x, i, attempts, &rc))
      return rc ? rc : 1;
  return 0;
}

int
sched_place(sched_nodes *nodes, const sched_job *job, const uint32_t *attempts,
            sched_placement *out) {
  ctx x;
  sched_placement_clear(out);
  if (!job || job->ntasks <= 0)
    return bus_error(BUS_EINVAL, "a Job needs at least one task");
  size_t pods = sched_job_pods(job);
  if (pods > SCHED_MAX_PODS)
    return bus_error(BUS_EINVAL, "job %s has %zu pods: at most %d", job->name,
                     pods, SCHED_MAX_PODS);
  int rc = ctx_init(&x, nodes, job, out, pods);
  if (rc == 0)
    rc = place_all(&x, attempts);
  if (rc == 0)
    rc = fill_why(&x);
  if (rc != 0) {
    char reason[sizeof out->reason];
    memcpy(reason, out->reason, sizeof reason);
    rollback(&x);
    sched_placement_clear(out);
    if (rc == 1)
      memcpy(out->reason, reason, sizeof reason);
  } else {
    out->ok = 1;
    out->n = x.nb;
    out->reason[0] = 0;
  }
  ctx_free(&x);
  return rc == 1 ? 0 : rc;
}

/* ------------------------------------------------------ book and release */

int
sched_book(sched_nodes *nodes, const sched_job *job, const sched_placement *p) {
  int16_t slots[SCHED_MAX_DEVICES];
  size_t i;
  int rc = 0;
  for (i = 0; i < p->n && rc == 0; i++) {
    const sched_binding *b = &p->bindings[i];
    sched_node *n = sched_nodes_find(nodes, b->node);
    if (b->tmpl < 0 || b->tmpl >= job->ntasks) {
      rc = bus_error(BUS_EINVAL, "pod %s: no such task in job %s", b->pod,
                     job->name);
      break;
    }
    const sched_template *t = &job->tasks[b->tmpl];
    if (!n) {
      rc = bus_error(BUS_ENOT_FOUND, "pod %s: no node %s", b->pod, b->node);
      break;
    }
    uint64_t mask = 0;
    for (int g = 0; g < b->ngpus; g++)
      mask |= b->gpus[g] < n->capacity.gpu ? 1ull << b->gpus[g] : ~0ull;
    if (!resolve_slots(t, n, slots) || fits(n, t, slots) != NOFIT_NONE ||
        (mask & n->gpu_taken) || b->ngpus != (int)t->req.gpu ||
        (uint32_t)__builtin_popcountll(mask) != t->req.gpu) {
      rc = bus_error(BUS_ECONFLICT, "pod %s does not fit on node %s", b->pod,
                     b->node);
      break;
    }
    n->cpu_used_m += t->req.cpu_m;
    n->memory_used_mib += t->req.memory_mib;
    n->gpu_taken |= mask;
    for (int d = 0; d < t->req.ndevices; d++)
      if (slots[d] >= 0)
        n->dev_used[slots[d]] += t->req.devices[d].count;
    n->pods++;
  }
  if (rc) {
    sched_placement undo = *p;
    undo.n = i;
    sched_release(nodes, job, &undo);
  }
  return rc;
}

void
sched_release(sched_nodes *nodes, const sched_job *job,
              const sched_placement *p) {
  int16_t slots[SCHED_MAX_DEVICES];
  for (size_t i = p->n; i-- > 0;) {
    const sched_binding *b = &p->bindings[i];
    sched_node *n = sched_nodes_find(nodes, b->node);
    if (!n || b->tmpl < 0 || b->tmpl >= job->ntasks)
      continue;
    const sched_template *t = &job->tasks[b->tmpl];
    resolve_slots(t, n, slots); /* a device no longer offered: skipped */
    unbook(n, t, slots, b);
  }
}

/* --------------------------------------------------------------- codec */

static void
pack_str(msgpack_packer *pk, const char *s) {
  msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void
pack_binding(msgpack_packer *pk, const sched_binding *b) {
  msgpack_pack_map(pk, 6);
  pack_str(pk, "pod");
  pack_str(pk, b->pod);
  pack_str(pk, "task");
  pack_str(pk, b->task);
  pack_str(pk, "node");
  pack_str(pk, b->node);
  pack_str(pk, "attempt");
  msgpack_pack_uint32(pk, b->attempt);
  pack_str(pk, "gpus");
  msgpack_pack_array(pk, (size_t)b->ngpus);
  for (int g = 0; g < b->ngpus; g++)
    msgpack_pack_uint8(pk, b->gpus[g]);
  pack_str(pk, "runtime");
  pack_str(pk, b->runtime == SCHED_RT_RAW_NETNS ? "raw+netns" : "raw");
}

static void
pack_why(msgpack_packer *pk, const sched_why *w) {
  size_t n = w->nscores < SCHED_WHY_SCORES ? w->nscores : SCHED_WHY_SCORES;
  const char *s = sched_strategy_name(w->strategy);
  msgpack_pack_map(pk, 7);
  pack_str(pk, "strategy");
  pack_str(pk, s ? s : "spread");
  pack_str(pk, "nodes");
  msgpack_pack_uint32(pk, w->nodes);
  pack_str(pk, "selector");
  msgpack_pack_uint32(pk, w->selector);
  pack_str(pk, "runtime");
  msgpack_pack_uint32(pk, w->runtime);
  pack_str(pk, "ready");
  msgpack_pack_uint32(pk, w->ready);
  pack_str(pk, "capacity");
  msgpack_pack_uint32(pk, w->capacity);
  pack_str(pk, "scores");
  msgpack_pack_map(pk, n);
  for (size_t i = 0; i < n; i++) {
    pack_str(pk, w->scores[i].node);
    msgpack_pack_int64(pk, w->scores[i].score);
  }
}

int
sched_pack_placed(msgpack_packer *pk, const char *pool, const char *job,
                  uint64_t generation, const sched_placement *p) {
  if (!p || !p->ok || !pool || !job)
    return BUS_EINVAL;
  msgpack_pack_map(pk, 5);
  pack_str(pk, "pool");
  pack_str(pk, pool);
  pack_str(pk, "job");
  pack_str(pk, job);
  pack_str(pk, "generation");
  msgpack_pack_uint64(pk, generation);
  pack_str(pk, "bindings");
  msgpack_pack_array(pk, p->n);
  for (size_t i = 0; i < p->n; i++)
    pack_binding(pk, &p->bindings[i]);
  pack_str(pk, "why");
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
