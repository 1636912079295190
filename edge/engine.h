/*
 * engine.h - private to edge/: the node's side of the RL engine on the
 * loop (engine.c). The projections lark-engine writes to the node's
 * stream (engine.stages, engine.weights, engine.peers of each Job
 * hosting pods here) are stored by the slice (store_engine.c), which
 * queues the Jobs that changed (slice.h); here the loop acts on them.
 */
#ifndef LARK_EDGE_ENGINE_H
#define LARK_EDGE_ENGINE_H

#include "agent.h"

/* Loop (the agent's wake-up): act on the projections that changed: the
 * waits of the Job's pods for stages, the weights part for weights and
 * peers; forget a Job that ended once no pod of it is left here. */
void edge_engine_on_wake(edge_agent *a);

/* Loop: a pod of job was deleted and forgotten here; with no pod of the
 * Job left, its projections go too. */
void edge_engine_pod_forgotten(edge_agent *a, const char *job);

#endif
