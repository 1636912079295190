/*
 * main.c - lark-logs: pods' output lines from the ingress to LARK_LOGS.
 *
 *   lark-logs --url URL --creds FILE --data DIR
 *
 * Two threads share one connection: the service loop projects LARK_EVENTS
 * into the bindings view (and answers status and lark.cmd.*.logs.*), the
 * ingress thread reads the view and republishes batches (ingress.c).
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence and
 * the ingress from its durable consumer).
 */
#include <stdio.h>
#include <string.h>

#include "logs.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_INGRESS",
                                      "LARK_LOGS", NULL};

typedef struct app {
  svc s; /* first: the svc_on_* hooks take the app as their svc */
  bus_view *view;
  logs_ingress *in;
} app;

/* lark.cmd.<user>.logs.<verb> */
static void
on_query(bus_conn *c, const bus_cmd *cmd, void *ud) {
  app *a = ud;
  if (!cmd->reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_query_answer(a->view, logs_query, cmd->kind, cmd->verb, &cmd->body, &sb,
                   NULL);
  bus_conn_publish(c, cmd->reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

/* The ingress thread runs beside the service loop, on the open view. */
static int
start(svc *s, bus_view *v, void *ud) {
  app *a = ud;
  logs_ingress_opts io;
  logs_ingress_opts_init(&io);
  io.log = svc_on_ingress_log;
  io.ud = a;
  int rc = logs_ingress_start(s->conn, v, &io, &a->in);
  if (!rc)
    SVC_LOG(s, SVC_INFO, "lark.in.*.logs.>", 0, "ingress running");
  return rc;
}

static void
stop(svc *s, bus_view *v, void *ud) {
  (void)s, (void)v;
  logs_ingress_stop(((app *)ud)->in);
}

int
main(int argc, char **argv) {
  static const char *const kinds[] = {"logs", NULL};
  app a;
  memset(&a, 0, sizeof a);
  svc_view_opts o = {.kinds = kinds,
                     .on_command = on_query,
                     .ud = &a,
                     .view = &a.view,
                     .start = start,
                     .stop = stop};
  logs_view_def(&o.def);
  return svc_main(&a.s, "logs", argc, argv, streams, &o);
}
