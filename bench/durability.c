/*
 * bench/durability.c - what syncing before each acknowledgement costs.
 *
 * Two nats-servers started by this program in the same run: one with the
 * server's default lazy sync (every 2 minutes), one with
 * `jetstream { sync_interval: always }`, as broker-config/single.conf.in
 * sets it. On each: libbus appends one at a time (bus_append, each waiting
 * for its ack) and in bulk (bus_append_async, then a flush), 200-byte
 * events on distinct subjects of LARK_EVENTS; beside them, as the raw
 * baseline, the NATS CLI's own `nats bench js pub sync|async` against the
 * same server (left out when `nats` is not on PATH). The runs alternate
 * lazy, always, always, lazy so load drift on a shared machine hits both
 * alike; each figure is over its two runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

#define BODY 200

typedef struct rates {
  double bus_sync, bus_async, cli_sync, cli_async;
} rates;

typedef struct run {
  long n_sync, n_async;
  rates lazy, always;
} run;

/* Appends of n events one at a time (sync) or in bulk; events/s. */
static double
run_bus(const char *url, long n, int sync, int round) {
  bus_conn *c = bench_connect_streams(url, 0);
  bus_event ev;
  msgpack_sbuffer data;
  char subject[80], id[33];
  msgpack_sbuffer_init(&data);
  bench_sample_event(&ev, &data, id, BODY - 64);
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    snprintf(subject, sizeof subject, "lark.ev.sample.r%d%c%ld", round,
             sync ? 's' : 'a', i);
    bus_event_new_id(id);
    int rc = sync ? bus_append(c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL)
                  : bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK);
    if (rc < 0)
      bench_die("append", bus_last_error());
  }
  if (!sync && bus_append_flush(c, 120000, NULL) < 0)
    bench_die("flush", bus_last_error());
  double dt = bench_now_s() - t0;
  msgpack_sbuffer_destroy(&data);
  bus_conn_close(c);
  return (double)n / dt;
}

/* `nats bench js pub MODE` on url: msgs/s (bench_nats_cli_rate). */
static double
run_cli(const char *url, long n, const char *mode, int round) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "nats --server %s bench js pub %s bench.%s.%d --msgs %ld "
           "--size %dB --no-progress --create --stream BENCH_%s_%d 2>&1",
           url, mode, mode, round, n, BODY, mode, round);
  return bench_nats_cli_rate(cmd);
}

/* One round on one broker (bench_lazy_always). */
static void
measure(const char *url, int round, int always, void *ud) {
  run *x = ud;
  rates *r = always ? &x->always : &x->lazy;
  r->bus_sync += 0.5 * run_bus(url, x->n_sync, 1, round);
  r->bus_async += 0.5 * run_bus(url, x->n_async, 0, round);
  r->cli_sync += 0.5 * run_cli(url, x->n_sync, "sync", round);
  r->cli_async += 0.5 * run_cli(url, x->n_async, "async", round);
}

int
main(int argc, char **argv) {
  run x = {.n_sync = 2000, .n_async = 20000};
  const bench_opt opts[] = {
      {"--sync-events", .l = &x.n_sync}, {"--events", .l = &x.n_async}, {NULL}};
  if (bench_opts(argc, argv, opts) < 0) {
    fprintf(stderr, "usage: bench_durability [--sync-events N] "
                    "[--events N]\n");
    return 2;
  }
  if (x.n_sync <= 0 || x.n_async <= 0)
    return 1;
  bench_lazy_always("durability", measure, &x);
  const rates *l = &x.lazy, *a = &x.always;
  printf("durability: %d-byte events, file storage, R1; %ld one at a time, "
         "%ld in bulk\n",
         BODY, x.n_sync, x.n_async);
  bench_ratio_head("events/s");
  bench_ratio_row("libbus bus_append (one at a time)", l->bus_sync,
                  a->bus_sync);
  bench_ratio_row("nats bench js pub sync (raw)", l->cli_sync, a->cli_sync);
  bench_ratio_row("libbus bus_append_async (bulk)", l->bus_async, a->bus_async);
  bench_ratio_row("nats bench js pub async (raw)", l->cli_async, a->cli_async);
  return 0;
}
