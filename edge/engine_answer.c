/*
 * engine_answer.c - the bottom of the engine socket's files
 * (engine_int.h): a request's one answer, written to its connection
 * (sock.c) before the connection goes on with the lines it held, and the
 * request's end; the Job's projections as the store holds them. It calls
 * neither engine_sock.c nor engine_pod.c, which both answer through it.
 *
 * A request is freed only once nothing can call back into it: its wait
 * timer closed, its weights callback come (or cancelled).
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "sock.h"
#include "utf8.h"

static void
op_free(edge_engine_op *o) {
  edge_proc *p = o->p;
  edge_op_free(&o->op);
  free(o);
  edge_proc_unref(p);
}

static void
timer_closed(uv_handle_t *h) {
  op_free(h->data);
}

void
edge_engine_release(edge_engine_op *o) {
  if (o->in_weights)
    return; /* the weights callback releases it */
  if (o->has_timer) {
    o->has_timer = 0;
    uv_close((uv_handle_t *)&o->timer, timer_closed);
  } else
    op_free(o);
}

json_t *
edge_engine_ok(void) {
  return json_pack("{s:b}", "ok", 1);
}

void
edge_engine_answer(edge_engine_op *o, json_t *ans) {
  edge_client *c = o->c;
  char *text = ans ? json_dumps(ans, JSON_COMPACT) : NULL;
  json_decref(ans);
  if (c && !c->closing) {
    const char *t = text ? text : "{\"ok\":false,\"error\":\"out of memory\"}";
    edge_sock_reply(c, t, strlen(t));
  }
  free(text);
  o->answered = 1;
  if (o->sync)
    return; /* the dispatch (engine_sock.c) ends it */
  if (c)
    c->op = NULL;
  edge_engine_release(o);
  if (c)
    edge_sock_resume(c);
}

void
edge_engine_refuse(edge_engine_op *o, const char *why) {
  char text[512];
  size_t n = strlen(why);
  n = edge_utf8_cut(why, n, sizeof text - 1);
  memcpy(text, why, n);
  text[n] = 0;
  edge_utf8_fix(text, n);
  edge_engine_answer(o, json_pack("{s:b, s:s}", "ok", 0, "error", text));
}

int
edge_engine_projection(edge_proc *p, const char *what, msgpack_zone *z,
                       const void **out) {
  return edge_store_engine_load(p->a->store, p->job, what, z, out);
}
