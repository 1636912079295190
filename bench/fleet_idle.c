/*
 * bench/fleet_idle.c - what idle edge nodes cost the broker.
 *
 * A broker with the platform's accounts (every node its own nkey user),
 * a real lark-scheduler, and N simulated nodes in bench_uvfleet processes
 * (fleetsim.c, uvfleet.c). Each round measures, over the same window:
 *   floor: N connections that each hold one plain core-NATS subscription
 *          and do nothing else;
 *   edge:  N nodes doing on the wire what an idle lark-edge does: its
 *          registration, its slice consumer, a pull always waiting (the
 *          fetch expiry), the consumer check, and its heartbeats, which
 *          the scheduler reads.
 * For each: the broker's CPU (share of one core, and per 1,000 nodes),
 * bytes per second on its client sockets both ways (per node, in kbit/s),
 * its descriptors, client sockets and resident memory. The edge's timing
 * defaults to lark-edge's own (edge/agent.c, edge/slice.c); the flags try
 * others. Rounds run floor then edge, twice by default, so load drift on
 * a shared machine shows.
 *
 *   bench_fleet_idle [--nodes N] [--procs P] [--seconds S] [--rounds R]
 *                    [--heartbeat-ms H] [--expiry-ms E] [--check-ms C]
 *                    [--limit S] [--creds DIR] [--streams file|memory]
 * --limit: how long the nodes may take to come up (600 s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "edge.h"
#include "fleetsim.h"

typedef struct run {
  int n, procs, seconds, rounds, hb, expiry, check, limit;
  const char *creds;
  double cpu, bytes; /* the last phase's broker CPU % and bytes/s */
} run;

/* Wait until every node is up (connected; for the edge, its consumer
 * open); 0, or -1 after limit_s. */
static int
wait_up(fleetsim *f, const run *r, int edge, int limit_s) {
  fleetsim_counts c;
  double took;
  int which = edge ? FLEETSIM_CONS : FLEETSIM_CONN;
  if (fleetsim_wait(f, which, r->n, limit_s, 250, &c, &took) == 0) {
    printf("  %d %s up in %.1f s\n", r->n, edge ? "nodes" : "subscribers",
           took);
    return 0;
  }
  printf("  only %ld of %d up after %d s (connected %ld, errors %ld)\n",
         edge ? c.cons : c.conn, r->n, limit_s, c.conn, c.err);
  return -1;
}

static void
measure(fleetsim *f, run *r, const char *what) {
  fleetsim_broker a, b;
  fleetsim_counts c0, c1;
  char ld[128];
  fleetsim_poll(f, &c0);
  fleetsim_broker_read(f, &a);
  double t0 = bench_now_s();
  sleep((unsigned)r->seconds);
  fleetsim_broker_read(f, &b);
  fleetsim_poll(f, &c1);
  double dt = bench_now_s() - t0;
  uint64_t in, out;
  fleetsim_bytes(&a, &b, &in, &out);
  fleetsim_broker_free(&a);
  fleetsim_broker_free(&b);
  double cpu = (b.cpu_s - a.cpu_s) / dt * 100.0;
  double bytes = (double)(in + out) / dt;
  bench_load(ld, sizeof ld);
  printf("  %-6s %5d nodes: broker CPU %6.2f %% of a core (%5.2f %% per 1000)"
         ", %9.0f B/s (%.3f kbit/s per node: in %.0f out %.0f B/s), "
         "fds %ld, sockets %ld, rss %ld MiB; pulls %.0f/s hb %.0f/s, "
         "errors %ld; load %s\n",
         what, r->n, cpu, cpu * 1000.0 / r->n, bytes, bytes * 8 / 1000 / r->n,
         (double)in / dt, (double)out / dt, b.fds, b.conns, b.rss_kb / 1024,
         (double)(c1.pulls - c0.pulls) / dt, (double)(c1.hb - c0.hb) / dt,
         c1.err - c0.err, ld);
  r->cpu = cpu, r->bytes = bytes;
}

static void
phase(fleetsim *f, run *r, int edge) {
  char hb[16], ex[16], ck[16];
  snprintf(hb, sizeof hb, "%d", r->hb);
  snprintf(ex, sizeof ex, "%d", r->expiry);
  snprintf(ck, sizeof ck, "%d", r->check);
  const char *core[] = {"--mode", "core", NULL};
  const char *flags[] = {"--mode",      "edge", "--heartbeat-ms", hb,
                         "--expiry-ms", ex,     "--check-ms",     ck,
                         NULL};
  fleetsim_nodes(f, r->n, r->procs, edge ? flags : core);
  if (wait_up(f, r, edge, r->limit) == 0) {
    /* past the start: every node's periodic work in its steady phase */
    sleep(3);
    measure(f, r, edge ? "edge" : "floor");
  }
  fleetsim_nodes_stop(f);
  sleep(2); /* the broker lets the connections go */
}

int
main(int argc, char **argv) {
  char creds[256];
  const char *streams = "file";
  run r = {.n = 1000,
           .procs = 0,
           .seconds = 30,
           .rounds = 2,
           .limit = 600,
           .hb = EDGE_HEARTBEAT_MS,
           .expiry = EDGE_SLICE_WAIT_MS,
           .check = BUS_CONSUMER_CHECK_MS};
  setvbuf(stdout, NULL, _IOLBF, 0);
  fleetsim_creds_dir(creds, sizeof creds);
  r.creds = creds;
  const bench_opt opts[] = {{"--nodes", .i = &r.n},
                            {"--procs", .i = &r.procs},
                            {"--seconds", .i = &r.seconds},
                            {"--rounds", .i = &r.rounds},
                            {"--heartbeat-ms", .i = &r.hb},
                            {"--expiry-ms", .i = &r.expiry},
                            {"--check-ms", .i = &r.check},
                            {"--limit", .i = &r.limit},
                            {"--creds", .s = &r.creds},
                            {"--streams", .s = &streams},
                            {NULL}};
  if (bench_opts(argc, argv, opts) || r.n < 1 || r.seconds < 1 || r.rounds < 1)
    bench_die("usage", "bench_fleet_idle [--nodes N] [--procs P] [--seconds S]"
                       " [--rounds R] [--heartbeat-ms H] [--expiry-ms E] "
                       "[--check-ms C] [--limit S] [--creds DIR] "
                       "[--streams file|memory]");
  if (r.procs < 1) /* a few thousand nodes a loop */
    r.procs = (r.n + 2499) / 2500;
  fleetsim_memory_streams(!strcmp(streams, "memory"));
  fleetsim f;
  /* NotReady after three silent heartbeats, as the scheduler's default */
  fleetsim_up(&f, argv[0], "fleet_idle", r.creds, r.n, 1, 3 * r.hb);
  printf("fleet_idle: %d nodes in %d processes; edge timing: heartbeat %d ms, "
         "fetch expiry %d ms, consumer check %d ms; window %d s\n",
         r.n, r.procs, r.hb, r.expiry, r.check, r.seconds);
  for (int i = 0; i < r.rounds; i++) {
    printf("round %d\n", i + 1);
    phase(&f, &r, 0);
    double cpu = r.cpu, bytes = r.bytes;
    phase(&f, &r, 1);
    printf("  edge over floor: %.3f kbit/s per node, %.2f %% of a core per "
           "1000 nodes\n",
           (r.bytes - bytes) * 8 / 1000 / r.n, (r.cpu - cpu) * 1000.0 / r.n);
    r.cpu = r.bytes = 0;
  }
  fleetsim_down(&f);
  return 0;
}
