/*
 * main.c - lark-ipam: virtual addresses for the pods of domain Jobs, and
 * the relays' routes.
 *
 *   lark-ipam --url URL --creds FILE --data DIR [--name INSTANCE]
 *             [--hold DUR]
 *   LARK_IPAM_HOLD   how long an ended pod keeps its address (0; "30s")
 *
 * The service loop feeds the view from lark.ev.> (domains, the placement
 * log, Jobs, Pods, Nodes) and ticks decide every 500 ms for the hold;
 * commands and queries on lark.cmd.<user>.domain|domainpeer|route.* run
 * in nats.c's threads and only read the view (apply and delete append).
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", "LARK_ROUTES", NULL};

typedef struct app {
  svc s;
  bus_view *view;
  ipam_opts opts;
  bus_view_def def;
  uint64_t logged_seq;
} app;

static void
on_cmd(const bus_cmd *cmd, int rc, void *ud) {
  app *a = ud;
  SVC_LOG(&a->s, rc ? SVC_INFO : SVC_DEBUG, "lark.cmd", 0, "%s.%s by %s: %s",
          cmd->kind, cmd->verb, cmd->user, rc ? bus_strerror(rc) : "ok");
}

static void
on_batch(const bus_view_stats *st, void *ud) {
  app *a = ud;
  if (st->applied_seq == a->logged_seq)
    return;
  a->logged_seq = st->applied_seq;
  SVC_LOG(&a->s, SVC_DEBUG, "lark.ev.>", st->applied_seq,
          "applied %llu stale %llu rejected %llu outbox %llu",
          (unsigned long long)st->applied, (unsigned long long)st->stale,
          (unsigned long long)st->rejected, (unsigned long long)st->outbox);
}

static int
run(app *a) {
  bus_verbs verbs = ipam_verbs;
  verbs.on_done = on_cmd;
  bus_cmd_server *q = NULL;
  int rc = bus_verbs_serve(a->s.conn, &verbs, a->view, a, 0, &q);
  if (!rc) {
    bus_service_opts so;
    bus_service_opts_init(&so);
    so.name = a->s.instance ? a->s.instance : "ipam";
    svc_service_input(&so, &a->def);
    so.stop_flag = &a->s.stop;
    so.tick_ms = 500;
    so.on_batch = on_batch;
    so.on_state = svc_on_state;
    so.state_ud = &a->s;
    so.ud = a;
    SVC_LOG(&a->s, SVC_INFO, "lark.ev.>", 0, "running, hold %lld ms",
            (long long)(a->opts.hold_ns / 1000000));
    rc = bus_service_run(a->s.conn, a->view, &so);
  }
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.ev.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  bus_cmd_server_stop(q);
  return rc;
}

/* "500ms", "30s", "5m", "1h" or seconds; -1 when invalid. */
static int64_t
duration(const char *s) {
  char *end;
  double v = strtod(s, &end);
  double unit = !*end                ? 1e9
                : !strcmp(end, "ms") ? 1e6
                : !strcmp(end, "s")  ? 1e9
                : !strcmp(end, "m")  ? 60e9
                : !strcmp(end, "h")  ? 3600e9
                                     : -1;
  if (end == s || v < 0 || unit < 0 || v * unit > 30 * 86400e9)
    return -1;
  return (int64_t)(v * unit);
}

static int
own_flags(app *a, int *argc, char **argv) {
  const char *env = getenv("LARK_IPAM_HOLD");
  if (env && (a->opts.hold_ns = duration(env)) < 0)
    return -1;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    if (!strcmp(argv[i], "--hold") && i + 1 < *argc) {
      if ((a->opts.hold_ns = duration(argv[++i])) < 0)
        return -1;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = NULL;
  return 0;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  if (own_flags(&a, &argc, argv)) {
    fprintf(stderr, "lark-ipam: --hold takes 500ms, 30s, 5m, 1h (<= 30d)\n");
    return 2;
  }
  int rc = svc_init(&a.s, "ipam", argc, argv);
  if (rc)
    return rc;
  svc_signals(&a.s);
  if (svc_connect(&a.s, streams) < 0)
    return 1;
  ipam_view_def(&a.def);
  a.def.ud = &a.opts;
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = a.s.data;
  rc = bus_view_open(&a.view, &a.def, &vo);
  if (rc)
    SVC_LOG(&a.s, SVC_ERROR, "-", 0, "open view %s: %s (%s)", a.s.data,
            bus_strerror(rc), bus_last_error());
  else
    rc = run(&a);
  bus_view_close(a.view);
  svc_close(&a.s);
  SVC_LOG(&a.s, SVC_INFO, "-", 0, "stopped");
  return rc ? 1 : 0;
}
