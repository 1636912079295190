/*
 * main.c - lark-scheduler: places Jobs' pods on Nodes, follows them, and
 * tells each node what to run.
 *
 *   lark-scheduler --url URL --creds FILE --data DIR
 *   LARK_NODE_TIMEOUT_MS   silence before a node is NotReady (15000)
 *
 * Three things run at once: the service loop over LARK_EVENTS (apply,
 * decide, outbox), the command and query handlers (nats.c's threads,
 * reading the view), and the ingress thread (nodes' reports).
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_NODES",
                                      "LARK_INGRESS", "LARK_RUNS", NULL};

static int
run(svc *s, bus_view *v) {
  bus_serve *jobs = NULL, *nodes = NULL, *tasks = NULL, *pods = NULL;
  sched_ingress *in = NULL;
  const char *t = getenv("LARK_NODE_TIMEOUT_MS");
  int rc = sched_commands_serve(s->conn, v, &jobs, &nodes, &tasks, &pods);
  if (!rc)
    rc = sched_ingress_start(s->conn, v, t ? atoi(t) : 15000, &in);
  if (!rc) {
    bus_service_opts so;
    bus_service_opts_init(&so);
    so.name = s->instance ? s->instance : "scheduler";
    so.stop = &s->stop;
    so.tick_ms = 1000;
    SVC_LOG(s, SVC_INFO, "lark.ev.>", 0, "running");
    rc = bus_service_run(s->conn, v, &so);
  }
  if (rc)
    SVC_LOG(s, SVC_ERROR, "lark.ev.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  sched_ingress_stop(in);
  bus_conn_unserve(jobs);
  bus_conn_unserve(nodes);
  bus_conn_unserve(tasks);
  bus_conn_unserve(pods);
  return rc;
}

int
main(int argc, char **argv) {
  svc s;
  int rc = svc_init(&s, "scheduler", argc, argv);
  if (rc)
    return rc;
  svc_signals(&s);
  if (svc_connect(&s, streams) < 0)
    return 1;
  bus_view_def def;
  sched_view_def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = s.data;
  bus_view *v = NULL;
  rc = bus_view_open(&v, &def, &vo);
  if (rc)
    SVC_LOG(&s, SVC_ERROR, "-", 0, "open view %s: %s (%s)", s.data,
            bus_strerror(rc), bus_last_error());
  else
    rc = run(&s, v);
  bus_view_close(v);
  svc_close(&s);
  SVC_LOG(&s, SVC_INFO, "-", 0, "stopped");
  return rc ? 1 : 0;
}
