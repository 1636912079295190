/*
 * engine_sock.c - the RL engine's requests on a pod's LARK_SOCKET
 * (engine_sock.h): each request's life from its line to its one answer,
 * and the two answered from the Job's projections in the node's store:
 *
 *   wait   answered when engine.stages has the stage started at a step
 *          >= the one asked (the latest, so a replacement pod joins at
 *          the current step), refused when the run ended, or after its
 *          timeout; a wait with no projection yet waits for one
 *   peers  engine.peers as it is (an empty list before it came)
 *
 * done and the weights requests, which depend on what the node did for
 * the pod itself, are engine_pod.c's; the answer, the same for all, is
 * engine_answer.c's. The socket (sock.c) hands a request line here
 * through the hooks the agent sets (edge_agent.sock_op, sock_cancel).
 * A wait is looked at again each time the Job's engine.stages changes
 * (engine.c calls on_stages); it is never answered from anything but
 * the store, so an agent restarted in between answers the same (the
 * pod's client re-sends its wait).
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "sock.h"
#include "utf8.h"

/* --------------------------------------------------------------- wait */

/* The stage's state in st, or NULL. */
static const bus_stage_state *
stage_in(const bus_ev_engine_stages *st, const char *stage) {
  for (uint32_t i = 0; st->has_stages && i < st->stages.n; i++)
    if (bus_str_eq(st->stages.v[i].stage, stage))
      return &st->stages.v[i];
  return NULL;
}

/* Answer o's wait if the Job's engine.stages allows it: 1 when it did. */
static int
wait_check(edge_engine_op *o) {
  msgpack_zone z;
  const void *v;
  const char *stage = edge_op_stages[o->op.stage];
  char mode[32];
  int done = 0;
  msgpack_zone_init(&z, 2048);
  if (!edge_engine_projection(o->p, "stages", &z, &v)) {
    const bus_ev_engine_stages *st = v;
    const bus_stage_state *s = stage_in(st, stage);
    if (st->has_ended && st->ended) {
      edge_engine_refuse(o, "the run ended");
      done = 1;
    } else if (s && s->step >= o->op.step) {
      bus_str_copy(st->has_mode ? st->mode : BUS_STR("sequential"), mode,
                   sizeof mode);
      json_t *ans = edge_engine_ok();
      json_object_set_new(ans, "stage", json_string(stage));
      json_object_set_new(ans, "step", json_integer((json_int_t)s->step));
      json_object_set_new(ans, "weights", json_integer((json_int_t)s->weights));
      json_object_set_new(ans, "mode", json_string(mode));
      edge_engine_answer(o, ans);
      done = 1;
    }
  }
  msgpack_zone_destroy(&z);
  return done;
}

static void
wait_timeout(uv_timer_t *t) {
  edge_engine_op *o = t->data;
  if (!o->answered)
    edge_engine_refuse(o, "timeout");
}

static void
op_wait(edge_engine_op *o) {
  if (wait_check(o))
    return;
  if (o->op.timeout_ms == 0) {
    edge_engine_refuse(o, "timeout");
    return;
  }
  if (o->op.timeout_ms > 0) {
    uv_timer_init(o->p->a->loop, &o->timer);
    o->timer.data = o;
    o->has_timer = 1;
    uv_timer_start(&o->timer, wait_timeout, (uint64_t)o->op.timeout_ms, 0);
  }
}

void
edge_engine_sock_on_stages(edge_agent *a, const char *job) {
  for (edge_proc *p = a->procs; p; p = p->next) {
    if (strcmp(p->job, job))
      continue;
    for (edge_client *c = p->clients; c; c = c->next)
      if (c->op && !c->op->answered && c->op->op.kind == EDGE_OP_WAIT)
        wait_check(c->op);
  }
}

/* -------------------------------------------------------------- peers */

static json_t *
peer_json(const bus_peer *pe) {
  char pod[EDGE_POD_SZ], task[EDGE_POD_SZ], node[EDGE_NAME_SZ];
  char role[16] = "", cluster[EDGE_NAME_SZ] = "", addr[80] = "", phase[16] = "";
  bus_str_copy(pe->pod, pod, sizeof pod);
  bus_str_copy(pe->task, task, sizeof task);
  bus_str_copy(pe->node, node, sizeof node);
  if (pe->has_role)
    bus_str_copy(pe->role, role, sizeof role);
  if (pe->has_cluster)
    bus_str_copy(pe->cluster, cluster, sizeof cluster);
  if (pe->has_address)
    bus_str_copy(pe->address, addr, sizeof addr);
  if (pe->has_phase)
    bus_str_copy(pe->phase, phase, sizeof phase);
  edge_utf8_fix(addr, strlen(addr)); /* the only free text */
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "pod", pod,
                   "task", task, "role", role, "node", node, "cluster", cluster,
                   "address", addr, "attempt",
                   (json_int_t)(pe->has_attempt ? pe->attempt : 0), "phase",
                   phase);
}

static void
op_peers(edge_engine_op *o) {
  msgpack_zone z;
  const void *v;
  json_t *list = json_array();
  msgpack_zone_init(&z, 4096);
  if (!edge_engine_projection(o->p, "peers", &z, &v)) {
    const bus_ev_engine_peers *pe = v;
    for (uint32_t i = 0; pe->has_peers && i < pe->peers.n; i++)
      json_array_append_new(list, peer_json(&pe->peers.v[i]));
  }
  msgpack_zone_destroy(&z);
  json_t *ans = edge_engine_ok();
  json_object_set_new(ans, "peers", list);
  edge_engine_answer(o, ans);
}

/* ---------------------------------------------------------- dispatch */

void
edge_engine_sock_op(edge_client *c, const char *line, size_t len) {
  edge_engine_op *o = calloc(1, sizeof *o);
  if (!o) {
    const char *t = "{\"ok\":false,\"error\":\"out of memory\"}";
    edge_sock_reply(c, t, strlen(t));
    return;
  }
  o->c = c, o->p = c->p, o->sync = 1;
  o->p->handles++;
  c->op = o;
  const char *why = edge_op_parse(line, len, &o->op);
  if (why)
    edge_engine_refuse(o, why);
  else if (o->op.kind == EDGE_OP_WAIT)
    op_wait(o);
  else if (o->op.kind == EDGE_OP_PEERS)
    op_peers(o);
  else if (o->op.kind == EDGE_OP_DONE)
    edge_engine_done(o);
  else if (o->op.kind == EDGE_OP_PUBLISH_WEIGHTS)
    edge_engine_publish(o);
  else
    edge_engine_wait_weights(o);
  o->sync = 0;
  if (o->answered) { /* now: the socket goes on with the next line */
    c->op = NULL;
    edge_engine_release(o);
  }
}

void
edge_engine_sock_cancel(edge_client *c) {
  edge_engine_op *o = c->op;
  if (!o)
    return;
  c->op = NULL;
  o->c = NULL;
  o->answered = 1;
  if (o->ww) {
    edge_weights_wait_cancel(o->ww);
    o->ww = NULL;
    o->in_weights = 0;
  }
  edge_engine_release(o);
}
