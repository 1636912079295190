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

/* Appends of n events one at a time (sync) or in bulk; events/s. */
static double
run_bus(const char *url, long n, int sync, int round) {
  bus_conn *c = NULL;
  bus_conn_opts o;
  bus_streams_opts so;
  bus_event ev;
  msgpack_sbuffer data;
  char subject[80], id[33];
  bus_conn_opts_init(&o);
  o.url = url;
  o.name = "bench";
  if (bus_conn_open(&c, &o) < 0)
    bench_die("connect", bus_last_error());
  bus_streams_opts_init(&so);
  if (bus_streams_ensure(c, &so) < 0)
    bench_die("streams", bus_last_error());
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

static void
measure(const char *url, long n_sync, long n_async, int round, rates *r) {
  r->bus_sync += 0.5 * run_bus(url, n_sync, 1, round);
  r->bus_async += 0.5 * run_bus(url, n_async, 0, round);
  r->cli_sync += 0.5 * run_cli(url, n_sync, "sync", round);
  r->cli_async += 0.5 * run_cli(url, n_async, "async", round);
}

static int
start_always(lt_natsd *s, char *dir, size_t cap) {
  char conf[400];
  lt_tmpdir(dir, cap, "durability");
  snprintf(conf, sizeof conf, "%s/always.conf", dir);
  FILE *f = fopen(conf, "w");
  if (!f)
    return -1;
  fputs("jetstream { sync_interval: always }\n", f);
  fclose(f);
  return lt_natsd_start(s, conf, NULL);
}

static void
print_row(const char *what, double lazy, double always) {
  if (lazy > 0 && always > 0)
    printf("  %-34s %10.0f %10.0f %8.2f\n", what, lazy, always, always / lazy);
  else
    printf("  %-34s %10s %10s\n", what, "n/a", "n/a");
}

int
main(int argc, char **argv) {
  long n_sync = 2000, n_async = 20000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sync-events") && i + 1 < argc)
      n_sync = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--events") && i + 1 < argc)
      n_async = strtol(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: bench_durability [--sync-events N] "
                      "[--events N]\n");
      return 2;
    }
  }
  lt_natsd lazy, always;
  char dir[256];
  if (n_sync <= 0 || n_async <= 0 || lt_natsd_start(&lazy, NULL, NULL) < 0)
    return 1;
  if (start_always(&always, dir, sizeof dir) < 0) {
    lt_natsd_stop(&lazy);
    return 1;
  }
  rates l = {0}, a = {0};
  measure(lazy.url, n_sync, n_async, 1, &l);
  measure(always.url, n_sync, n_async, 1, &a);
  measure(always.url, n_sync, n_async, 2, &a);
  measure(lazy.url, n_sync, n_async, 2, &l);
  printf("durability: %d-byte events, file storage, R1; %ld one at a time, "
         "%ld in bulk\n",
         BODY, n_sync, n_async);
  printf("  %-34s %10s %10s %8s\n", "events/s", "lazy", "always", "ratio");
  print_row("libbus bus_append (one at a time)", l.bus_sync, a.bus_sync);
  print_row("nats bench js pub sync (raw)", l.cli_sync, a.cli_sync);
  print_row("libbus bus_append_async (bulk)", l.bus_async, a.bus_async);
  print_row("nats bench js pub async (raw)", l.cli_async, a.cli_async);
  lt_natsd_stop(&always);
  lt_natsd_stop(&lazy);
  lt_rmtree(dir);
  return 0;
}
