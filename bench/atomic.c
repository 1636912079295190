/*
 * bench/atomic.c - appends as atomic batches (nats-server 2.12+) beside
 * appends one at a time and async bulk appends, on a broker that syncs
 * before each acknowledgement and on the server's lazy default.
 *
 * Two nats-servers started by this program in the same run: the default
 * lazy sync and `jetstream { sync_interval: always }`, as
 * broker-config/single.conf.in sets it. On each, 200-byte events on
 * distinct subjects of LARK_EVENTS (allow_atomic on): libbus bus_append
 * one at a time (each waits for its ack), bus_append_async in bulk then a
 * flush, and bus_append_atomic in batches of 100 and of 1000, one batch
 * after another. Beside them, as the raw baseline, the NATS CLI's `nats
 * bench js pub sync|async|atomic --batch B` on the same server (left out
 * when `nats` is not on PATH). The runs alternate lazy, always, always,
 * lazy; each figure is over its two runs.
 *
 *   bench_atomic [--sync-events N] [--events N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

#define BODY 200
#define MODES 4

static const char *const mode_name[MODES] = {"one at a time", "async bulk",
                                             "atomic, batches of 100",
                                             "atomic, batches of 1000"};
static const int mode_batch[MODES] = {1, 0, 100, 1000};

typedef struct rates {
  double bus[MODES], cli[MODES];
} rates;

typedef struct run {
  long n_sync, n;
  rates lazy, always;
} run;

typedef struct slot {
  bus_event ev;
  char id[33];
  char subject[80];
} slot;

static bus_conn *
connect_bench(const char *url) {
  bus_conn *c = bench_connect_streams(url, 30000);
  if (bus_stream_allow_atomic(c, "LARK_EVENTS") < 0)
    bench_die("streams", bus_last_error());
  return c;
}

/* Fill k slots for events i.. of this round and mode. */
static void
fill(slot *s, bus_atomic_item *it, long k, long i, int round, int mode,
     const msgpack_sbuffer *data) {
  for (long j = 0; j < k; j++) {
    bus_event *ev = &s[j].ev;
    bench_event_init(ev, s[j].id, "sample.created", "bench", data);
    ev->ts = 1700000000000000000;
    snprintf(s[j].subject, sizeof s[j].subject, "lark.ev.sample.r%dm%d.%ld",
             round, mode, i + j);
    it[j] = (bus_atomic_item){s[j].subject, ev, BUS_APPEND_NOCHECK};
  }
}

/* n events in the given mode; events/s. */
static double
run_bus(const char *url, long n, int mode, int round) {
  bus_conn *c = connect_bench(url);
  msgpack_sbuffer data;
  msgpack_sbuffer_init(&data);
  bench_sample_data(&data, BODY - 64);
  long k = mode_batch[mode] > 1 ? mode_batch[mode] : 1;
  slot *s = calloc((size_t)k, sizeof *s);
  bus_atomic_item *it = calloc((size_t)k, sizeof *it);
  if (!s || !it)
    bench_die("memory", "out of memory");
  double t0 = bench_now_s();
  for (long i = 0; i < n; i += k) {
    long m = n - i < k ? n - i : k;
    fill(s, it, m, i, round, mode, &data);
    int rc =
        mode == 0 ? bus_append(c, it[0].subject, it[0].ev, BUS_APPEND_NOCHECK,
                               NULL, NULL)
        : mode == 1
            ? bus_append_async(c, it[0].subject, it[0].ev, BUS_APPEND_NOCHECK)
            : bus_append_atomic(c, "LARK_EVENTS", it, (size_t)m, NULL);
    if (rc < 0)
      bench_die("append", bus_last_error());
  }
  if (mode == 1 && bus_append_flush(c, 120000, NULL) < 0)
    bench_die("flush", bus_last_error());
  double dt = bench_now_s() - t0;
  free(s);
  free(it);
  msgpack_sbuffer_destroy(&data);
  bus_conn_close(c);
  return (double)n / dt;
}

/* `nats bench js pub MODE` on url: msgs/s (bench_nats_cli_rate). */
static double
run_cli(const char *url, long n, int mode, int round) {
  static const char *const cli_mode[MODES] = {"sync", "async", "atomic",
                                              "atomic"};
  char cmd[600], batch[32] = "";
  if (mode_batch[mode] > 1)
    snprintf(batch, sizeof batch, "--batch %d", mode_batch[mode]);
  snprintf(cmd, sizeof cmd,
           "nats --server %s bench js pub %s %s bench.m%d.%d --msgs %ld "
           "--size %dB --no-progress --create --multisubject "
           "--stream BENCH_M%d_%d 2>&1",
           url, cli_mode[mode], batch, mode, round, n, BODY, mode, round);
  return bench_nats_cli_rate(cmd);
}

/* One round on one broker (bench_lazy_always). */
static void
measure(const char *url, int round, int always, void *ud) {
  run *x = ud;
  rates *r = always ? &x->always : &x->lazy;
  for (int m = 0; m < MODES; m++) {
    long count = m == 0 ? x->n_sync : x->n;
    r->bus[m] += 0.5 * run_bus(url, count, m, round);
    r->cli[m] += 0.5 * run_cli(url, count, m, round);
  }
}

static void
print_row(const char *who, const char *what, double lazy, double always) {
  char label[64];
  snprintf(label, sizeof label, "%s %s", who, what);
  bench_ratio_row(label, lazy, always);
}

int
main(int argc, char **argv) {
  run x = {.n_sync = 2000, .n = 20000};
  const bench_opt opts[] = {
      {"--sync-events", .l = &x.n_sync}, {"--events", .l = &x.n}, {NULL}};
  if (bench_opts(argc, argv, opts) < 0)
    bench_die("usage", "bench_atomic [--sync-events N] [--events N]");
  if (x.n_sync <= 0 || x.n <= 0)
    return 1;
  bench_lazy_always("atomic", measure, &x);
  const rates *l = &x.lazy, *a = &x.always;
  printf("atomic: %d-byte events, file storage, R1; %ld one at a time, "
         "%ld otherwise\n",
         BODY, x.n_sync, x.n);
  bench_ratio_head("events/s");
  for (int m = 0; m < MODES; m++) {
    print_row("libbus", mode_name[m], l->bus[m], a->bus[m]);
    print_row("raw nats", mode_name[m], l->cli[m], a->cli[m]);
  }
  return 0;
}
