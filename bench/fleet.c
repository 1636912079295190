/*
 * fleet.c - the simulated edge nodes of the fleet benchmarks (fleet.h).
 *
 * Each node reads as lark-edge's slice thread does: the same consumer
 * (bus_slice: its pull held open), one ack per batch.
 */
#include "fleet.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* A node's fetch: as lark-edge's slice thread (edge/slice.c). */
#define SLICE_WAIT_MS 1000

typedef struct node {
  char name[32];
  bus_conn *c;
  pthread_t th;
  struct fleet *f;
} node;

struct fleet {
  node *nodes;
  int n;
  fleet_got_fn got;
  void *ud;
  atomic_int ready, stop, failed;
};

/* One stream for every node, or NULL: each reads its own. */
static const char *shared_stream;

void
fleet_use_stream(const char *stream) {
  shared_stream = stream;
}

void
fleet_node_name(int i, char *out, size_t cap) {
  snprintf(out, cap, "n%d", i);
}

void
fleet_pace(int64_t start, long i, int rate) {
  if (rate <= 0)
    return;
  int64_t due = start + (int64_t)((double)i * 1e9 / rate);
  int64_t now = bus_wall_ns();
  if (due > now) {
    struct timespec ts = {(due - now) / 1000000000, (due - now) % 1000000000};
    nanosleep(&ts, NULL);
  }
}

static bus_consumer *
open_slice(node *n, int again) {
  bus_slice sl;
  bus_consumer *k = NULL;
  if (bus_slice_init(&sl, n->name))
    return NULL;
  if (shared_stream)
    sl.opts.stream = shared_stream;
  sl.opts.recreate = again;
  int rc = -1;
  for (int i = 0; i < 20 && rc; i++)
    if ((rc = bus_consumer_open(n->c, &sl.opts, &k)))
      usleep(200 * 1000);
  if (rc)
    fprintf(stderr, "node %s: %s\n", n->name, bus_last_error());
  return rc ? NULL : k;
}

static void *
node_run(void *arg) {
  node *n = arg;
  fleet *f = n->f;
  bus_consumer *k = open_slice(n, 0);
  bus_batch *b = NULL;
  if (!k || bus_batch_new(&b)) {
    atomic_fetch_add(&f->failed, 1);
    atomic_fetch_add(&f->ready, 1);
    bus_consumer_close(k);
    return NULL;
  }
  atomic_fetch_add(&f->ready, 1);
  while (k && !atomic_load(&f->stop)) {
    int rc = bus_consumer_fetch(k, 256, SLICE_WAIT_MS, b);
    if (rc && rc != BUS_ETIMEOUT) {
      /* a hole in the deliveries, or the consumer gone: made anew from
       * each pod's current state, as lark-edge does (a broken consumer
       * says so at once: fetching on would spin) */
      bus_consumer_close(k);
      k = open_slice(n, 1);
      continue;
    }
    if (rc)
      continue;
    int64_t now = bus_wall_ns();
    for (size_t i = 0; i < bus_batch_len(b); i++)
      f->got(bus_batch_event(b, i), now, f->ud);
    bus_batch_ack(b);
  }
  bus_batch_free(b);
  bus_consumer_close(k);
  return NULL;
}

static bus_conn *
connect_node(const char *url, const char *name) {
  char inbox[64];
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  snprintf(inbox, sizeof inbox, "_INBOX_%s", name);
  o.inbox_prefix = inbox;
  o.name = name;
  bus_conn *c = NULL;
  return bus_conn_open(&c, &o) ? NULL : c;
}

fleet *
fleet_start(const char *url, int n, fleet_got_fn got, void *ud, int *failed) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  fleet *f = calloc(1, sizeof *f);
  if (!f || !(f->nodes = calloc((size_t)n, sizeof *f->nodes))) {
    fprintf(stderr, "fleet: out of memory\n");
    exit(1);
  }
  f->got = got, f->ud = ud;
  for (; f->n < n; f->n++) {
    node *nd = &f->nodes[f->n];
    fleet_node_name(f->n, nd->name, sizeof nd->name);
    nd->f = f;
    if (!(nd->c = connect_node(url, nd->name))) {
      fprintf(stderr, "fleet: connection %d: %s\n", f->n, bus_last_error());
      break;
    }
  }
  for (int i = 0; i < f->n; i++)
    if (pthread_create(&f->nodes[i].th, NULL, node_run, &f->nodes[i])) {
      fprintf(stderr, "fleet: cannot start a node thread\n");
      exit(1);
    }
  while (atomic_load(&f->ready) < f->n)
    usleep(20 * 1000);
  *failed = atomic_load(&f->failed) + (n - f->n);
  return f;
}

/* Stop the nodes, then close their connections. */
void
fleet_stop(fleet *f) {
  if (!f)
    return;
  atomic_store(&f->stop, 1);
  for (int i = 0; i < f->n; i++)
    pthread_join(f->nodes[i].th, NULL);
  for (int i = 0; i < f->n; i++)
    bus_conn_close(f->nodes[i].c);
  free(f->nodes);
  free(f);
}

/* --------------------------------------------------------- latencies */

static int64_t *lat;
static long lat_cap;
static atomic_long lat_n;

void
fleet_lat_init(long n) {
  lat = calloc((size_t)n, sizeof *lat);
  lat_cap = n;
  if (!lat) {
    fprintf(stderr, "fleet: out of memory\n");
    exit(1);
  }
}

void
fleet_lat_reset(void) {
  atomic_store(&lat_n, 0);
}

void
fleet_lat_add(int64_t ns) {
  long i = atomic_fetch_add(&lat_n, 1);
  if (i < lat_cap)
    lat[i] = ns;
}

long
fleet_lat_count(void) {
  return atomic_load(&lat_n);
}

static int
cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void
fleet_lat_report(const char *what) {
  long n = fleet_lat_count();
  if (n > lat_cap)
    n = lat_cap;
  if (n <= 0) {
    printf("%-28s no samples\n", what);
    return;
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp64);
  printf("%-28s n=%ld p50=%.2f ms p99=%.2f ms max=%.2f ms\n", what, n,
         (double)lat[n / 2] / 1e6, (double)lat[(n * 99) / 100] / 1e6,
         (double)lat[n - 1] / 1e6);
}

void
fleet_lat_free(void) {
  free(lat);
  lat = NULL;
  lat_cap = 0;
}

/* ----------------------------------------------------------- baseline */

static void
on_raw(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)ud;
  int64_t sent;
  if (len >= sizeof sent) {
    memcpy(&sent, data, sizeof sent);
    fleet_lat_add(bus_wall_ns() - sent);
  }
}

void
fleet_baseline(bus_conn *w, bus_conn *sub, long total, int rate) {
  bus_serve *s = NULL;
  char buf[256];
  memset(buf, 'x', sizeof buf);
  if (bus_conn_serve(sub, "bench.raw", NULL, on_raw, NULL, &s)) {
    fprintf(stderr, "fleet: subscribe: %s\n", bus_last_error());
    exit(1);
  }
  usleep(200 * 1000);
  fleet_lat_reset();
  int64_t start = bus_wall_ns();
  for (long i = 0; i < total; i++) {
    fleet_pace(start, i, rate);
    int64_t t = bus_wall_ns();
    memcpy(buf, &t, sizeof t);
    bus_conn_publish(w, "bench.raw", buf, 200);
  }
  for (int i = 0; i < 100 && fleet_lat_count() < total; i++)
    usleep(50 * 1000);
  bus_conn_unserve(s);
  fleet_lat_report("baseline core pub -> sub");
}
