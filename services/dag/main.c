/*
 * main.c - lark-dag: runs Workflows, submitting each template's Job once
 * its dependencies succeeded (see dag.h for the rules).
 *
 *   lark-dag --url URL --creds FILE --data DIR
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence and
 * the outbox publishes what was decided but not yet sent).
 */
#include <stdio.h>
#include <string.h>

#include "app.h"

static const char *const streams[] = {"LARK_EVENTS", NULL};

static void
on_batch(const bus_view_stats *st, void *ud) {
  dag_app *a = ud;
  if (st->applied_seq == a->logged_seq)
    return;
  a->logged_seq = st->applied_seq;
  SVC_LOG(&a->s, SVC_DEBUG, "lark.ev.>", st->applied_seq,
          "applied %llu stale %llu rejected %llu outbox %llu",
          (unsigned long long)st->applied, (unsigned long long)st->stale,
          (unsigned long long)st->rejected, (unsigned long long)st->outbox);
}

static int
run(dag_app *a) {
  bus_view_def def;
  dag_view_def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = a->s.data;
  int rc = bus_view_open(&a->view, &def, &vo);
  if (rc) {
    SVC_LOG(&a->s, SVC_ERROR, "-", 0, "open view %s: %s (%s)", a->s.data,
            bus_strerror(rc), bus_last_error());
    return rc;
  }
  bus_serve *q = NULL;
  rc = bus_cmd_serve(a->s.conn, "workflow", dag_cmd_handle, a, &q);
  if (!rc) {
    bus_service_opts so;
    bus_service_opts_init(&so);
    so.name = "dag";
    so.stop = &a->s.stop;
    so.on_batch = on_batch;
    so.ud = a;
    SVC_LOG(&a->s, SVC_INFO, "lark.ev.>", a->logged_seq, "running");
    rc = bus_service_run(a->s.conn, a->view, &so);
  }
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.ev.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  bus_conn_unserve(q);
  bus_view_close(a->view);
  return rc;
}

int
main(int argc, char **argv) {
  dag_app a;
  memset(&a, 0, sizeof a);
  int rc = svc_init(&a.s, "dag", argc, argv);
  if (rc)
    return rc;
  svc_signals(&a.s);
  if (svc_connect(&a.s, streams) < 0)
    return 1;
  rc = run(&a);
  svc_close(&a.s);
  SVC_LOG(&a.s, SVC_INFO, "-", 0, "stopped");
  return rc ? 1 : 0;
}
