/*
 * slice.h - private to edge/: the slice thread, the node's desired states
 * into the store (slice.c). Uses the store and the log; wakes the loop
 * through edge_agent.wake; the engine's projections changed are queued for
 * it (edge_agent.changes).
 */
#ifndef LARK_EDGE_SLICE_H
#define LARK_EDGE_SLICE_H

#include "agent.h"

/* The slice thread (a: the edge_agent). */
void *edge_slice_main(void *a);

/* Listen for desired states pushed ahead of the slice (lark.push.<node>.>,
 * taken on nats.c's delivery thread as the slice takes the stored copy),
 * and stop, waiting for a push being taken, before the connection goes.
 * Failing to listen only logs: the slice alone then, as before pushes. */
void edge_pushes_start(edge_agent *a);
void edge_pushes_stop(edge_agent *a);

/*
 * The Jobs whose engine projections the slice stored anew since the loop
 * last asked, each once with what changed (bits), for the loop
 * (engine.c): the queue is only where to look, the store holds the
 * projections.
 */
enum {
  EDGE_CHANGED_STAGES = 1,
  EDGE_CHANGED_WEIGHTS = 2,
  EDGE_CHANGED_PEERS = 4
};
typedef struct edge_slice_change {
  char job[EDGE_NAME_SZ];
  unsigned what;
} edge_slice_change;

/* The queue handed over (*out malloc'd, *n entries) and emptied. */
void edge_slice_changes(edge_agent *a, edge_slice_change **out, size_t *n);

#endif
