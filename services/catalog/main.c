/*
 * main.c - lark-catalog: keeps the catalog view and answers its queries.
 *
 *   lark-catalog --url URL --creds FILE --data DIR
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence).
 */
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", NULL};

typedef struct app {
  svc s;
  bus_view *view;
  uint64_t logged_seq;
} app;

/* lark.cmd.<user>.catalog.<verb> */
static void
on_query(bus_conn *c, const bus_cmd *cmd, void *ud) {
  app *a = ud;
  if (!cmd->reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_query_answer(a->view, catalog_query, cmd->kind, cmd->verb, &cmd->body,
                   &sb, NULL);
  bus_conn_publish(c, cmd->reply, sb.data, sb.size);
  SVC_LOG(&a->s, SVC_DEBUG, "lark.cmd", 0, "%s %s.%s answered", cmd->user,
          cmd->kind, cmd->verb);
  msgpack_sbuffer_destroy(&sb);
}

static void
on_batch(const bus_view_stats *st, void *ud) {
  app *a = ud;
  if (st->applied_seq == a->logged_seq)
    return;
  a->logged_seq = st->applied_seq;
  SVC_LOG(&a->s, SVC_DEBUG, "lark.ev.>", st->applied_seq,
          "applied %llu stale %llu rejected %llu",
          (unsigned long long)st->applied, (unsigned long long)st->stale,
          (unsigned long long)st->rejected);
}

static int
run(app *a) {
  bus_view_def def;
  catalog_view_def(&def);
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
  rc = bus_cmd_serve(a->s.conn, "catalog", on_query, a, &q);
  if (!rc) {
    bus_service_opts so;
    bus_service_opts_init(&so);
    so.name = "catalog";
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
  app a;
  memset(&a, 0, sizeof a);
  int rc = svc_init(&a.s, "catalog", argc, argv);
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
