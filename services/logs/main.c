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
  svc s;
  bus_view *view;
  logs_ingress *in;
  bus_view_def def;
  uint64_t refused_logged;
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

static void
on_ingress_log(const char *subject, const char *msg, void *ud) {
  app *a = ud;
  SVC_LOG(&a->s, SVC_WARN, subject, 0, "%s", msg);
}

static void
on_batch(const bus_view_stats *st, void *ud) {
  app *a = ud;
  SVC_LOG(&a->s, SVC_DEBUG, "lark.ev.>", st->applied_seq,
          "applied %llu stale %llu rejected %llu",
          (unsigned long long)st->applied, (unsigned long long)st->stale,
          (unsigned long long)st->rejected);
}

static int
serve(app *a) {
  bus_serve *q = NULL;
  logs_ingress_opts io;
  logs_ingress_opts_init(&io);
  io.log = on_ingress_log;
  io.ud = a;
  int rc = bus_cmd_serve(a->s.conn, "logs", on_query, a, &q);
  if (!rc)
    rc = logs_ingress_start(a->s.conn, a->view, &io, &a->in);
  if (!rc) {
    bus_service_opts so;
    bus_service_opts_init(&so);
    so.name = a->s.instance ? a->s.instance : "logs";
    svc_service_input(&so, &a->def);
    so.stop_flag = &a->s.stop;
    so.on_batch = on_batch;
    so.on_state = svc_on_state;
    so.state_ud = &a->s;
    so.ud = a;
    SVC_LOG(&a->s, SVC_INFO, "lark.in.*.logs.>", 0, "running");
    rc = bus_service_run(a->s.conn, a->view, &so);
  }
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.ev.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  logs_ingress_stop(a->in);
  bus_conn_unserve(q);
  return rc;
}

static int
run(app *a) {
  logs_view_def(&a->def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = a->s.data;
  int rc = bus_view_open(&a->view, &a->def, &vo);
  if (rc) {
    SVC_LOG(&a->s, SVC_ERROR, "-", 0, "open view %s: %s (%s)", a->s.data,
            bus_strerror(rc), bus_last_error());
    return rc;
  }
  rc = serve(a);
  bus_view_close(a->view);
  return rc;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  int rc = svc_init(&a.s, "logs", argc, argv);
  if (rc)
    return rc;
  if (!a.s.data) {
    fprintf(stderr, "lark-logs: --data DIR (or LARK_DATA) is required\n");
    return 2;
  }
  svc_signals(&a.s);
  if (svc_connect(&a.s, streams) < 0)
    return 1;
  rc = run(&a);
  svc_close(&a.s);
  SVC_LOG(&a.s, SVC_INFO, "-", 0, "stopped");
  return rc ? 1 : 0;
}
