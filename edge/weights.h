/*
 * weights.h - private to edge/: a Job's weights on this node (weights*.c).
 *
 * The learner's pod publishes a version through its socket; the bytes go
 * into the node's content-addressed cache (<data>/weights/<sha256>, read
 * only, one file per content) and only the reference goes on the bus
 * (weights.report on the node's ingress, weights.published once
 * lark-engine has checked it). Another node fetches a version once,
 * however many of its pods want it, over TLS from a node that holds it
 * (same cluster first; across clusters through the relay), checks its
 * SHA-256 and hands its pods the cached file itself. A node serves a
 * Job's versions only to nodes hosting pods of that Job (the Job's
 * engine.peers projection), proven by their certificates.
 *
 * Everything here runs on the loop thread; fetches and hashing run on
 * libuv workers and call back on the loop.
 */
#ifndef LARK_EDGE_WEIGHTS_H
#define LARK_EDGE_WEIGHTS_H

#include <stdint.h>

#include "agent.h"

/*
 * The end of a publish or a wait: rc 0 with the version handed, the
 * cache path, its sha256 (64 hex digits) and size; else a BUS_E* code
 * (BUS_ETIMEOUT when a wait ran out) and why, for the pod.
 */
typedef void (*edge_weights_cb)(void *ud, int rc, const char *why,
                                uint64_t version, const char *path,
                                const char *sha256, uint64_t size);

typedef struct edge_weights_wait edge_weights_wait;

/* The cache and the server; from the agent's start. */
int edge_weights_start(edge_agent *a);
void edge_weights_stop(edge_agent *a);

/*
 * Publish pod p's file at path (inside its working directory) as version
 * of p's Job: cb once it is in the cache and its report is queued, or
 * refused. 0, or an error before anything started (cb not called).
 */
int edge_weights_publish(edge_agent *a, edge_proc *p, uint64_t version,
                         const char *path, edge_weights_cb cb, void *ud);

/*
 * The newest version >= min of p's Job held here, fetched first when the
 * Job's projection lists one this node lacks: cb when it is ready, when
 * it is refused, or after timeout_ms (0: no limit). NULL when cb was
 * already called. Cancel a wait whose pod went away; cb is then not
 * called.
 */
edge_weights_wait *edge_weights_wait_for(edge_agent *a, edge_proc *p,
                                         uint64_t min, uint64_t timeout_ms,
                                         edge_weights_cb cb, void *ud);
void edge_weights_wait_cancel(edge_weights_wait *w);

/*
 * The slice stored a new engine.weights or engine.peers projection of
 * job: answer the waits it satisfies, start the fetches it makes
 * possible, refresh who may fetch from here.
 */
void edge_weights_on_projection(edge_agent *a, const char *job);

#endif
