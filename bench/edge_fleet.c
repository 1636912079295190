/*
 * bench/edge_fleet.c - desired states from the writer to the node that
 * runs the pod, across a fleet of simulated edge nodes.
 *
 * Starts a nats-server and N simulated nodes in this process: each has
 * its own broker connection (inbox prefix _INBOX_<node>), its own stream
 * LARK_NODE_<node> made as the scheduler makes it, and its own pinned
 * durable consumer edge-<node> on it (filter lark.node.<node>.>, deliver
 * last per subject, one ack per batch, position kept in memory), read by
 * its own thread, exactly as lark-edge reads its slice. One writer then
 * appends P pod.desired events, round-robin over the nodes, as the
 * scheduler's outbox does (async appends with ids), optionally paced at
 * --rate per second; each event carries its write time in ts and the
 * node records the delay at which it fetched it. Beside it, in the same
 * run, the raw floor: P core-NATS publishes of the same payload to one
 * subscriber.
 *
 * --shared puts every node's desired states in one stream on lark.node.>
 * instead, read through the same consumers: the layout of earlier
 * versions, kept to show what the node streams are for.
 * --server-profile PORT serves the broker's pprof on PORT.
 *
 *   bench_edge_fleet [--nodes N] [--pods P] [--rate R] [--shared]
 *                    [--server-profile PORT]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

#define SHARED_STREAM "LARK_NODES"
/* A node's fetch: as lark-edge's slice thread (edge/slice.c). */
#define SLICE_WAIT_MS 1000

typedef struct node {
  char name[32];
  bus_conn *c;
  pthread_t th;
} node;

static lt_natsd srv;
static atomic_int ready, stop, failed;
static atomic_long got;
static int64_t *lat; /* ns */
static long total;
static int shared; /* one stream for the fleet (earlier versions) */

static int64_t
now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
record(int64_t sent) {
  long i = atomic_fetch_add(&got, 1);
  if (i < total)
    lat[i] = now_ns() - sent;
}

static void *
node_run(void *arg) {
  node *n = arg;
  bus_slice sl;
  if (bus_slice_init(&sl, n->name))
    bench_die("slice", bus_last_error());
  if (shared)
    sl.opts.stream = SHARED_STREAM;
  bus_consumer *k = NULL;
  bus_batch *b = NULL;
  int rc = -1;
  for (int i = 0; i < 20 && rc; i++)
    if ((rc = bus_consumer_open(n->c, &sl.opts, &k)))
      usleep(200 * 1000);
  if (rc || bus_batch_new(&b)) {
    fprintf(stderr, "node %s: %s\n", n->name, bus_last_error());
    atomic_fetch_add(&failed, 1);
    atomic_fetch_add(&ready, 1);
    return NULL;
  }
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&stop)) {
    if (bus_consumer_fetch(k, 256, SLICE_WAIT_MS, b))
      continue;
    for (size_t i = 0; i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      if (ev)
        record(ev->ts);
    }
    bus_batch_ack(b);
  }
  bus_batch_free(b);
  bus_consumer_close(k);
  return NULL;
}

static int
cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void
report(const char *what, long n) {
  if (n <= 0) {
    printf("%-28s no samples\n", what);
    return;
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp64);
  printf("%-28s n=%ld p50=%.2f ms p99=%.2f ms max=%.2f ms\n", what, n,
         (double)lat[n / 2] / 1e6, (double)lat[(n * 99) / 100] / 1e6,
         (double)lat[n - 1] / 1e6);
}

static void
pack_desired(msgpack_sbuffer *sb, const char *pod) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 6);
  const char *kv[] = {"pod",     pod,       "job",     "bench",   "task",
                      "bench-a", "desired", "Running", "runtime", "raw"};
  for (int i = 0; i < 10; i += 2) {
    msgpack_pack_str_with_body(&pk, kv[i], strlen(kv[i]));
    msgpack_pack_str_with_body(&pk, kv[i + 1], strlen(kv[i + 1]));
  }
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, 0);
}

static void
pace(int64_t start, long i, int rate) {
  if (rate <= 0)
    return;
  int64_t due = start + (int64_t)((double)i * 1e9 / rate);
  int64_t now = now_ns();
  if (due > now) {
    struct timespec ts = {(due - now) / 1000000000, (due - now) % 1000000000};
    nanosleep(&ts, NULL);
  }
}

static void
dispatch(bus_conn *w, node *nodes, int n, int rate) {
  char subject[128], pod[64], id[33];
  int64_t start = now_ns();
  for (long i = 0; i < total; i++) {
    pace(start, i, rate);
    snprintf(pod, sizeof pod, "bench-a-%ld", i);
    snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", nodes[i % n].name,
             pod);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_desired(&sb, pod);
    bus_event_new_id(id);
    bus_event ev = {.v = BUS_SCHEMA_VERSION,
                    .type = "pod.desired",
                    .id = id,
                    .ts = now_ns(),
                    .actor = "lark-scheduler",
                    .cause = "",
                    .data_mp = sb.data,
                    .data_mp_len = sb.size};
    if (bus_append_async(w, subject, &ev, BUS_APPEND_NOCHECK))
      bench_die("append", bus_last_error());
    msgpack_sbuffer_destroy(&sb);
  }
  if (bus_append_flush(w, 30000, NULL))
    bench_die("flush", bus_last_error());
}

static void
on_raw(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)ud;
  int64_t sent;
  if (len >= sizeof sent) {
    memcpy(&sent, data, sizeof sent);
    record(sent);
  }
}

