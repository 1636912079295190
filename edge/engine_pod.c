/*
 * engine_pod.c - the engine requests that depend on what the node did for
 * the pod itself (engine_int.h): done, publish_weights, wait_weights.
 *
 * The pod's identity is its socket: every stage.report names the pod the
 * socket was made for, its Job and its attempt, never what the line says.
 * The node's row for the pod's attempt (store_engine.c) holds the highest
 * weights version handed to it by wait_weights, the stamp on its reports,
 * and the last step it reported per stage:
 *
 * - done queues stage.report {pod, job, attempt, stage, step, weights,
 *   metrics} on lark.in.<node>.engine.stage.<pod> in the same transaction
 *   as the row, so a step said twice by the same attempt is queued once
 *   (the engine ignores duplicates anyway; a new attempt starts anew);
 * - a loader (a task engine.stages lists in `loaders`) reporting
 *   sync_weights done is refused until the node handed it at least the
 *   version that stage started with: the barrier means "loaded".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "log.h"
#include "sender.h"

/* The node's row for p's current attempt (a fresh one when none, or for
 * an older attempt); BUS_ESTORE and the like when the store failed. */
static int
row_of(edge_proc *p, edge_engine_pod *r) {
  int rc = edge_store_engine_pod_get(p->a->store, p->pod, r);
  if (rc == BUS_ENOT_FOUND || (!rc && r->attempt != p->attempt)) {
    memset(r, 0, sizeof *r);
    r->attempt = p->attempt;
    rc = 0;
  }
  return rc;
}

/* Whether p's task is among st's loaders (its desired state names it). */
static int
loads(edge_proc *p, const bus_ev_engine_stages *st) {
  void *data = NULL;
  size_t len = 0;
  msgpack_zone z;
  msgpack_object o;
  bus_ev_pod_desired d;
  int yes = 0;
  if (!st->has_loaders ||
      edge_store_desired_get(p->a->store, p->pod, &data, &len))
    return 0;
  msgpack_zone_init(&z, 2048);
  if (msgpack_unpack(data, len, NULL, &z, &o) >= 0 &&
      !bus_pod_desired_unpack(&o, &z, &d))
    for (uint32_t i = 0; i < st->loaders.n && !yes; i++)
      yes = st->loaders.v[i].len == d.task.len &&
            !memcmp(st->loaders.v[i].ptr, d.task.ptr, d.task.len);
  msgpack_zone_destroy(&z);
  free(data);
  return yes;
}

/* Why a loader's sync_weights done cannot be taken yet (into why), or 0. */
static int
not_loaded(edge_proc *p, uint64_t handed, char *why, size_t cap) {
  msgpack_zone z;
  const void *v;
  int refuse = 0;
  msgpack_zone_init(&z, 2048);
  if (!edge_engine_projection(p, "stages", &z, &v)) {
    const bus_ev_engine_stages *st = v;
    for (uint32_t i = 0; st->has_stages && i < st->stages.n; i++) {
      const bus_stage_state *s = &st->stages.v[i];
      if (bus_str_eq(s->stage, "sync_weights") && s->has_weights &&
          handed < s->weights && loads(p, st)) {
        snprintf(why, cap,
                 "load weights version %" PRIu64 " first (wait_weights)",
                 s->weights);
        refuse = 1;
      }
    }
  }
  msgpack_zone_destroy(&z);
  return refuse;
}

/* done's stage.report queued with p's row, in one transaction. */
static int
queue_report(edge_engine_op *o, edge_engine_pod *r) {
  edge_proc *p = o->p;
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  edge_op_stamp st = {p->pod, p->job, p->attempt, r->handed};
  msgpack_sbuffer_init(&sb);
  int rc =
      bus_subj_stage_report(subject, sizeof subject, p->a->cfg.node, p->pod);
  if (!rc)
    rc = edge_op_report(&o->op, &st, &sb);
  edge_msg m = {subject, "stage.report", sb.data, sb.size};
  r->done[o->op.stage] = o->op.step + 1;
  if (!rc && !(rc = edge_store_engine_pod_put(p->a->store, p->pod, r, &m)))
    edge_sender_wake(p->a);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

void
edge_engine_done(edge_engine_op *o) {
  edge_engine_pod r;
  char why[160];
  if (row_of(o->p, &r)) {
    edge_logf("error", o->p->pod, "engine row: %s", bus_last_error());
    edge_engine_refuse(o, "cannot read the node's store");
    return;
  }
  if (r.done[o->op.stage] == o->op.step + 1) {
    edge_engine_answer(o, edge_engine_ok()); /* said before: queued once */
    return;
  }
  if (o->op.stage == 3 && not_loaded(o->p, r.handed, why, sizeof why)) {
    edge_engine_refuse(o, why);
    return;
  }
  if (queue_report(o, &r)) {
    edge_logf("error", o->p->pod, "stage.report: %s", bus_last_error());
    snprintf(why, sizeof why, "cannot queue the report: %.100s",
             bus_last_error());
    edge_engine_refuse(o, why);
    return;
  }
  edge_engine_answer(o, edge_engine_ok());
}

/* ----------------------------------------------------------- weights */

/* The handed version recorded for p's attempt (kept across an agent
 * restart: the stamp on its later reports). */
static void
handed(edge_proc *p, uint64_t version) {
  edge_engine_pod r;
  if (row_of(p, &r) || r.handed >= version)
    return;
  r.handed = version;
  if (edge_store_engine_pod_put(p->a->store, p->pod, &r, NULL))
    edge_logf("error", p->pod, "cannot record weights %" PRIu64 ": %s", version,
              bus_last_error());
}

static void
weights_done(void *ud, int rc, const char *why, uint64_t version,
             const char *path, const char *sha256, uint64_t size) {
  edge_engine_op *o = ud;
  o->in_weights = 0;
  o->ww = NULL;
  if (!o->c) { /* the connection closed meanwhile: nobody to answer */
    o->answered = 1;
    edge_engine_answer(o, NULL);
    return;
  }
  if (rc) {
    edge_engine_refuse(o, rc == BUS_ETIMEOUT ? "timeout"
                          : why && *why      ? why
                                             : bus_strerror(rc));
    return;
  }
  int wait = o->op.kind == EDGE_OP_WAIT_WEIGHTS;
  if (wait)
    handed(o->p, version);
  json_t *ans = edge_engine_ok();
  json_object_set_new(ans, "version", json_integer((json_int_t)version));
  if (wait)
    json_object_set_new(ans, "path", json_string(path ? path : ""));
  json_object_set_new(ans, "sha256", json_string(sha256 ? sha256 : ""));
  json_object_set_new(ans, "size", json_integer((json_int_t)size));
  edge_engine_answer(o, ans);
}

void
edge_engine_publish(edge_engine_op *o) {
  char why[300];
  o->in_weights = 1;
  if (edge_weights_publish(o->p->a, o->p, o->op.version, o->op.path,
                           weights_done, o)) {
    o->in_weights = 0;
    snprintf(why, sizeof why, "%s", bus_last_error());
    edge_engine_refuse(o, why);
  }
}

void
edge_engine_wait_weights(edge_engine_op *o) {
  /* the weights part knows no poll: 0 s is 1 ms; no timeout is 0 there */
  uint64_t ms = o->op.timeout_ms < 0    ? 0
                : o->op.timeout_ms == 0 ? 1
                                        : (uint64_t)o->op.timeout_ms;
  o->in_weights = 1;
  edge_weights_wait *w =
      edge_weights_wait_for(o->p->a, o->p, o->op.version, ms, weights_done, o);
  if (o->in_weights) /* not called back yet */
    o->ww = w;
}
