/*
 * bench/gateway_get.c - GET of every pod from lark-gateway's view, and
 * what applying an event costs it, each beside a raw baseline measured in
 * the same run.
 *
 * The view is built in this process, no broker: N nodes registered, J
 * Jobs of P pods submitted and placed (a node each), as lark-scheduler
 * writes them, applied one event per batch as the service does. Then:
 *
 *   list   gw_list of every pod (the body of GET .../pods) into a buffer,
 *          R times; p50 and p99. Baseline: the same rows read raw from
 *          LMDB (one read transaction, each value copied into a buffer).
 *   page   the same list in pages of --limit with continue tokens.
 *   apply  a pod.phase event applied to the gateway view (embedded views
 *          fed, the pod, its Task, Job and node rendered): p50 and p99 of
 *          --events events over pods of P-pod Jobs. Baseline: the same
 *          events applied to a scheduler view alone.
 *
 *   bench_gateway_get [--jobs J] [--pods P] [--rounds R] [--limit L]
 *                     [--events E]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bus.h"
#include "gateway.h"
#include "gateway_get.h"
#include "natsd.h"
#include "scheduler.h"

typedef struct feeder {
  bus_view *v[2]; /* the gateway's; the scheduler's alone (or NULL) */
  uint64_t seq;
} feeder;

/* Apply one event (data packed in sb) to each view, as a batch of its own;
 * the seconds the first view took. */
static double
feed(feeder *f, const char *subject, const char *type, uint64_t prev,
     const msgpack_sbuffer *sb, double *alone) {
  msgpack_zone z;
  msgpack_object o;
  char id[33];
  msgpack_zone_init(&z, 4096);
  if (msgpack_unpack(sb->data, sb->size, NULL, &z, &o) < 0)
    bench_die(type, "not msgpack");
  bus_event_new_id(id);
  f->seq++;
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = (int64_t)f->seq * 1000000,
                  .actor = "bench",
                  .cause = "",
                  .prev = prev,
                  .data = o,
                  .subject = subject,
                  .seq = f->seq};
  const bus_event *evs[1] = {&ev};
  double took = 0;
  for (int i = 0; i < 2 && f->v[i]; i++) {
    double t0 = bench_now_s();
    if (bus_view_apply(f->v[i], evs, 1))
      bench_die(type, bus_last_error());
    double dt = bench_now_s() - t0;
    if (i == 0)
      took = dt;
    else if (alone)
      *alone = dt;
  }
  msgpack_zone_destroy(&z);
  return took;
}

/* The in-process sink: the views of a feeder. */
static uint64_t
to_views(void *ud, const char *subject, const char *type, uint64_t prev,
         const msgpack_sbuffer *data) {
  feeder *f = ud;
  feed(f, subject, type, prev, data, NULL);
  return f->seq;
}

/* The baseline: every pods/ row copied raw into a buffer. */
static int
copy_row(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  return gw_buf_add(ud, v, vl);
}

static int
raw_read(bus_txn *t, void *ud) {
  return bus_txn_scan(t, "objects", "pods/", 5, copy_row, ud);
}

/* gw_list of every pod, rounds times, beside the raw read. */
static void
measure_list(bus_view *v, int rounds, size_t want) {
  double *a = calloc((size_t)rounds, sizeof *a);
  double *b = calloc((size_t)rounds, sizeof *b);
  gw_buf out = {0};
  size_t bytes = 0;
  for (int r = 0; r < rounds; r++) {
    gw_buf_reset(&out);
    double t0 = bench_now_s();
    if (gw_list(v, GW_PODS, NULL, &out, NULL))
      bench_die("gw_list", bus_last_error());
    a[r] = bench_now_s() - t0;
    bytes = out.len;
    if (r == 0 && bench_gw_items(out.p) != want)
      bench_die("gw_list", "not every pod listed");
    gw_buf_reset(&out);
    t0 = bench_now_s();
    if (bus_view_read_with(v, raw_read, &out))
      bench_die("raw read", bus_last_error());
    b[r] = bench_now_s() - t0;
  }
  printf("  list %zu pods (%.1f MB): p50 %.2f ms p99 %.2f ms | raw LMDB "
         "read of the same rows: p50 %.2f ms p99 %.2f ms\n",
         want, (double)bytes / 1e6, bench_pct(a, rounds, 0.5) * 1e3,
         bench_pct(a, rounds, 0.99) * 1e3, bench_pct(b, rounds, 0.5) * 1e3,
         bench_pct(b, rounds, 0.99) * 1e3);
  gw_buf_free(&out);
  free(a);
  free(b);
}

