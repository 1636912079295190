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
 *
 * This file is the gang fit: a Job's templates placed one after another,
 * all or nothing, and the booking of capacity. Which nodes may take a pod
 * and how they rank is placement_score.c; the reason a Job waits and the
 * why of a placement placement_why.c; job.placed's data
 * placement_codec.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "placement-int.h"
#include "placement.h"

/* ------------------------------------------------------------- lifecycle */

void
sched_placement_init(sched_placement *p) {
  memset(p, 0, sizeof *p);
}

void
sched_placement_clear(sched_placement *p) {
  if (!p)
    return;
  for (size_t i = 0; p->bindings && i < p->n; i++)
    sched_pl_binding_clear(&p->bindings[i]);
  free(p->bindings);
  free(p->why.scores);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ booking */

static int
book(sched_node *n, const sched_job *job, const sched_template *t,
     const int16_t *slots, sched_binding *b) {
  int rc = sched_pl_take_devices(n, t, slots, job, b);
  if (rc)
    return rc;
  n->cpu_used_m += t->req.cpu_m;
  n->memory_used_mib += t->req.memory_mib;
  b->ngpus = 0;
  for (uint32_t i = 0; i < n->capacity.gpu && (uint32_t)b->ngpus < t->req.gpu;
       i++)
    if (!(n->gpu_taken & (1ull << i))) {
      n->gpu_taken |= 1ull << i;
      b->gpus[b->ngpus++] = (uint8_t)i;
    }
  n->pods++;
  return 0;
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
  sched_pl_give_devices(n, t, slots, b);
  n->pods = n->pods ? n->pods - 1 : 0;
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
  if (!sched_pl_hosts_job(x, n)) { /* its score before the pod is on it */
    n->scratch_epoch = x->epoch;
    n->scratch_roles = 0;
    n->scratch_score = sched_pl_shown_score(x, n, t);
    x->chosen[x->nchosen++] = n;
  }
  if ((rc = book(n, x->job, t, slots, b)))
    return rc;
  b->runtime = sched_pl_binding_runtime(n, t, b);
  n->scratch_roles |= sched_pl_role_bit(t->role);
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
    sched_pl_resolve_slots(t, x->bnode[x->nb], slots);
    unbook(x->bnode[x->nb], t, slots, b);
    sched_pl_binding_clear(&x->out->bindings[x->nb]);
  }
  for (size_t i = 0; i < x->nchosen; i++)
    x->chosen[i]->scratch_epoch = 0;
  x->nchosen = 0;
}

/*
 * A template of one pod: the candidate the heap would give, the best by
 * its order among those with room, found in one pass without building
 * the heap (most of a Job of one's placement on many nodes).
 */
static int
place_single(ctx *x, int i, const uint32_t *attempts, int *rc) {
  const sched_template *t = &x->job->tasks[i];
  size_t best = x->nc;
  for (size_t j = 0; j < x->nc; j++) {
    cand *c = &x->c[j];
    if (!c->room) /* as the filter just found it: nothing booked since */
      continue;
    sched_pl_score(x, c, t);
    if (best == x->nc || better(x, j, best))
      best = j;
  }
  if (best == x->nc) {
    sched_pl_explain(x, t, 0, x->nb);
    return 0;
  }
  *rc = bind_pod(x, x->c[best].node, i, 0, cand_slots(x, best), attempts);
  return !*rc;
}

/* All pods of template i, best candidate first. 1 bound, 0 no room. */
static int
place_template(ctx *x, int i, const uint32_t *attempts, int *rc) {
  const sched_template *t = &x->job->tasks[i];
  counts k;
  sched_pl_filter(x, t, &k);
  sched_pl_keep_counts(x, &k);
  if (t->replicas == 1)
    return place_single(x, i, attempts, rc);
  for (size_t j = 0; j < x->nc; j++)
    sched_pl_score(x, &x->c[j], t);
  heap_build(x);
  for (uint32_t r = 0; r < t->replicas; r++) {
    for (;;) {
      if (x->nheap == 0) {
        sched_pl_explain(x, t, r, x->nb);
        return 0;
      }
      size_t top = x->heap[0];
      cand *c = &x->c[top];
      if (sched_pl_fits(c->node, t, cand_slots(x, top)) == NOFIT_NONE &&
          !sched_pl_role_conflict(x, c->node, t)) {
        if ((*rc = bind_pod(x, c->node, i, r, cand_slots(x, top), attempts)))
          return 0;
        sched_pl_score(x, c, t);
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
        !(n->runtimes & sched_pl_runtime_need(t, n)))
      return 0;
  }
  return sched_pl_job_devices_fit(x->job, n);
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
    int64_t a = sched_pl_allocated_after(n, tot.cpu_m, tot.memory_mib,
                                         (uint32_t)tot.gpu);
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
    sched_pl_filter(x, t, &k);
    sched_pl_keep_counts(x, &k);
    sched_pl_resolve_slots(t, n, slots);
    for (uint32_t r = 0; r < t->replicas; r++) {
      int rc = bind_pod(x, n, i, r, slots, attempts);
      if (rc)
        return rc;
    }
  }
  /* best fit: the score is how full the node is with the whole Job */
  n->scratch_score = sched_pl_allocated_after(n, 0, 0, 0) / (PPM / 100);
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
  size_t pods;
  int rc = sched_job_sized(job, &pods);
  if (rc)
    return rc;
  rc = ctx_init(&x, nodes, job, out, pods);
  if (rc == 0)
    rc = place_all(&x, attempts);
  if (rc == 0)
    rc = sched_pl_fill_why(&x);
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
    if (!sched_pl_resolve_slots(t, n, slots) ||
        sched_pl_fits(n, t, slots) != NOFIT_NONE || (mask & n->gpu_taken) ||
        b->ngpus != (int)t->req.gpu ||
        (uint32_t)__builtin_popcountll(mask) != t->req.gpu ||
        sched_pl_book_given(n, t, slots, b)) {
      rc = bus_error(BUS_ECONFLICT, "pod %s does not fit on node %s", b->pod,
                     b->node);
      break;
    }
    n->cpu_used_m += t->req.cpu_m;
    n->memory_used_mib += t->req.memory_mib;
    n->gpu_taken |= mask;
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
    sched_pl_resolve_slots(t, n,
                           slots); /* a device no longer offered: skipped */
    unbook(n, t, slots, b);
  }
}
