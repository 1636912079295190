/*
 * engine.c - the RL engine's projections on the loop (engine.h).
 *
 * The slice stores each newer engine.stages / engine.weights /
 * engine.peers of a Job (store_engine.c) and queues "job's what changed"
 * (slice.h); the loop takes the queue on its wake-up and acts:
 * a new engine.stages answers the waits of the Job's pods it satisfies
 * (engine_sock.c), a new engine.weights or engine.peers goes to the
 * weights part (weights.h). The store, not the queue, holds the truth:
 * the queue only says where to look, so a change queued twice costs a
 * second look and nothing else.
 *
 * Forgetting: lark-engine purges a Job's projections from the stream
 * when the Job ends, which the node cannot see. So the node forgets a
 * Job's rows itself once no pod of the Job is left here (no desired
 * state names it) and either its engine.stages says ended or a pod of it
 * was deleted here. A Job with no pod yet keeps its rows: the engine may
 * write them before the scheduler sends the pods.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_sock.h"
#include "log.h"
#include "slice.h"
#include "weights.h"

/* ------------------------------------------------------------ forget */

typedef struct job_pods {
  const char *job;
  int n;
} job_pods;

static void
count_pod(const char *pod, const void *data, size_t len, void *ud) {
  job_pods *w = ud;
  msgpack_zone z;
  msgpack_object o;
  bus_ev_pod_desired d;
  (void)pod;
  msgpack_zone_init(&z, 2048);
  if (msgpack_unpack(data, len, NULL, &z, &o) >= 0 &&
      !bus_pod_desired_unpack(&o, &z, &d) && bus_str_eq(d.job, w->job))
    w->n++;
  msgpack_zone_destroy(&z);
}

/* Whether job's engine.stages says the run ended. */
static int
ended(edge_agent *a, const char *job) {
  msgpack_zone z;
  const void *st;
  msgpack_zone_init(&z, 2048);
  int rc = edge_store_engine_load(a->store, job, "stages", &z, &st);
  int over = !rc && ((const bus_ev_engine_stages *)st)->has_ended &&
             ((const bus_ev_engine_stages *)st)->ended;
  msgpack_zone_destroy(&z);
  return over;
}

/* Forget job's projections when no pod of it is left here and
 * (deleted: a pod of it was deleted here) or its run ended. */
static void
gc(edge_agent *a, const char *job, int deleted) {
  job_pods w = {job, 0};
  if (edge_store_desired_each(a->store, count_pod, &w) || w.n)
    return;
  if (!deleted && !ended(a, job))
    return;
  if (edge_store_engine_forget(a->store, job))
    edge_logf("error", job, "cannot forget the engine's projections: %s",
              bus_last_error());
  else
    edge_logf("info", job, "engine projections forgotten: no pod left here");
}

void
edge_engine_pod_forgotten(edge_agent *a, const char *job) {
  gc(a, job, 1);
}

/* ------------------------------------------------------------- wake */

void
edge_engine_on_wake(edge_agent *a) {
  edge_slice_change *q;
  size_t n;
  edge_slice_changes(a, &q, &n);
  for (size_t i = 0; i < n && !a->closing; i++) {
    if (q[i].what & (EDGE_CHANGED_WEIGHTS | EDGE_CHANGED_PEERS))
      edge_weights_on_projection(a, q[i].job);
    if (q[i].what & EDGE_CHANGED_STAGES) {
      edge_engine_sock_on_stages(a, q[i].job);
      gc(a, q[i].job, 0);
    }
  }
  free(q);
}
