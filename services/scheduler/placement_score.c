/*
 * placement_score.c - which nodes may take a pod of a template, and how
 * they rank: the static filters (selector, runtime, Ready, devices
 * offered; the devices themselves are placement_devices.c), the room left
 * on a node, and the scores of the strategies
 * (spread, pack, colocate, disaggregate) the candidates' heap orders by.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement-int.h"
#include "placement.h"

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

enum nofit
sched_pl_fits(const sched_node *n, const sched_template *t,
              const int16_t *slots) {
  if (n->cpu_used_m + t->req.cpu_m > n->capacity.cpu_m)
    return NOFIT_CPU;
  if (n->memory_used_mib + t->req.memory_mib > n->capacity.memory_mib)
    return NOFIT_MEMORY;
  if (t->req.gpu > sched_node_free_gpus(n))
    return NOFIT_GPU;
  if (t->req.ndevices && !sched_pl_devices_fit(n, t, slots))
    return NOFIT_DEVICE;
  return NOFIT_NONE;
}

/* Mean fraction used (ppm) once cpu, memory, gpu more are booked. */
int64_t
sched_pl_allocated_after(const sched_node *n, uint64_t cpu, uint64_t mem,
                         uint32_t gpu) {
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

/* -------------------------------------------------------------- scores */

unsigned
sched_pl_role_bit(sched_role r) {
  return r == SCHED_ACTOR ? ROLE_ACTOR : ROLE_OTHER;
}

int
sched_pl_hosts_job(const ctx *x, const sched_node *n) {
  return n->scratch_epoch == x->epoch;
}

/* disaggregate: n already hosts the Job's pods of the other side. */
int
sched_pl_role_conflict(const ctx *x, const sched_node *n,
                       const sched_template *t) {
  if (x->job->strategy != SCHED_DISAGGREGATE || !sched_pl_hosts_job(x, n))
    return 0;
  return (n->scratch_roles & ~sched_pl_role_bit(t->role)) != 0;
}

/* Heap keys of a candidate for the next pod of t. */
void
sched_pl_score(const ctx *x, cand *c, const sched_template *t) {
  const sched_node *n = c->node;
  int64_t a =
      sched_pl_allocated_after(n, t->req.cpu_m, t->req.memory_mib, t->req.gpu);
  switch (x->job->strategy) {
  case SCHED_PACK:
  case SCHED_DISAGGREGATE:
    c->key = a;
    c->key2 = n->pods;
    break;
  case SCHED_COLOCATE:
    c->key = (sched_pl_hosts_job(x, n) ? 2 * PPM : 0) + (PPM - a);
    c->key2 = -(int64_t)n->pods;
    break;
  default:
    c->key = -a;
    c->key2 = -(int64_t)n->pods;
  }
}

/* The score shown in why, 0..100, for the node's first pod of the Job. */
int64_t
sched_pl_shown_score(const ctx *x, const sched_node *n,
                     const sched_template *t) {
  int64_t a =
      sched_pl_allocated_after(n, t->req.cpu_m, t->req.memory_mib, t->req.gpu);
  int64_t pct = a / (PPM / 100);
  if (x->job->strategy == SCHED_PACK || x->job->strategy == SCHED_DISAGGREGATE)
    return pct;
  return 100 - pct;
}

/* ------------------------------------------------------------- filter */

/* The static filters of t over every node: candidates into x->c, counts
 * into *k. */
void
sched_pl_filter(ctx *x, const sched_template *t, counts *k) {
  unsigned rt = sched_runtime_bit(t->runtime);
  memset(k, 0, sizeof *k);
  x->nc = 0;
  k->nodes = (uint32_t)x->nodes->n;
  for (size_t i = 0; i < x->nodes->n; i++) {
    sched_node *n = x->nodes->v[i];
    if (!sched_selector_match(t, n))
      continue;
    k->selector++;
    /* only a node with named devices may ask more than t's runtime */
    unsigned need = n->nnamed ? sched_pl_runtime_need(t, n) : rt;
    if (!(n->runtimes & need)) {
      k->subnet += need != rt; /* a robot's subnet asks for raw+netns */
      continue;
    }
    k->runtime++;
    if (!n->ready || n->cordoned) {
      k->notready += !n->ready;
      k->cordoned += n->ready && n->cordoned;
      continue;
    }
    k->ready++;
    cand *c = &x->c[x->nc];
    if (!sched_pl_resolve_slots(t, n, cand_slots(x, x->nc)))
      continue;
    c->node = n;
    c->idx = (uint32_t)i;
    c->room = sched_pl_fits(n, t, cand_slots(x, x->nc)) == NOFIT_NONE &&
              !sched_pl_role_conflict(x, n, t);
    k->capacity += c->room;
    x->nc++;
  }
}

/* Keep the counts of the tightest template for why. */
void
sched_pl_keep_counts(ctx *x, const counts *k) {
  if (!x->have_best || k->capacity < x->best.capacity) {
    x->best = *k;
    x->have_best = 1;
  }
}
