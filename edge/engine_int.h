/*
 * engine_int.h - private to the engine socket's files, from the top
 * down (each calls only those below it):
 *
 *   engine_sock.c    a request's dispatch, wait and peers
 *   engine_pod.c     done and the weights requests, what the node stamps
 *                    on a pod's reports
 *   engine_answer.c  the one answer and a request's end, the Job's
 *                    projections
 *
 * One request of a connection, from its line to its answer. Loop.
 *
 * A request is answered exactly once, unless its connection closed
 * first. It holds its pod's record (p->handles) while it lives, so a
 * weights callback that comes after the connection closed still finds
 * the pod.
 */
#ifndef LARK_EDGE_ENGINE_INT_H
#define LARK_EDGE_ENGINE_INT_H

#include <jansson.h>

#include "engine_op.h"
#include "engine_sock.h"
#include "weights.h"

typedef struct edge_engine_op {
  edge_client *c; /* NULL once its connection closed */
  edge_proc *p;
  edge_op op;
  uv_timer_t timer; /* wait: its timeout */
  int has_timer;
  edge_weights_wait *ww; /* wait_weights under way */
  int in_weights;        /* publish or wait_weights: a callback will come */
  int sync;              /* still inside edge_engine_sock_op */
  int answered;
} edge_engine_op;

/* engine_answer.c: answer o with ans (taken), then end it: its
 * connection goes on with the lines it held. */
void edge_engine_answer(edge_engine_op *o, json_t *ans);
/* {"ok": false, "error": why}. */
void edge_engine_refuse(edge_engine_op *o, const char *why);
/* A new {"ok": true}, for the caller to add to. */
json_t *edge_engine_ok(void);
/* o is over (answered, or its connection gone): free it once nothing
 * can call back into it. */
void edge_engine_release(edge_engine_op *o);
/* A stored engine projection of p's Job (decoded into z; BUS_ENOT_FOUND
 * when none came). */
int edge_engine_projection(edge_proc *p, const char *what, msgpack_zone *z,
                           const void **out);

/* engine_pod.c: the requests of a pod's own: done, publish_weights,
 * wait_weights. Each answers o now or later. */
void edge_engine_done(edge_engine_op *o);
void edge_engine_publish(edge_engine_op *o);
void edge_engine_wait_weights(edge_engine_op *o);

#endif