/* The whole list in pages of limit: pages and total time. */
static void
measure_pages(bus_view *v, size_t limit, size_t want) {
  gw_list_opts o;
  gw_list_opts_init(&o);
  o.limit = limit;
  char token[256] = "";
  gw_buf out = {0};
  size_t pages = 0, items = 0;
  double t0 = bench_now_s(), worst = 0;
  do {
    gw_buf_reset(&out);
    o.cont = token[0] ? token : NULL;
    double p0 = bench_now_s();
    if (gw_list(v, GW_PODS, &o, &out, NULL))
      bench_die("gw_list page", bus_last_error());
    double dt = bench_now_s() - p0;
    worst = dt > worst ? dt : worst;
    items += bench_gw_items(out.p);
    pages++;
    const char *c = strstr(out.p, "\"continue\":\"");
    token[0] = 0;
    if (c)
      sscanf(c + 12, "%255[^\"]", token);
  } while (token[0]);
  if (items != want)
    bench_die("pages", "not every pod listed once");
  printf("  paged by %zu: %zu pages, %.2f ms in all, slowest page %.2f ms\n",
         limit, pages, (bench_now_s() - t0) * 1e3, worst * 1e3);
  gw_buf_free(&out);
}

/* pod.phase events over pods of the Jobs: per event, the gateway view's
 * apply beside the scheduler view's alone. */
static void
measure_apply(feeder *f, int jobs, int pods, int events) {
  double *a = calloc((size_t)events, sizeof *a);
  double *b = calloc((size_t)events, sizeof *b);
  for (int e = 0; e < events; e++) {
    char pod[64], subject[96], jname[32], nname[32];
    int j = e % jobs, p = (e / jobs) % pods;
    snprintf(jname, sizeof jname, "j%d", j);
    snprintf(nname, sizeof nname, "n%d", j);
    snprintf(pod, sizeof pod, "j%d-w-%d", j, p);
    snprintf(subject, sizeof subject, "lark.ev.pod.%s", pod);
    bus_ev_pod_phase d = {.phase = BUS_STR("Running"),
                          .has_job = 1,
                          .job = bus_str_of(jname),
                          .node = bus_str_of(nname)};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    if (bus_pod_phase_pack(&sb, &d))
      bench_die("pod.phase", bus_last_error());
    a[e] = feed(f, subject, "pod.phase", 0, &sb, &b[e]);
    msgpack_sbuffer_destroy(&sb);
  }
  printf("  apply pod.phase in %d-pod Jobs: p50 %.3f ms p99 %.3f ms | the "
         "scheduler view alone: p50 %.3f ms p99 %.3f ms\n",
         pods, bench_pct(a, events, 0.5) * 1e3,
         bench_pct(a, events, 0.99) * 1e3, bench_pct(b, events, 0.5) * 1e3,
         bench_pct(b, events, 0.99) * 1e3);
  free(a);
  free(b);
}

static bus_view *
open_view(void (*def_fn)(bus_view_def *), const char *dir) {
  bus_view_def def;
  bus_view_opts o;
  bus_view *v;
  def_fn(&def);
  def.decide = NULL;
  bus_view_opts_init(&o);
  o.dir = dir;
  o.map_size = (size_t)8 << 30;
  o.nosync = 1; /* both alike: the work, not the disk */
  if (bus_view_open(&v, &def, &o))
    bench_die("view", bus_last_error());
  return v;
}

int
main(int argc, char **argv) {
  int jobs = 10, pods = 1000, rounds = 50, limit = 500, events = 2000;
  int http = 1;
  const bench_opt opts[] = {{"--jobs", .i = &jobs},
                            {"--pods", .i = &pods},
                            {"--rounds", .i = &rounds},
                            {"--limit", .i = &limit},
                            {"--events", .i = &events},
                            {"--http", .i = &http},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (jobs <= 0 || pods <= 0 || pods > 4096 || rounds <= 0 || limit <= 0 ||
      events <= 0)
    bench_die("usage", "bench_gateway_get [--jobs J] [--pods P<=4096] "
                       "[--rounds R] [--limit L] [--events E]");
  char dir[256], gdir[300], sdir[300];
  lt_tmpdir(dir, sizeof dir, "bench-gateway-get");
  snprintf(gdir, sizeof gdir, "%s/gateway", dir);
  snprintf(sdir, sizeof sdir, "%s/scheduler", dir);
  feeder f = {{open_view(gw_view_def, gdir), open_view(sched_view_def, sdir)},
              0};
  size_t want = (size_t)jobs * (size_t)pods;
  if ((size_t)events > want) /* one event per pod: each its first */
    events = (int)want;
  printf("bench_gateway_get: %zu pods (%d Jobs x %d pods)\n", want, jobs, pods);
  double t0 = bench_now_s();
  bench_gw_events(jobs, pods, to_views, &f);
  printf("  built: %llu events in %.2f s\n", (unsigned long long)f.seq,
         bench_now_s() - t0);
  measure_list(f.v[0], rounds, want);
  measure_pages(f.v[0], (size_t)limit, want);
  measure_apply(&f, jobs, pods, events);
  bus_view_close(f.v[0]);
  bus_view_close(f.v[1]);
  lt_rmtree(dir);
  fflush(stdout); /* before the HTTP half forks a broker and a gateway */
  if (http)
    bench_gateway_http(argv[0], jobs, pods, rounds);
  return 0;
}
