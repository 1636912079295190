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

/* How long logs.sync waits for the ingress at most: a reader waits this
 * long only while lark-logs is behind. */
#define SYNC_WAIT_MS 3000

/* logs.sync's answer, {synced}: what logs_ingress_sync said (in ud). */
static int
pack_synced(bus_txn *t, const char *kind, const char *verb,
            const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)t, (void)kind, (void)verb, (void)req;
  int synced = *(const int *)ud;
  if (synced < 0)
    return synced;
  msgpack_pack_map(pk, 1);
  bus_pack_kv_bool(pk, "synced", synced);
  return 0;
}

/* lark.cmd.<user>.logs.<verb>: list and describe read the view; sync
 * waits for the ingress (logs_ingress_sync). */
static void
on_query(bus_conn *c, const bus_cmd *cmd, void *ud) {
  app *a = ud;
  if (!cmd->reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (!strcmp(cmd->verb, "sync")) {
    int synced = logs_ingress_sync(c, LOGS_INGRESS_DURABLE, SYNC_WAIT_MS);
    bus_query_answer(a->view, pack_synced, cmd->kind, cmd->verb, &cmd->body,
                     &sb, &synced);
  } else {
    bus_query_answer(a->view, logs_query, cmd->kind, cmd->verb, &cmd->body, &sb,
                     NULL);
  }
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
