/*
 * placement-int.h - what the files of placement share (placement.c,
 * placement_score.c, placement_why.c): the context of one sched_place and
 * the filters, scores and reasons the gang fit calls.
 */
#ifndef LARK_PLACEMENT_INT_H
#define LARK_PLACEMENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "placement.h"

#define PPM 1000000 /* fractions in parts per million */
#define ROLE_ACTOR 1u
#define ROLE_OTHER 2u /* Rollout and Env */

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

static inline int16_t *
cand_slots(ctx *x, size_t i) {
  return x->slots + i * SCHED_MAX_DEVICES;
}

/* ----------------------------------------------- placement_score.c */

/* Why a pod of t does not fit on n now; NOFIT_NONE when it does. */
enum nofit { NOFIT_NONE = 0, NOFIT_CPU, NOFIT_MEMORY, NOFIT_GPU, NOFIT_DEVICE };

/* The index of device name on n, or -1. */
int sched_pl_node_device(const sched_node *n, const char *name);
/* The node's slot for each device t asks for (-1: not offered). Returns 0
 * when a device asked for (count > 0) is not offered at all, else 1. */
int sched_pl_resolve_slots(const sched_template *t, const sched_node *n,
                           int16_t *slots);
enum nofit sched_pl_fits(const sched_node *n, const sched_template *t,
                         const int16_t *slots);
/* Mean fraction used (ppm) once cpu, memory, gpu more are booked. */
int64_t sched_pl_allocated_after(const sched_node *n, uint64_t cpu,
                                 uint64_t mem, uint32_t gpu);
unsigned sched_pl_role_bit(sched_role r);
int sched_pl_hosts_job(const ctx *x, const sched_node *n);
/* disaggregate: n already hosts the Job's pods of the other side. */
int sched_pl_role_conflict(const ctx *x, const sched_node *n,
                           const sched_template *t);
/* Heap keys of a candidate for the next pod of t. */
void sched_pl_score(const ctx *x, cand *c, const sched_template *t);
/* The score shown in why, 0..100, for the node's first pod of the Job. */
int64_t sched_pl_shown_score(const ctx *x, const sched_node *n,
                             const sched_template *t);
/* The static filters of t over every node: candidates into x->c, counts
 * into *k. */
void sched_pl_filter(ctx *x, const sched_template *t, counts *k);
/* Keep the counts of the tightest template for why. */
void sched_pl_keep_counts(ctx *x, const counts *k);

/* ------------------------------------------------- placement_why.c */

/* The Pending reason when pod `replica` of template t finds no node, with
 * the Job's pods booked so far still in place. */
void sched_pl_explain(ctx *x, const sched_template *t, uint32_t replica,
                      size_t placed);
/* The why of a placement that succeeded, into x->out->why. */
int sched_pl_fill_why(ctx *x);

#endif
