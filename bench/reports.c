/*
 * reports.c - users' run reports per second through lark-reports' appender
 * (LARK_REPORTS -> LARK_RUNS, actor stamped, acked once stored), beside
 * the raw baseline of the same run: plain async JetStream publishes of the
 * same reports straight to LARK_RUNS.
 *
 *   bench_reports [--reports N] [--jobs J]
 */
#include "bench.h"
#include "natsd.h"
#include "reports.h"

static void
publish(bus_conn *c, const char *fmt, int n, int jobs) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  for (int i = 0; i < n; i++) {
    char subject[BUS_SUBJECT_MAX], id[33];
    msgpack_sbuffer_clear(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    bench_kv(&pk, "kind", "metric");
    msgpack_pack_str_with_body(&pk, "values", 6);
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "step", 4);
    msgpack_pack_int(&pk, i);
    msgpack_pack_str_with_body(&pk, "loss", 4);
    msgpack_pack_double(&pk, 0.25);
    snprintf(subject, sizeof subject, fmt, i % jobs);
    bus_event_new_id(id);
    bus_event ev = {.v = BUS_SCHEMA_VERSION,
                    .type = "run.reported",
                    .id = id,
                    .ts = 1,
                    .actor = "bench",
                    .cause = "",
                    .data_mp = sb.data,
                    .data_mp_len = sb.size};
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK))
      bench_die("publish", bus_last_error());
  }
  if (bus_append_flush(c, 60000, NULL))
    bench_die("flush", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

int
main(int argc, char **argv) {
  int n = 50000, jobs = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--reports"))
      n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--jobs"))
      jobs = atoi(argv[i + 1]);
  }
  lt_natsd srv;
  bus_conn *c, *ac;
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &c) ||
      lt_connect(&srv, &ac))
    bench_die("broker", bus_last_error());
  if (lt_streams(c, 120000))
    bench_die("streams", bus_last_error());
  double t0 = bench_now_s();
  publish(c, "lark.run.raw-%d", n, jobs);
  double raw = bench_now_s() - t0;
  uint64_t base = 0, last = 0;
  bus_stream_last_seq(c, "LARK_RUNS", &base);
  publish(c, "lark.rep.bench.job-%d", n, jobs); /* queued before the start */
  reports *r;
  reports_opts o;
  reports_opts_init(&o);
  t0 = bench_now_s();
  if (reports_start(ac, &o, &r))
    bench_die("appender", bus_last_error());
  while (last < base + (uint64_t)n && bench_now_s() - t0 < 300) {
    usleep(20000);
    bus_stream_last_seq(c, "LARK_RUNS", &last);
  }
  double took = bench_now_s() - t0;
  reports_stop(r);
  if (last < base + (uint64_t)n)
    bench_die("appender", "not every report landed");
  printf("reports: %d over %d jobs\n", n, jobs);
  printf("  raw JetStream publish to LARK_RUNS   %9.0f /s\n", n / raw);
  printf("  lark-reports appender (queued->runs) %9.0f /s\n", n / took);
  bus_conn_close(ac);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  return 0;
}
