/*
 * main.c - lark-scheduler: places Jobs' pods on Nodes, follows them, and
 * tells each node what to run.
 *
 *   lark-scheduler --url URL --creds FILE --data DIR [--name INSTANCE]
 *   LARK_NODE_TIMEOUT_MS   silence before a node is NotReady (15000)
 *
 * Three things run at once: the service loop over LARK_EVENTS (apply,
 * decide, outbox), the command and query handlers (nats.c's threads,
 * reading the view), and the ingress thread (nodes' reports). Each node's
 * desired states go to its own stream, made here (slices.c).
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_INGRESS",
                                      "LARK_RUNS", NULL};

typedef struct app {
  svc s;
  bus_view *view;
  sched_ingress *in;
} app;

/* Every known node's own stream, made where it is missing. */
static int
ensure_slices(svc *s, bus_view *v, void *ud) {
  (void)ud;
  int made = 0;
  int rc = sched_slices_ensure(s->conn, v, &made);
  if (made)
    SVC_LOG(s, SVC_WARN, "lark.node.>", 0,
            "made %d missing node stream%s: their nodes get each pod's "
            "desired state again at its next change",
            made, made > 1 ? "s" : "");
  return rc;
}

static int
start_ingress(svc *s, bus_view *v, void *ud) {
  app *a = ud;
  const char *t = getenv("LARK_NODE_TIMEOUT_MS");
  int rc = ensure_slices(s, v, ud);
  if (rc) {
    SVC_LOG(s, SVC_ERROR, "lark.node.>", 0, "node streams: %s (%s)",
            bus_strerror(rc), bus_last_error());
    return rc;
  }
  return sched_ingress_start(s->conn, v, t ? atoi(t) : 15000, &a->in);
}

static void
stop_ingress(svc *s, bus_view *v, void *ud) {
  (void)s, (void)v;
  app *a = ud;
  sched_ingress_stop(a->in);
  a->in = NULL;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  svc_view_opts o = {.verbs = &sched_verbs,
                     .ud = &a,
                     .view = &a.view,
                     .tick_ms = 1000,
                     .start = start_ingress,
                     .stop = stop_ingress,
                     .repair = ensure_slices};
  sched_view_def(&o.def);
  return svc_main(&a.s, "scheduler", argc, argv, streams, &o);
}
