/*
 * main.c - lark-devices: the robots and cameras of the edge nodes.
 *
 *   lark-devices --url URL --creds FILE --data DIR [--name INSTANCE]
 *
 * Three things run at once: the service loop over LARK_EVENTS (apply,
 * decide, outbox: robot.commanded when a holder ends, robot.desired to
 * the nodes' streams), the command and query handlers (robot.*,
 * device.*; their own threads, reading the view), and the ingress thread
 * (what nodes report and what their pods ask, on lark.in.*.dev.>). A
 * node's stream missing when its robot.desired goes out is made here, as
 * the scheduler makes it for pods.
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence,
 * the outbox from what it had not sent, the ingress from its durable
 * consumer).
 */
#include <string.h>

#include "larkdevices.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_INGRESS", NULL};

typedef struct app {
  svc s; /* first: the svc_on_* hooks take the app as their svc */
  bus_view *view;
  devices_ingress *in;
} app;

/* The outbox found a node's stream missing: make the known nodes'. */
static int
repair(svc *s, bus_view *v, void *ud) {
  (void)ud;
  return svc_node_streams_repair(s, v, "robots' desired states");
}

/* The ingress thread runs beside the service loop, on the open view. */
static int
start(svc *s, bus_view *v, void *ud) {
  app *a = ud;
  devices_ingress_opts io;
  devices_ingress_opts_init(&io);
  io.log = svc_on_ingress_log;
  io.ud = a;
  int rc = devices_ingress_start(s->conn, v, &io, &a->in);
  if (!rc)
    SVC_LOG(s, SVC_INFO, "lark.in.*.dev.>", 0, "ingress running");
  return rc;
}

static void
stop(svc *s, bus_view *v, void *ud) {
  (void)s, (void)v;
  devices_ingress_stop(((app *)ud)->in);
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  bus_verbs verbs = devices_verbs;
  verbs.on_done = svc_on_cmd_done;
  svc_view_opts o = {.verbs = &verbs,
                     .ud = &a,
                     .view = &a.view,
                     .tick_ms = 500,
                     .start = start,
                     .stop = stop,
                     .repair = repair};
  devices_view_def(&o.def);
  return svc_main(&a.s, "devices", argc, argv, streams, &o);
}
