/*
 * main.c - lark-scheduler: places Jobs' pods on Nodes, follows them, and
 * tells each node what to run.
 *
 *   lark-scheduler --url URL --creds FILE --data DIR [--name INSTANCE]
 *   LARK_NODE_TIMEOUT_MS   silence before a node is NotReady (180000)
 *
 * Three things run at once: the service loop over LARK_EVENTS (apply,
 * decide, outbox), the command and query handlers (nats.c's threads,
 * reading the view), and the ingress thread (nodes' reports). Each node's
 * desired states go to its own stream, made here (slices.c) and removed
 * here when the node is deleted (gone.c).
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_INGRESS",
                                      "LARK_RUNS", NULL};

/* Command workers: job.apply commands that come together are checked and
 * appended as one group (commands.c), as many as there are workers. */
#define SCHED_CMD_WORKERS 64

typedef struct app {
  svc s;
  bus_view *view;
  sched_ingress *in;
  sched_gone_state gone; /* deleted nodes' streams (gone.c) */
} app;

/* Every known node's own stream, made where it is missing; what one made
 * anew lacks (each pod's desired state) is sent again. */
static int
ensure_slices(svc *s, bus_view *v, void *ud) {
  (void)ud;
  return svc_node_streams_repair(s, v, "pods' desired states");
}

/* Deleted nodes' streams, once nothing is left to send into them. */
static void
remove_gone(svc *s, bus_view *v, const bus_view_stats *st, void *ud) {
  app *a = ud;
  int removed = 0;
  int rc = sched_gone_sweep(s->conn, v, st->outbox, &a->gone, &removed);
  if (removed)
    SVC_LOG(s, SVC_INFO, "lark.node.>", 0, "removed %d deleted node%s stream%s",
            removed, removed > 1 ? "s'" : "'s", removed > 1 ? "s" : "");
  if (rc)
    SVC_LOG(s, SVC_WARN, "lark.node.>", 0,
            "a deleted node's stream stays until the next pass: %s (%s)",
            bus_strerror(rc), bus_last_error());
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
  return sched_ingress_start(s->conn, v, t ? atoi(t) : SCHED_NODE_TIMEOUT_MS,
                             &a->in);
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
                     .workers = SCHED_CMD_WORKERS,
                     .ud = &a,
                     .view = &a.view,
                     .tick_ms = 1000,
                     .start = start_ingress,
                     .stop = stop_ingress,
                     .repair = ensure_slices,
                     .after_batch = remove_gone};
  sched_view_def(&o.def);
  return svc_main(&a.s, "scheduler", argc, argv, streams, &o);
}
