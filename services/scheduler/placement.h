/*
 * placement.h - gang placement of a Job's pods onto nodes.
 *
 * Filter, for each task template: the nodeSelector (a value may be a comma
 * list: any of), the runtime offered (raw+netns for a pod that asks for a
 * robot with a subnet), Ready and not cordoned, then free capacity (cpu,
 * memory, GPUs by index, devices: bare counts, the class and named
 * devices, see model.h and placement_devices.c). Score by the Job's
 * strategy:
 *
 *   spread        least allocated node first (the default)
 *   pack          most allocated first: the Job lands on the fewest nodes
 *   colocate      the whole Job on one node when one has room for all of
 *                 it (the fullest such node); else as few nodes as
 *                 possible: fill a node the Job already uses, then the
 *                 emptiest
 *   disaggregate  Actor pods never share a node with the Job's Rollout or
 *                 Env pods; within each side, pack
 *
 * "Allocated" is the mean, over the resources a node has (cpu, memory,
 * GPUs), of the fraction used once the pod is on it. Ties go to the node
 * first in name order, so the same model and Job always give the same
 * placement. GPUs are bound by index, the lowest free first; a class
 * request takes free named devices in name order.
 *
 * Gang: every pod of the Job is bound, or none is and the model is left
 * exactly as it was. A decision is one job.placed event
 * (sched_pack_placed); the service applies job.placed events of the log
 * with sched_book, and job.unplaced with sched_release.
 *
 * Cost: O(templates x nodes) to filter plus O(pods x log nodes) to choose
 * (a heap per template: booking a pod changes only its node's score).
 */
#ifndef LARK_SCHED_PLACEMENT_H
#define LARK_SCHED_PLACEMENT_H

#include "model.h"

#define SCHED_WHY_SCORES 256 /* schema: Why.scores max_items */

/* A chosen node's score, 0..100, when it took its first pod of the Job:
 * spread 100 - allocated%, pack and disaggregate allocated%, colocate
 * allocated% on the one node, 100 - allocated% when spread over several. */
typedef struct sched_score {
  char node[SCHED_NAME_SZ];
  int64_t score;
} sched_score;

/*
 * How a decision was made (schema Why). The counts are those of the task
 * template with the fewest nodes that have room (the tightest), each
 * filter applied after the ones before: nodes >= selector >= runtime >=
 * ready >= capacity.
 */
typedef struct sched_why {
  sched_strategy strategy;
  uint32_t nodes, selector, runtime, ready, capacity;
  size_t nscores;
  sched_score *scores; /* the chosen nodes, in name order */
} sched_why;

/* A gang placement. Release with sched_placement_clear. */
typedef struct sched_placement {
  int ok; /* 1: every pod bound; 0: the Job does not fit (see reason) */
  size_t n;
  sched_binding *bindings; /* expansion order: template, then replica */
  sched_why why;
  char reason[512]; /* when !ok, for the Job's Pending reason */
} sched_placement;

/* An empty placement. */
void sched_placement_init(sched_placement *p);
/* Free what p owns and empty it. Accepts NULL. */
void sched_placement_clear(sched_placement *p);

/* 1 when node carries every label of t's nodeSelector (a value that is a
 * comma list matches any of its items), else 0. */
int sched_selector_match(const sched_template *t, const sched_node *node);

/*
 * Place every pod of job onto nodes and book them there. attempts, when
 * not NULL, holds one attempt number per pod in expansion order (NULL: 0
 * for all). out is cleared and filled: on success out->ok = 1, the
 * bindings and why, and the nodes' allocations include the Job; when the
 * Job does not fit, out->ok = 0, out->reason says why (e.g. "task t-a:
 * 0/12 nodes can take pod t-a-3 (4 GPUs): 3 cordoned, 9 have fewer than 4
 * free GPUs") and nodes are exactly as they were. Returns 0 in both cases;
 * BUS_EINVAL for a Job without tasks or with more than SCHED_MAX_PODS
 * pods, BUS_ENAME for a derived name too long, -ENOMEM: nodes unchanged.
 */
int sched_place(sched_nodes *nodes, const sched_job *job,
                const uint32_t *attempts, sched_placement *out);

/*
 * Book a placement made elsewhere (a job.placed event of the log, read
 * with sched_placement_from_msgpack) into nodes: all of it or nothing.
 * Returns 0; BUS_ENOT_FOUND for a node the model does not know, BUS_EINVAL
 * for a binding whose template is not job's, BUS_ECONFLICT when a pod
 * does not fit (a GPU index taken or out of range, cpu, memory or a
 * device short, a named device held or not the request's): nothing is
 * booked then, detail in bus_last_error().
 */
int sched_book(sched_nodes *nodes, const sched_job *job,
               const sched_placement *p);

/*
 * Give back the capacity p booked for job (Job ended, stopped or back to
 * Pending). Bindings on nodes no longer known are skipped; counts never
 * go below zero. p itself is not changed.
 */
void sched_release(sched_nodes *nodes, const sched_job *job,
                   const sched_placement *p);

/*
 * Read the data of a job.placed event {pool, job, generation, bindings,
 * why} into out (cleared first; why is not read back). Each binding's
 * task must be one of job's, its pod `<task>-<i>` with i below the
 * replicas. Returns 0, BUS_EMALFORMED or BUS_EINVAL (detail in
 * bus_last_error(); out empty then), -ENOMEM.
 */
int sched_placement_from_msgpack(const msgpack_object *data,
                                 const sched_job *job, sched_placement *out);

/*
 * Pack the data map of a job.placed event: {pool, job, generation,
 * bindings: [{pod, task, node, attempt, gpus, runtime, devices (when the
 * pod holds named devices)}], why: {strategy,
 * nodes, selector, runtime, ready, capacity, scores: {node: score}}} —
 * at most SCHED_WHY_SCORES scores, the first in name order. Returns 0, or
 * BUS_EINVAL when p is not a successful placement (nothing packed).
 */
int sched_pack_placed(msgpack_packer *pk, const char *pool, const char *job,
                      uint64_t generation, const sched_placement *p);
/* The same as job.placed's generated struct, its arrays allocated in z
 * (alive as long as z). */
int sched_placed_data(const char *pool, const char *job, uint64_t generation,
                      const sched_placement *p, msgpack_zone *z,
                      bus_ev_job_placed *out);

#endif
