/*
 * bench/ipam.c - virtual addresses allocated per second through the
 * broker, beside the pure allocator's rate in the same run.
 *
 * Starts a nats-server, creates one Domain (a /16 by default), and feeds
 * J Jobs of P pods the way lark-scheduler writes them: job.submitted
 * naming the domain, then one job.placed each on the placement log. Then
 * the lark-ipam service loop starts in this process (the same view,
 * decide and outbox as the binary) and the clock runs until every pod
 * holds an address: one domain.allocated per Job, each appended with the
 * broker's version check on the domain's subject, applied, and the next
 * decided. Beside it: ipam_pick alone filling the same range in Jobs of
 * P, in memory.
 *
 *   bench_ipam [--jobs J] [--pods P] [--cidr CIDR]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "ipam.h"
#include "natsd.h"

static void
feed_domain(bus_conn *c, const char *cidr) {
  bus_domain_res d = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                      .kind = BUS_STR("Domain"),
                      .metadata.name = BUS_STR("bench"),
                      .spec.cidr = bus_str_of(cidr)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_domain_created_pack(&sb, &d))
    bench_die("domain.created", bus_last_error());
  bench_append(c, "lark.ev.ipam.domains", "domain.created", 0, &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* job.submitted naming the domain, then its job.placed; the log's seq. */
static uint64_t
feed_job(bus_conn *c, int i, int pods, uint64_t log) {
  char name[32], subject[64], task[40];
  snprintf(name, sizeof name, "j%d", i);
  snprintf(subject, sizeof subject, "lark.ev.job.%s", name);
  snprintf(task, sizeof task, "%s-a", name);
  bench_job j;
  bench_job_init(&j, name, "a", "Actor", pods, 0, NULL);
  j.res.spec.has_domain = 1;
  j.res.spec.domain = BUS_STR("bench");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_job_submitted_pack(&sb, &j.res))
    bench_die("job.submitted", bus_last_error());
  bench_append(c, subject, "job.submitted", 0, &sb);
  bus_ev_job_placed d = {.pool = BUS_STR("default"),
                         .job = bus_str_of(name),
                         .has_generation = 1,
                         .generation = 1};
  bus_binding b = {.task = bus_str_of(task), .node = BUS_STR("n1")};
  bench_placed_pack(&sb, &d, &b, pods);
  log = bench_append(c, "lark.ev.placement.default", "job.placed", log, &sb);
  msgpack_sbuffer_destroy(&sb);
  return log;
}

/* The domain's used count, from the view. */
static uint64_t
used(bus_view *v) {
  msgpack_sbuffer out;
  msgpack_sbuffer_init(&out);
  msgpack_object req = {.type = MSGPACK_OBJECT_NIL};
  bus_query_answer(v, ipam_query, "domain", "list", &req, &out, NULL);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  uint64_t n = 0;
  if (msgpack_unpack(out.data, out.size, NULL, &z, &o) >= 0) {
    const msgpack_object *r = bus_obj_get(&o, "result");
    if (r && r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size)
      n = (uint64_t)bus_obj_int(&r->via.array.ptr[0], "used", 0);
  }
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&out);
  return n;
}

/* The allocator alone: Jobs of pods filling the range, in memory. */
static double
pure_rate(const ipam_cidr *c, int jobs, int pods) {
  ipam_set s = {0};
  uint64_t *out = calloc((size_t)pods, sizeof *out);
  uint64_t low = c->first; /* as the view keeps it */
  double t0 = bench_now_s();
  for (int j = 0; j < jobs; j++) {
    if (ipam_pick(c, low, ipam_cidr_usable(c) - s.n, (size_t)pods, NULL,
                  ipam_set_next, &s, out))
      bench_die("pure", "range exhausted");
    for (int p = 0; p < pods; p++) {
      ipam_set_add(&s, out[p]);
      low = out[p] == low ? low + 1 : low;
    }
  }
  double dt = bench_now_s() - t0;
  free(out);
  ipam_set_free(&s);
  return (double)jobs * pods / dt;
}

int
main(int argc, char **argv) {
  int jobs = 655, pods = 100;
  const char *cidr = "10.0.0.0/16";
  const bench_opt opts[] = {{"--jobs", .i = &jobs},
                            {"--pods", .i = &pods},
                            {"--cidr", .s = &cidr},
                            {NULL}};
  bench_opts(argc, argv, opts);
  ipam_cidr c;
  char err[200];
  if (jobs <= 0 || pods <= 0 || pods > 4096 ||
      ipam_cidr_parse(cidr, &c, err, sizeof err))
    bench_die("usage", "bench_ipam [--jobs J] [--pods P<=4096] [--cidr CIDR]");
  if ((uint64_t)jobs * (uint64_t)pods > ipam_cidr_usable(&c))
    bench_die("usage", "more pods than the range has addresses");
  lt_natsd srv;
  bench_loop l = {0};
  char dir[256];
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &l.c) ||
      lt_streams(l.c, 120000))
    bench_die("broker", bus_last_error());
  lt_tmpdir(dir, sizeof dir, "bench-ipam");
  printf("bench_ipam: %d addresses (%d Jobs x %d pods) in %s\n", jobs * pods,
         jobs, pods, cidr);
  feed_domain(l.c, cidr);
  uint64_t log = 0;
  for (int i = 0; i < jobs; i++)
    log = feed_job(l.c, i, pods, log);
  bus_view_def def;
  ipam_view_def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = dir;
  if (bus_view_open(&l.v, &def, &vo))
    bench_die("view", bus_last_error());
  uint64_t want = (uint64_t)jobs * (uint64_t)pods, got = 0;
  bus_service_opts_init(&l.opts);
  l.opts.name = "ipam";
  l.opts.batch = 1024;
  l.opts.tick_ms = 500;
  double t0 = bench_now_s();
  bench_loop_start(&l);
  while ((got = used(l.v)) < want && bench_now_s() - t0 < 300 && !l.rc)
    usleep(2000);
  double dt = bench_now_s() - t0;
  bench_loop_stop(&l);
  if (got < want)
    bench_die("timeout", "not every pod was addressed within 300 s");
  double pure = pure_rate(&c, jobs, pods);
  double rate = (double)want / dt;
  printf("  pure allocator (ipam_pick)        %12.0f addresses/s\n", pure);
  printf("  placed to allocated, via broker   %12.0f addresses/s  "
         "(%.0f Jobs/s, %.2f s; target >= 20000/s)\n",
         rate, jobs / dt, dt);
  bus_view_close(l.v);
  bus_conn_close(l.c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return 0;
}