/* The floor: core-NATS publish -> subscribe of the same payload size. */
static void
baseline(bus_conn *w, bus_conn *sub, int rate) {
  bus_serve *s = NULL;
  char buf[256];
  memset(buf, 'x', sizeof buf);
  if (bus_conn_serve(sub, "bench.raw", NULL, on_raw, NULL, &s))
    bench_die("subscribe", bus_last_error());
  usleep(200 * 1000);
  atomic_store(&got, 0);
  int64_t start = now_ns();
  for (long i = 0; i < total; i++) {
    pace(start, i, rate);
    int64_t t = now_ns();
    memcpy(buf, &t, sizeof t);
    bus_conn_publish(w, "bench.raw", buf, 200);
  }
  for (int i = 0; i < 100 && atomic_load(&got) < total; i++)
    usleep(50 * 1000);
  bus_conn_unserve(s);
}

/* The streams the nodes read: one each, or the shared one. */
static void
make_streams(bus_conn *w, node *nodes, int n) {
  double t0 = bench_now_s();
  if (shared) {
    static const char cfg[] =
        "{\"name\":\"" SHARED_STREAM "\",\"subjects\":[\"lark.node.>\"],"
        "\"storage\":\"file\",\"max_msgs_per_subject\":1,"
        "\"duplicate_window\":120000000000}";
    void *reply = NULL;
    size_t len = 0;
    if (bus_conn_request(w, "$JS.API.STREAM.CREATE." SHARED_STREAM, cfg,
                         sizeof cfg - 1, 5000, &reply, &len) ||
        !strstr(reply, "\"config\""))
      bench_die("shared stream", reply ? (char *)reply : bus_last_error());
    free(reply);
  }
  for (int i = 0; i < n && !shared; i++)
    if (bus_node_stream_ensure(w, nodes[i].name, NULL))
      bench_die("node stream", bus_last_error());
  printf("edge_fleet: %s in %.2f s\n",
         shared ? "one stream for every node (--shared)"
                : "one stream per node",
         bench_now_s() - t0);
}

static bus_conn *
connect_as(const char *node) {
  char inbox[64];
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = srv.url;
  if (node) {
    snprintf(inbox, sizeof inbox, "_INBOX_%s", node);
    o.inbox_prefix = inbox;
    o.name = node;
  }
  bus_conn *c = NULL;
  int rc = bus_conn_open(&c, &o);
  return rc ? NULL : c;
}

int
main(int argc, char **argv) {
  int n = 1000, rate = 0;
  const char *profile = NULL;
  total = 10000;
  int bad = 0;
  for (int i = 1; i < argc && !bad; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--shared"))
      shared = 1;
    else if (!v)
      bad = 1;
    else if (!strcmp(argv[i], "--nodes"))
      n = atoi(v), i++;
    else if (!strcmp(argv[i], "--pods"))
      total = atol(v), i++;
    else if (!strcmp(argv[i], "--rate"))
      rate = atoi(v), i++;
    else if (!strcmp(argv[i], "--server-profile"))
      profile = v, i++;
    else
      bad = 1;
  }
  const char *extra[] = {"--profile", profile, NULL};
  if (bad || n < 1 || total < 1)
    bench_die("usage", "bench_edge_fleet [--nodes N] [--pods P] [--rate R] "
                       "[--shared] [--server-profile PORT]");
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  lat = calloc((size_t)total, sizeof *lat);
  node *nodes = calloc((size_t)n, sizeof *nodes);
  if (!lat || !nodes || lt_natsd_start(&srv, NULL, profile ? extra : NULL))
    bench_die("start", "cannot start nats-server");
  bus_conn *w = connect_as(NULL), *sub = connect_as(NULL);
  if (!w || !sub || lt_streams(w, 120000))
    bench_die("streams", bus_last_error());
  for (int i = 0; i < n; i++)
    snprintf(nodes[i].name, sizeof nodes[i].name, "n%d", i);
  make_streams(w, nodes, n);
  int64_t t0 = now_ns();
  int opened = 0;
  for (; opened < n; opened++) {
    if (!(nodes[opened].c = connect_as(nodes[opened].name))) {
      fprintf(stderr, "bench_edge_fleet: connection %d: %s\n", opened,
              bus_last_error());
      break;
    }
  }
  n = opened;
  for (int i = 0; i < n; i++)
    if (pthread_create(&nodes[i].th, NULL, node_run, &nodes[i]))
      bench_die("thread", "cannot start a node thread");
  while (atomic_load(&ready) < n)
    usleep(20 * 1000);
  printf("edge_fleet: %d nodes (%d failed), each with its connection and "
         "consumer, ready in %.2f s\n",
         n - atomic_load(&failed), atomic_load(&failed),
         (double)(now_ns() - t0) / 1e9);
  int64_t d0 = now_ns();
  dispatch(w, nodes, n, rate);
  for (int i = 0; i < 600 && atomic_load(&got) < total; i++)
    usleep(50 * 1000);
  long edge_n = atomic_load(&got);
  double secs = (double)(now_ns() - d0) / 1e9;
  printf("edge_fleet: %ld of %ld desired states received in %.2f s "
         "(rate %d/s, 0: as fast as the writer goes)\n",
         edge_n, total, secs, rate);
  report("write -> node (pinned pull)", edge_n > total ? total : edge_n);
  atomic_store(&stop, 1);
  for (int i = 0; i < n; i++)
    pthread_join(nodes[i].th, NULL);
  baseline(w, sub, rate);
  long raw_n = atomic_load(&got);
  report("baseline core pub -> sub", raw_n > total ? total : raw_n);
  for (int i = 0; i < n; i++)
    bus_conn_close(nodes[i].c);
  bus_conn_close(w);
  bus_conn_close(sub);
  lt_natsd_stop(&srv);
  free(lat);
  free(nodes);
  return edge_n >= total ? 0 : 1;
}
