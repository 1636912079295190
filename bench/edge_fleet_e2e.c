/*
 * bench/edge_fleet_e2e.c - from a pod's binding to its node receiving its
 * desired state, through a real lark-scheduler, across a fleet of
 * simulated edge nodes.
 *
 * Starts a nats-server and a lark-scheduler, applies N Nodes through the
 * command path (the scheduler makes each node's stream as it takes the
 * Node), starts the fleet (fleet.c: a connection, a stream and the
 * pinned consumer of lark-edge per node), then submits J Jobs of P pods
 * each, spread over the nodes, paced at --rate pods per second (0: as fast
 * as the commands go). The binding event of a pod is its Job's job.placed
 * on the placement log; its time is the broker's stored time of that
 * event. Each node records when it fetched each pod's desired state; the
 * figure is p50/p99 of the difference, beside the core-NATS floor of the
 * same count in the same run, and split at the node stream's stored time
 * of the desired state: the scheduler's part and the delivery's. Its
 * nodes read the stream only: the stored path alone; bench_fleet_gang's
 * also take the copies pushed ahead of it, as lark-edge does.
 *
 *   bench_edge_fleet_e2e [--nodes N] [--jobs J] [--pods P] [--rate R]
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "fleet.h"
#include "gang.h"
#include "natsd.h"

static gang_seen *got_at;
static long want;
static atomic_long got_n;

static void
got(const bus_event *ev, int64_t now, void *ud) {
  (void)ud;
  int j = ev ? gang_job_of(&ev->data) : -1;
  if (j < 0)
    return;
  long i = atomic_fetch_add(&got_n, 1);
  if (i < want)
    got_at[i] = (gang_seen){j, ev->stored_ns, now};
}

int
main(int argc, char **argv) {
  int nodes = 1000, jobs = 1000, pods = 10, rate = 0;
  const bench_opt opts[] = {{"--nodes", .i = &nodes},
                            {"--jobs", .i = &jobs},
                            {"--pods", .i = &pods},
                            {"--rate", .i = &rate},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (nodes <= 0 || jobs <= 0 || pods <= 0)
    bench_die("usage", "bench_edge_fleet_e2e [--nodes N] [--jobs J] "
                       "[--pods P] [--rate R]");
  want = (long)jobs * pods;
  got_at = calloc((size_t)want, sizeof *got_at);
  lt_natsd srv;
  bus_conn *c, *sub;
  char dir[256];
  if (!got_at || lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &c) ||
      lt_connect(&srv, &sub) || lt_streams(c, 120000))
    bench_die("broker", bus_last_error());
  lt_tmpdir(dir, sizeof dir, "bench-fleet");
  pid_t sched = bench_start_service(argv[0], "lark-scheduler", srv.url, dir);
  bench_wait_up(c, "scheduler");
  double t0 = bench_now_s();
  for (int i = 0; i < nodes; i++) {
    char name[32];
    fleet_node_name(i, name, sizeof name);
    bench_add_node(c, name);
  }
  printf("edge_fleet_e2e: %d Nodes applied (and their streams made) in "
         "%.2f s\n",
         nodes, bench_now_s() - t0);
  fleet_lat_init(want);
  int failed = 0;
  fleet *f = fleet_start(srv.url, nodes, got, NULL, &failed);
  printf("edge_fleet_e2e: %d nodes ready (%d failed); %ld pods (%d Jobs x "
         "%d) at %d pods/s (0: as fast as commands go)\n",
         nodes - failed, failed, want, jobs, pods, rate);
  t0 = bench_now_s();
  gang_submit(c, jobs, pods, rate);
  for (int i = 0; i < 1200 && atomic_load(&got_n) < want; i++)
    usleep(50 * 1000);
  long n = atomic_load(&got_n);
  printf("edge_fleet_e2e: %ld of %ld desired states received in %.2f s\n", n,
         want, bench_now_s() - t0);
  fleet_stop(f);
  gang_report(c, got_at, n < want ? n : want, NULL, 0, jobs);
  fleet_baseline(c, sub, want, rate);
  bench_stop_service(sched, "lark-scheduler");
  bus_conn_close(c);
  bus_conn_close(sub);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  fleet_lat_free();
  free(got_at);
  return n >= want ? 0 : 1;
}
