/*
 * bench/edge_fleet.c - desired states from their writer to the node that
 * runs the pod, across a fleet of simulated edge nodes.
 *
 * Starts a nats-server and N simulated nodes in this process (fleet.c):
 * each has its own broker connection, its own stream LARK_NODE_<node>
 * made as the scheduler makes it, and reads it through the pinned
 * consumer lark-edge uses, on a thread of its own. One writer then
 * appends P pod.desired events, round-robin over the nodes, as the
 * scheduler's outbox does (async appends with ids), optionally paced at
 * --rate per second; each event carries its write time in ts and the node
 * records the delay at which it fetched it. Beside it, in the same run,
 * the raw floor: P core-NATS publishes of the same size to one
 * subscriber. bench_edge_fleet_e2e measures the same fleet from the
 * scheduler's binding event instead.
 *
 * --layout one puts every node's desired states in one stream LARK_NODES
 * on lark.node.> (one message per subject, as the node streams), read
 * through the same consumers, each filtered on its node: the layout of
 * earlier versions, kept to compare the two on the broker in use.
 * --sync always starts the broker with jetstream { sync_interval: always }
 * (broker-config/single.conf.in); the default is the server's lazy sync.
 * --server-profile PORT serves the broker's pprof on PORT.
 *
 *   bench_edge_fleet [--nodes N] [--pods P] [--rate R]
 *                    [--layout one|per-node] [--sync lazy|always]
 *                    [--server-profile PORT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "fleet.h"
#include "natsd.h"

#define SHARED_STREAM "LARK_NODES"

static void
got(const bus_event *ev, int64_t now, void *ud) {
  (void)ud;
  if (ev)
    fleet_lat_add(now - ev->ts);
}

static void
pack_desired(msgpack_sbuffer *sb, const char *pod) {
  bus_ev_pod_desired d = {.pod = bus_str_of(pod),
                          .job = BUS_STR("bench"),
                          .task = BUS_STR("bench-a"),
                          .has_attempt = 1,
                          .desired = BUS_STR("Running"),
                          .has_runtime = 1,
                          .runtime = BUS_STR("raw")};
  if (bus_pod_desired_pack(sb, &d))
    bench_die("pod.desired", bus_last_error());
}

static void
dispatch(bus_conn *w, int n, long total, int rate) {
  char subject[128], pod[64], node[32], id[33];
  int64_t start = bus_wall_ns();
  for (long i = 0; i < total; i++) {
    fleet_pace(start, i, rate);
    fleet_node_name((int)(i % n), node, sizeof node);
    snprintf(pod, sizeof pod, "bench-a-%ld", i);
    snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node, pod);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_desired(&sb, pod);
    bus_event ev;
    bench_event_init(&ev, id, "pod.desired", "lark-scheduler", &sb);
    if (bus_append_async(w, subject, &ev, BUS_APPEND_NOCHECK))
      bench_die("append", bus_last_error());
    msgpack_sbuffer_destroy(&sb);
  }
  if (bus_append_flush(w, 30000, NULL))
    bench_die("flush", bus_last_error());
}

/* One stream for the fleet, with a node stream's settings: one message
 * per subject, file storage, the dedupe window lt_streams gives. */
static void
make_shared(bus_conn *w) {
  static const char cfg[] =
      "{\"name\":\"" SHARED_STREAM "\",\"subjects\":[\"lark.node.>\"],"
      "\"storage\":\"file\",\"max_msgs_per_subject\":1,"
      "\"max_msg_size\":1048576,\"duplicate_window\":120000000000}";
  void *reply = NULL;
  size_t len = 0;
  if (bus_conn_request(w, "$JS.API.STREAM.CREATE." SHARED_STREAM, cfg,
                       sizeof cfg - 1, 5000, &reply, &len) ||
      !strstr(reply, "\"config\""))
    bench_die("shared stream", reply ? (char *)reply : bus_last_error());
  free(reply);
}

/* Each node's own stream, as the scheduler makes it, or the shared one. */
static void
make_streams(bus_conn *w, int n, int one) {
  double t0 = bench_now_s();
  char node[32];
  if (one)
    make_shared(w);
  for (int i = 0; i < n && !one; i++) {
    fleet_node_name(i, node, sizeof node);
    if (bus_node_stream_ensure(w, node, NULL))
      bench_die("node stream", bus_last_error());
  }
  printf("edge_fleet: %s, made in %.2f s\n",
         one ? "one stream for every node" : "one stream per node",
         bench_now_s() - t0);
}

int
main(int argc, char **argv) {
  int n = 1000, rate = 0, bad = 0, one = 0, always = 0;
  long total = 10000;
  const char *profile = NULL;
  for (int i = 1; i < argc && !bad; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      bad = 1;
    else if (!strcmp(argv[i], "--nodes"))
      n = atoi(v), i++;
    else if (!strcmp(argv[i], "--pods"))
      total = atol(v), i++;
    else if (!strcmp(argv[i], "--rate"))
      rate = atoi(v), i++;
    else if (!strcmp(argv[i], "--server-profile"))
      profile = v, i++;
    else if (!strcmp(argv[i], "--layout"))
      one = !strcmp(v, "one"), bad = !one && strcmp(v, "per-node"), i++;
    else if (!strcmp(argv[i], "--sync"))
      always = !strcmp(v, "always"), bad = !always && strcmp(v, "lazy"), i++;
    else
      bad = 1;
  }
  if (bad || n < 1 || total < 1)
    bench_die("usage", "bench_edge_fleet [--nodes N] [--pods P] [--rate R] "
                       "[--layout one|per-node] [--sync lazy|always] "
                       "[--server-profile PORT]");
  const char *extra[] = {"--profile", profile, NULL};
  char dir[256];
  lt_natsd srv;
  lt_tmpdir(dir, sizeof dir, "edge_fleet");
  bench_natsd_start(&srv, dir, always, profile ? extra : NULL);
  bus_conn *w = bench_connect(srv.url, NULL, 0);
  bus_conn *sub = bench_connect(srv.url, NULL, 0);
  if (lt_streams(w, 120000))
    bench_die("streams", bus_last_error());
  printf("edge_fleet: broker sync %s\n", always ? "always" : "lazy (default)");
  make_streams(w, n, one);
  fleet_use_stream(one ? SHARED_STREAM : NULL);
  fleet_lat_init(total);
  double t0 = bench_now_s();
  int failed = 0;
  fleet *f = fleet_start(srv.url, n, got, NULL, &failed);
  printf("edge_fleet: %d nodes (%d failed), each with its connection and "
         "consumer, ready in %.2f s\n",
         n - failed, failed, bench_now_s() - t0);
  t0 = bench_now_s();
  dispatch(w, n, total, rate);
  for (int i = 0; i < 600 && fleet_lat_count() < total; i++)
    usleep(50 * 1000);
  long edge_n = fleet_lat_count();
  printf("edge_fleet: %ld of %ld desired states received in %.2f s "
         "(rate %d/s, 0: as fast as the writer goes)\n",
         edge_n, total, bench_now_s() - t0, rate);
  fleet_lat_report("write -> node (pinned pull)");
  fleet_stop(f);
  fleet_baseline(w, sub, total, rate);
  bus_conn_close(w);
  bus_conn_close(sub);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  fleet_lat_free();
  return edge_n >= total ? 0 : 1;
}
