/*
 * bench/fleet_storm.c - a registration storm: N nodes connect and
 * register at once, and the scheduler takes them all.
 *
 * The bed of bench_fleet_idle (fleetsim.c): a broker with the platform's
 * accounts (every node its own nkey user), a real lark-scheduler, nodes
 * in bench_uvfleet processes. First the floor: N plain core-NATS
 * connections opened at once, each with one subscription (the time until
 * every one is connected). Then the storm: N simulated lark-edge nodes
 * started at once; each connects, sends node.registered and opens its
 * slice consumer once the scheduler has made its stream. A node is Ready
 * when the scheduler's node.registered of it is in LARK_EVENTS. Printed
 * each second: connected, Ready, consumers open; then the time until all
 * were Ready (the target: 60 s), the broker's CPU over the storm
 * and its descriptors, sockets and memory after. Each round is a fresh
 * broker and scheduler.
 *
 *   bench_fleet_storm [--nodes N] [--procs P] [--rounds R] [--limit S]
 *                     [--creds DIR] [--streams file|memory]
 *                     [--node-streams add|registration]
 * --streams memory: the platform's streams (LARK_EVENTS, LARK_INGRESS...)
 * in memory too; by default they are on file, as a platform keeps them
 * (node streams are in memory either way). --node-streams: made before
 * the storm, as `larkctl node add` makes each (the default), or left to
 * the scheduler to make when each node registers (nodes added while no
 * broker ran, or before a broker restart: node streams are in memory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "edge.h"
#include "fleetsim.h"

typedef struct run {
  int n, procs, rounds, limit;
  const char *creds;
} run;

/* Follow the fleet each second until all are up (edge: Ready and their
 * consumers open) or the limit; the seconds it took, or -1. */
static double
curve(fleetsim *f, const run *r, int edge) {
  fleetsim_counts c;
  double t0 = bench_now_s(), next = 1;
  for (;;) {
    usleep(50 * 1000);
    fleetsim_poll(f, &c);
    long ready = fleetsim_ready(f);
    double t = bench_now_s() - t0;
    int done = edge ? ready >= r->n && c.cons >= r->n : c.conn >= r->n;
    if (t >= next || done) {
      if (edge)
        printf("    %5.1f s  connected %6ld  Ready %6ld  consumers %6ld  "
               "errors %ld\n",
               t, c.conn, ready, c.cons, c.err);
      else
        printf("    %5.1f s  connected %6ld  errors %ld\n", t, c.conn, c.err);
      next = (double)(long)t + 1;
    }
    if (done)
      return t;
    if (t > r->limit)
      return -1;
  }
}

static void
report(fleetsim *f, const char *what, double took, double cpu0, int n) {
  fleetsim_broker b;
  char ld[128];
  bench_load(ld, sizeof ld);
  fleetsim_broker_read(f, &b);
  if (took < 0)
    printf("  %s: not all %d up within the limit", what, n);
  else
    printf("  %s: all %d up in %.1f s", what, n, took);
  printf(" (broker CPU %.1f s; after: fds %ld, sockets %ld, rss %ld MiB; "
         "load %s)\n",
         b.cpu_s - cpu0, b.fds, b.conns, b.rss_kb / 1024, ld);
  fleetsim_broker_free(&b);
}

static double
phase(fleetsim *f, const run *r, int edge) {
  const char *core[] = {"--mode", "core", NULL};
  const char *flags[] = {"--mode", "edge", NULL};
  fleetsim_broker b;
  fleetsim_broker_read(f, &b);
  fleetsim_broker_free(&b);
  printf("  %s\n", edge ? "storm: lark-edge nodes registering"
                        : "floor: core-NATS connections");
  fleetsim_nodes(f, r->n, r->procs, edge ? flags : core);
  double took = curve(f, r, edge);
  report(f, edge ? "storm" : "floor", took, b.cpu_s, r->n);
  fleetsim_nodes_stop(f);
  sleep(2);
  return took;
}

int
main(int argc, char **argv) {
  char creds[256];
  const char *streams = "file", *made = "add";
  run r = {.n = 1000, .procs = 0, .rounds = 1, .limit = 180};
  setvbuf(stdout, NULL, _IOLBF, 0);
  fleetsim_creds_dir(creds, sizeof creds);
  r.creds = creds;
  const bench_opt opts[] = {
      {"--nodes", .i = &r.n},         {"--procs", .i = &r.procs},
      {"--rounds", .i = &r.rounds},   {"--limit", .i = &r.limit},
      {"--creds", .s = &r.creds},     {"--streams", .s = &streams},
      {"--node-streams", .s = &made}, {NULL}};
  if (bench_opts(argc, argv, opts) || r.n < 1 || r.rounds < 1 || r.limit < 1 ||
      (strcmp(made, "add") && strcmp(made, "registration")))
    bench_die("usage", "bench_fleet_storm [--nodes N] [--procs P] "
                       "[--rounds R] [--limit S] [--creds DIR] "
                       "[--streams file|memory] "
                       "[--node-streams add|registration]");
  if (r.procs < 1)
    r.procs = (r.n + 2499) / 2500;
  fleetsim_memory_streams(!strcmp(streams, "memory"));
  fleetsim_streams_at_add(!strcmp(made, "add"));
  int bad = 0;
  for (int i = 0; i < r.rounds; i++) {
    fleetsim f;
    fleetsim_up(&f, argv[0], "fleet_storm", r.creds, r.n, 1, 0);
    printf("fleet_storm round %d: %d nodes in %d processes; platform streams "
           "on %s, node streams made at %s\n",
           i + 1, r.n, r.procs, strcmp(streams, "memory") ? "file" : "memory",
           made);
    phase(&f, &r, 0);
    double took = phase(&f, &r, 1);
    printf("  all Ready %s 60 s\n",
           took >= 0 && took <= 60 ? "within" : "NOT within");
    bad |= took < 0;
    fleetsim_down(&f);
  }
  return bad;
}
