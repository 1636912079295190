/*
 * bench/nodes_lost.c - what a node lost costs the scheduler when many go
 * at once (an edge site cut off: each of its nodes NotReady).
 *
 * Starts a nats-server and a lark-scheduler, registers N nodes through
 * the command path, submits J Jobs of P pods (spread and pack in turn)
 * and waits until every pod is bound. Then, for L of the nodes, two
 * rounds of events, each appended one after another with the version
 * check and timed until the scheduler's view has applied the last and
 * sent what it decided (its outbox empty):
 *
 *   - the floor: node.cordoned for each (the same apply path, the node's
 *     record written, no pod visited);
 *   - node.notready for each: the node's running pods failed, placed
 *     again elsewhere by their retry rules (the Jobs allow none: each
 *     pod lost is Failed, and its Job with it).
 *
 *   bench_nodes_lost [--nodes N] [--jobs J] [--pods P] [--lost L]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

/* Append type (data {reason}) to each of nodes n0000.. n<lost-1> at its
 * subject's last sequence; the last sequence written. */
static uint64_t
append_each(bus_conn *c, const char *type, int lost) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_str(&pk, "reason");
  bus_pack_str(&pk, "bench");
  uint64_t seq = 0;
  for (int i = 0; i < lost; i++) {
    char subject[64];
    uint64_t prev = 0;
    snprintf(subject, sizeof subject, "lark.ev.node.n%04d", i);
    if (bus_last_event_seq(c, "LARK_EVENTS", subject, &prev))
      bench_die(subject, bus_last_error());
    seq = bench_append(c, subject, type, prev, &sb);
  }
  msgpack_sbuffer_destroy(&sb);
  return seq;
}

/* Until the scheduler's view has applied seq and sent what it decided
 * (its outbox empty; 60 s at most). */
static void
wait_settled(bus_conn *c, uint64_t seq) {
  for (int i = 0; i < 60000; i++, usleep(1000)) {
    bus_status st;
    if (bus_status_query(c, "scheduler", 1000, &st) == 0 && st.seq >= seq &&
        st.outbox == 0)
      return;
  }
  bench_die("scheduler", "did not apply the nodes' events within 60 s");
}

/* Seconds from the first of lost appends of type until the scheduler
 * applied them and sent what it decided. */
static double
timed(bus_conn *c, const char *type, int lost) {
  double t0 = bench_now_s();
  wait_settled(c, append_each(c, type, lost));
  return bench_now_s() - t0;
}

int
main(int argc, char **argv) {
  int nodes = 1000, jobs = 100, pods = 100, lost = 100;
  const bench_opt opts[] = {{"--nodes", .i = &nodes},
                            {"--jobs", .i = &jobs},
                            {"--pods", .i = &pods},
                            {"--lost", .i = &lost},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (nodes <= 0 || jobs <= 0 || pods <= 0 || lost <= 0 || lost > nodes ||
      nodes > 10000)
    bench_die("usage", "bench_nodes_lost [--nodes N <= 10000] [--jobs J] "
                       "[--pods P] [--lost L <= N]");
  lt_natsd srv;
  bus_conn *c;
  char dir[256], load[64];
  pid_t sched =
      bench_scheduler_up(argv[0], "bench-lost", 0, &srv, &c, dir, sizeof dir);
  bench_add_nodes(c, nodes);
  bench_add_jobs(c, jobs, pods, NULL);
  long want = (long)jobs * pods;
  if (bench_wait_bindings(c, want, bench_now_s() + 120, NULL, NULL) < want)
    bench_die("timeout", "not every pod was bound within 120 s");
  uint64_t last = 0;
  bus_stream_last_seq(c, "LARK_EVENTS", &last);
  wait_settled(c, last); /* the pods' desired states sent */
  double floor = timed(c, "node.cordoned", lost);
  double notready = timed(c, "node.notready", lost);
  bench_load(load, sizeof load);
  printf("bench_nodes_lost: %d of %d nodes lost, %ld pods bound (%d Jobs x "
         "%d), load %s\n",
         lost, nodes, want, jobs, pods, load);
  printf("  node.cordoned, settled (floor) %8.1f ms   %6.2f ms a node\n",
         floor * 1e3, floor * 1e3 / lost);
  printf("  node.notready, settled         %8.1f ms   %6.2f ms a node   "
         "ratio %.2fx\n",
         notready * 1e3, notready * 1e3 / lost, notready / floor);
  bench_stop_service(sched, "lark-scheduler");
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return 0;
}
