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
  uint8_t room; /* a pod of the template fits now (as the filter saw) */
  int64_t key, key2;
} cand;

typedef struct counts {
  uint32_t nodes, selector, runtime, ready, capacity;
  uint32_t notready, cordoned;
  uint32_t subnet; /* lack raw+netns, which a robot asked for needs */
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

/* ---------------------------------------------- placement_devices.c */

/* The index of device name on n, or -1. */
int sched_pl_node_device(const sched_node *n, const char *name);
/* The node's slot for each device t asks for (-1: not offered). Returns 0
 * when a device asked for (count > 0) is not offered at all, else 1. */
int sched_pl_resolve_slots(const sched_template *t, const sched_node *n,
                           int16_t *slots);
/* The runtime a pod of t runs on n: raw+netns when it asks for a robot of
 * n that has a subnet, else its template's. */
unsigned sched_pl_runtime_need(const sched_template *t, const sched_node *n);
/* 1 when the devices a pod of t asks for are free on n now. */
int sched_pl_devices_fit(const sched_node *n, const sched_template *t,
                         const int16_t *slots);
/* 1 when the devices of every pod of job are free on n at once. */
int sched_pl_job_devices_fit(const sched_job *job, const sched_node *n);
/* Book the devices of a pod of t (of job) on n, known to fit: counts,
 * and the named devices it takes into b->devices (in name order). 0,
 * -ENOMEM (n and b unchanged). */
int sched_pl_take_devices(sched_node *n, const sched_template *t,
                          const int16_t *slots, const sched_job *job,
                          sched_binding *b);
/* Give back what the pod of binding b booked on n. */
void sched_pl_give_devices(sched_node *n, const sched_template *t,
                           const int16_t *slots, const sched_binding *b);
/* Book the devices of binding b made elsewhere; BUS_ECONFLICT when they
 * are not free or do not match t's request (n unchanged then). */
int sched_pl_book_given(sched_node *n, const sched_template *t,
                        const int16_t *slots, const sched_binding *b);
/* Free b's device names. */
void sched_pl_binding_clear(sched_binding *b);
/* The runtime the pod of b runs: raw+netns when it holds a robot of n
 * with a subnet, else its template's. */
unsigned sched_pl_binding_runtime(const sched_node *n, const sched_template *t,
                                  const sched_binding *b);

/* ----------------------------------------------- placement_score.c */

/* Why a pod of t does not fit on n now; NOFIT_NONE when it does. */
enum nofit { NOFIT_NONE = 0, NOFIT_CPU, NOFIT_MEMORY, NOFIT_GPU, NOFIT_DEVICE };

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
