/*
 * reports.c - users' run reports per second through lark-reports' appender
 * (LARK_REPORTS -> LARK_RUNS, actor stamped, one atomic batch per fetch,
 * acked once stored), on two servers started in the same run: one with
 * the server's default lazy sync, one with `jetstream { sync_interval:
 * always }` as broker-config/single.conf.in sets it. Beside it on each
 * server, the raw baselines of the same run: plain async JetStream
 * publishes of the same reports straight to LARK_RUNS, and the same
 * reports as atomic batches of BUS_ATOMIC_MAX straight to LARK_RUNS (what
 * the appender could reach at best). The reports are queued into
 * LARK_REPORTS (async publishes, the users' side) before the appender
 * starts; that rate is printed too.
 *
 *   bench_reports [--reports N] [--jobs J]
 */
#include "bench.h"
#include "natsd.h"
#include "reports.h"

typedef struct rates {
  double raw_async, raw_atomic, queue, appender;
  reports_stats st;
} rates;

/* Report i as an event on the subject fmt names for job i % jobs; its
 * data in sb, its id in id. */
static void
make_report(bus_event *ev, msgpack_sbuffer *sb, char id[33], int i) {
  msgpack_packer pk;
  msgpack_sbuffer_clear(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "kind", "metric");
  msgpack_pack_str_with_body(&pk, "values", 6);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "step", 4);
  msgpack_pack_int(&pk, i);
  msgpack_pack_str_with_body(&pk, "loss", 4);
  msgpack_pack_double(&pk, 0.25);
  bench_event_init(ev, id, "run.reported", "bench", sb);
  ev->ts = 1;
}

/* n reports by async publishes, then a flush; reports/s. */
static double
publish(bus_conn *c, const char *fmt, int n, int jobs) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++) {
    char subject[BUS_SUBJECT_MAX], id[33];
    bus_event ev;
    make_report(&ev, &sb, id, i);
    snprintf(subject, sizeof subject, fmt, i % jobs);
    /* a window full for long on a slow disk stalls nats.c: wait for the
     * acks in flight, then the same report again */
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK) &&
        (bus_append_flush(c, 300000, NULL) ||
         bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK)))
      bench_die("publish", bus_last_error());
  }
  if (bus_append_flush(c, 300000, NULL))
    bench_die("flush", bus_last_error());
  double dt = bench_now_s() - t0;
  msgpack_sbuffer_destroy(&sb);
  return n / dt;
}

/* n reports as atomic batches of BUS_ATOMIC_MAX to LARK_RUNS; reports/s. */
static double
publish_atomic(bus_conn *c, const char *fmt, int n, int jobs) {
  static msgpack_sbuffer sb[BUS_ATOMIC_MAX];
  static bus_event ev[BUS_ATOMIC_MAX];
  static bus_atomic_item it[BUS_ATOMIC_MAX];
  static char id[BUS_ATOMIC_MAX][33], subject[BUS_ATOMIC_MAX][64];
  for (int k = 0; k < BUS_ATOMIC_MAX; k++)
    msgpack_sbuffer_init(&sb[k]);
  double t0 = bench_now_s();
  for (int i = 0; i < n;) {
    int m = n - i < BUS_ATOMIC_MAX ? n - i : BUS_ATOMIC_MAX;
    for (int k = 0; k < m; k++, i++) {
      make_report(&ev[k], &sb[k], id[k], i);
      snprintf(subject[k], sizeof subject[k], fmt, i % jobs);
      it[k] = (bus_atomic_item){subject[k], &ev[k], BUS_APPEND_NOCHECK};
    }
    if (bus_append_atomic(c, "LARK_RUNS", it, (size_t)m, NULL))
      bench_die("atomic", bus_last_error());
  }
  double dt = bench_now_s() - t0;
  for (int k = 0; k < BUS_ATOMIC_MAX; k++)
    msgpack_sbuffer_destroy(&sb[k]);
  return n / dt;
}

/* A connection with the default JetStream wait (a batch of 1,000 on a
 * busy syncing server may take longer than the tests' 500 ms). */
/* The queued reports through the appender, until all are in LARK_RUNS. */
static double
run_appender(const lt_natsd *srv, bus_conn *c, int n, reports_stats *st) {
  uint64_t base = 0, last = 0;
  bus_stream_last_seq(c, "LARK_RUNS", &base);
  bus_conn *ac = bench_connect(srv->url, "bench", 0);
  reports *r;
  double t0 = bench_now_s();
  if (reports_start(ac, NULL, &r))
    bench_die("appender", bus_last_error());
  while (last < base + (uint64_t)n && bench_now_s() - t0 < 300) {
    usleep(5000);
    bus_stream_last_seq(c, "LARK_RUNS", &last);
  }
  double took = bench_now_s() - t0;
  reports_get_stats(r, st);
  reports_stop(r);
  bus_conn_close(ac);
  if (last != base + (uint64_t)n)
    bench_die("appender", last < base + (uint64_t)n ? "not every report landed"
                                                    : "a report landed twice");
  return n / took;
}

static void
measure(const char *dir, int always, int n, int jobs, rates *out) {
  lt_natsd srv;
  bench_natsd_start(&srv, dir, always, NULL);
  bus_conn *c = bench_connect(srv.url, "bench", 0);
  if (lt_streams(c, 120000))
    bench_die("streams", bus_last_error());
  out->raw_async = publish(c, "lark.run.raw-%d", n, jobs);
  out->raw_atomic = publish_atomic(c, "lark.run.atomic-%d", n, jobs);
  /* queued before the start: the appender's rate alone */
  out->queue = publish(c, "lark.rep.bench.job-%d", n, jobs);
  out->appender = run_appender(&srv, c, n, &out->st);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
}

static void
row(const char *what, double lazy, double always) {
  printf("  %-40s %10.0f %10.0f\n", what, lazy, always);
}

int
main(int argc, char **argv) {
  int n = 50000, jobs = 8;
  const bench_opt opts[] = {
      {"--reports", .i = &n}, {"--jobs", .i = &jobs}, {NULL}};
  bench_opts(argc, argv, opts);
  char dir[256];
  lt_tmpdir(dir, sizeof dir, "reports");
  rates lazy = {0}, always = {0};
  measure(dir, 0, n, jobs, &lazy);
  measure(dir, 1, n, jobs, &always);
  lt_rmtree(dir);
  printf("reports: %d over %d jobs; reports/s\n", n, jobs);
  printf("  %-40s %10s %10s\n", "", "lazy", "always");
  row("raw: async publish to LARK_RUNS", lazy.raw_async, always.raw_async);
  row("raw: atomic batches of 1000 to LARK_RUNS", lazy.raw_atomic,
      always.raw_atomic);
  row("queueing into LARK_REPORTS (async)", lazy.queue, always.queue);
  row("lark-reports appender (queued->runs)", lazy.appender, always.appender);
  printf("  appender batches one by one: %llu lazy, %llu always; "
         "retries %llu, %llu\n",
         (unsigned long long)lazy.st.singles,
         (unsigned long long)always.st.singles,
         (unsigned long long)lazy.st.retries,
         (unsigned long long)always.st.retries);
  return 0;
}
