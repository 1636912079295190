/*
 * bench/replay.c - rebuilding a view against a raw pull fetch, same run.
 *
 * Fills LARK_EVENTS (file storage, on a nats-server this program starts)
 * with N 200-byte events on S aggregates, each event chained on its
 * aggregate's previous one, then measures, alternately (raw, libbus,
 * libbus, raw):
 *   - raw: nats.c pull fetch of the whole stream, ack none, batches of
 *     4096, counting messages (the physical limit of reading);
 *   - libbus: `larkctl replay catalog` minus the process, i.e.
 *     lark_replay_run of the catalog view into a fresh NOSYNC directory:
 *     fetch, decode and validate, `prev` check, three LMDB puts per event,
 *     one sync at the end.
 * Prints both rates and their ratio.
 *
 *   bench_replay [--events N] [--aggregates S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"
#include "replay.h"

#define BODY 200
#define FETCH 4096

static void
fill(bus_conn *c, long n, long aggregates) {
  uint64_t *last = calloc((size_t)aggregates, sizeof *last);
  msgpack_sbuffer data;
  msgpack_sbuffer_init(&data);
  bench_sample_data(&data, 80); /* an encoded event: about BODY bytes */
  for (long i = 0; i < n; i++) {
    long k = i % aggregates;
    char subject[64], id[33];
    snprintf(subject, sizeof subject, "lark.ev.sample.s%ld", k);
    bus_event ev;
    bench_event_init(&ev, id, last[k] ? "sample.updated" : "sample.created",
                     "bench", &data);
    ev.ts = 1700000000000000000 + i;
    ev.prev = last[k];
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK) < 0)
      bench_die("append", bus_last_error());
    last[k] = (uint64_t)i + 1; /* one writer on a fresh stream */
  }
  uint64_t failed = 0;
  if (bus_append_flush(c, 120000, &failed) < 0 || failed)
    bench_die("flush", bus_last_error());
  free(last);
  msgpack_sbuffer_destroy(&data);
}

static double
run_raw(const char *url, long n) {
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  natsSubscription *sub = NULL;
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Config.AckPolicy = js_AckNone;
  so.Config.DeliverPolicy = js_DeliverAll;
  if (natsConnection_ConnectTo(&nc, url) != NATS_OK ||
      natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
      js_PullSubscribe(&sub, js, "lark.ev.>", "bench-raw", NULL, &so, NULL) !=
          NATS_OK)
    bench_die("raw subscribe", nats_GetLastError(NULL));
  long got = 0;
  double t0 = bench_now_s();
  while (got < n) {
    natsMsgList list = {0};
    natsStatus s = natsSubscription_Fetch(&list, sub, FETCH, 5000, NULL);
    if (s != NATS_OK && s != NATS_TIMEOUT)
      bench_die("raw fetch", natsStatus_GetText(s));
    got += list.Count;
    natsMsgList_Destroy(&list);
  }
  double dt = bench_now_s() - t0;
  natsSubscription_Unsubscribe(sub);
  natsSubscription_Destroy(sub);
  js_DeleteConsumer(js, "LARK_EVENTS", "bench-raw", NULL, NULL);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return (double)n / dt;
}

static double
run_libbus(bus_conn *c, const char *base, int round, long n) {
  char out[512];
  snprintf(out, sizeof out, "%s/replay-%d", base, round);
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = out;
  lark_replay_result r;
  if (lark_replay_run(c, lark_view_find("catalog"), &o, &r) < 0)
    bench_die("replay", bus_last_error());
  if ((long)r.events != n)
    bench_die("replay", "did not read every event");
  lt_rmtree(out);
  return (double)r.events / r.seconds;
}

int
main(int argc, char **argv) {
  long n = 1000000, aggregates = 10000;
  const bench_opt opts[] = {
      {"--events", .l = &n}, {"--aggregates", .l = &aggregates}, {NULL}};
  bench_opts(argc, argv, opts);
  if (n <= 0 || aggregates <= 0)
    bench_die("usage", "bench_replay [--events N] [--aggregates S]");
  lt_natsd srv;
  if (lt_natsd_start(&srv, NULL, NULL) < 0)
    bench_die("nats-server", "did not start");
  bus_conn *c;
  if (lt_connect(&srv, &c) < 0 || lt_streams(c, 120000) < 0)
    bench_die("connect", bus_last_error());
  printf("bench_replay: %ld events of ~%d bytes on %ld aggregates\n", n, BODY,
         aggregates);
  double t0 = bench_now_s();
  fill(c, n, aggregates);
  printf("  filled in %.1f s\n", bench_now_s() - t0);
  char base[256];
  lt_tmpdir(base, sizeof base, "bench-replay");
  double raw = run_raw(srv.url, n);
  double lib = run_libbus(c, base, 1, n);
  lib = (lib + run_libbus(c, base, 2, n)) / 2;
  raw = (raw + run_raw(srv.url, n)) / 2;
  printf("  raw pull fetch      %10.0f events/s\n", raw);
  printf("  libbus replay       %10.0f events/s   ratio %.2fx "
         "(targets: >= 150000/s and >= 0.50x)\n",
         lib, lib / raw);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  lt_rmtree(base);
  return 0;
}
