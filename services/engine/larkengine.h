/*
 * larkengine.h - lark-engine: the stage coordinator of the Jobs' RL loops.
 *
 * lark-engine owns lark.ev.engine.<job> (stage.started, stage.done,
 * engine.ended, engine.nodes, weights.published/cached/dropped) and writes
 * three projections into the streams of the nodes hosting a Job's pods
 * (lark.node.<node>.engine.<job>.stages|weights|peers, latest wins). Its
 * view follows the Jobs (job.submitted's spec.engine and tasks, job.phase,
 * stopped/resumed/deleted), their placement (job.placed/unplaced), their
 * pods (pod.phase), the nodes (node.registered), the Domains' addresses
 * (domain.allocated) and its own events. The rules are docs/design.md
 * section 7b.
 *
 * Functions return 0 or a negative BUS_E* code.
 */
#ifndef LARK_LARKENGINE_H
#define LARK_LARKENGINE_H

#include <stdint.h>

#include "bus.h"
#include "queue.h"

/* The view: LARK_EVENTS, filter lark.ev.>. */
void engine_view_def(bus_view_def *def);

/*
 * Reads, live and in a replay (lark.cmd.<user>.stages.* and peers.*):
 *   stages.get {name, limit?} -> the Job's loop and its steps
 *   stages.list {}            -> {items: [one row per Job]}
 *   peers.get {name}          -> {job, peers: [Peer]}
 */
int engine_query(bus_txn *t, const char *kind, const char *verb,
                 const msgpack_object *req, msgpack_packer *pk, void *ud);
extern const bus_verbs engine_verbs;

/*
 * The Jobs whose run ended and whose node subjects are to be purged:
 * fn(job, node, seq) for each, seq the engine.ended's sequence.
 */
typedef int (*engine_purge_fn)(const char *job, const char *node, uint64_t seq,
                               void *ud);
int engine_each_purge(bus_txn *t, engine_purge_fn fn, void *ud);

/*
 * The ingress: a durable consumer (engine-ingress) on LARK_INGRESS, filter
 * lark.in.*.engine.>. stage.report (checked, batched: one stage.done per
 * (job, stage, step) per fetch) and weights.report (weights.published,
 * cached, dropped). What does not pass is counted and logged.
 */
typedef struct engine_ingress engine_ingress;
typedef svc_queue_opts engine_ingress_opts;
typedef struct engine_ingress_stats {
  uint64_t accepted, duplicates, refused, batches;
} engine_ingress_stats;
void engine_ingress_opts_init(engine_ingress_opts *o);
int engine_ingress_start(bus_conn *c, bus_view *v, const engine_ingress_opts *o,
                         engine_ingress **out);
void engine_ingress_get_stats(engine_ingress *in, engine_ingress_stats *st);
void engine_ingress_stop(engine_ingress *in);

#endif
