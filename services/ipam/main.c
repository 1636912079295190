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
} app;

static void
on_cmd(const bus_cmd *cmd, int rc, void *ud) {
  app *a = ud;
  SVC_LOG(&a->s, rc ? SVC_INFO : SVC_DEBUG, "lark.cmd", 0, "%s.%s by %s: %s",
          cmd->kind, cmd->verb, cmd->user, rc ? bus_strerror(rc) : "ok");
}

/* Before the loop: the hold decide keeps ended pods' addresses for. */
static int
start(svc *s, bus_view *v, void *ud) {
  (void)v;
  SVC_LOG(s, SVC_INFO, "lark.ev.>", 0, "running, hold %lld ms",
          (long long)(((app *)ud)->opts.hold_ns / 1000000));
  return 0;
}

/* --hold and LARK_IPAM_HOLD: "500ms", "30s", "5m", "1h" or seconds, at
 * most 30 days. */
static int
hold(const char *v, void *out) {
  int64_t ns;
  if (bus_duration_parse(v, 1e9, &ns) || ns > (int64_t)30 * 86400 * 1000000000)
    return -1;
  *(int64_t *)out = ns;
  return 0;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  const svc_flag flags[] = {{"--hold", "LARK_IPAM_HOLD", hold, &a.opts.hold_ns},
                            {0}};
  if (svc_own_flags(&argc, argv, flags)) {
    fprintf(stderr, "lark-ipam: --hold takes 500ms, 30s, 5m, 1h (<= 30d)\n");
    return 2;
  }
  bus_verbs verbs = ipam_verbs;
  verbs.on_done = on_cmd;
  svc_view_opts o = {.verbs = &verbs,
                     .ud = &a,
                     .view = &a.view,
                     .tick_ms = 500,
                     .start = start};
  ipam_view_def(&o.def);
  o.def.ud = &a.opts;
  return svc_main(&a.s, "ipam", argc, argv, streams, &o);
}
