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

static uint64_t
append(bus_conn *c, const char *subject, const char *type, uint64_t prev,
       const msgpack_sbuffer *sb) {
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.type = type,
                  .id = id,
                  .ts = 1,
                  .actor = "bench",
                  .cause = "",
                  .prev = prev,
                  .data_mp = sb->data,
                  .data_mp_len = sb->size};
  uint64_t seq = 0;
  if (bus_append(c, subject, &ev, BUS_APPEND_CHECK, &seq, NULL))
    bench_die(type, bus_last_error());
  return seq;
}

static void
feed_domain(bus_conn *c, const char *cidr) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  bench_resource_head(&pk, "Domain", "bench");
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "cidr", cidr);
  append(c, "lark.ev.ipam.domains", "domain.created", 0, &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* job.submitted naming the domain, then its job.placed; the log's seq. */
static uint64_t
feed_job(bus_conn *c, int i, int pods, uint64_t log) {
  char name[32], subject[64], pod[64];
  snprintf(name, sizeof name, "j%d", i);
  snprintf(subject, sizeof subject, "lark.ev.job.%s", name);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  bench_resource_head(&pk, "Job", name);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "domain", "bench");
  msgpack_pack_str_with_body(&pk, "tasks", 5);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 4);
  bus_pack_kv_str(&pk, "name", "a");
  bus_pack_kv_str(&pk, "role", "Actor");
  msgpack_pack_str_with_body(&pk, "replicas", 8);
  msgpack_pack_int(&pk, pods);
  bench_runtime_true(&pk);
  append(c, subject, "job.submitted", 0, &sb);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 4);
  bus_pack_kv_str(&pk, "pool", "default");
  bus_pack_kv_str(&pk, "job", name);
  msgpack_pack_str_with_body(&pk, "generation", 10);
  msgpack_pack_uint64(&pk, 1);
  msgpack_pack_str_with_body(&pk, "bindings", 8);
  msgpack_pack_array(&pk, (uint32_t)pods);
  for (int p = 0; p < pods; p++) {
    snprintf(pod, sizeof pod, "%s-a-%d", name, p);
    msgpack_pack_map(&pk, 3);
    bus_pack_kv_str(&pk, "pod", pod);
    snprintf(pod, sizeof pod, "%s-a", name);
    bus_pack_kv_str(&pk, "task", pod);
    bus_pack_kv_str(&pk, "node", "n1");
  }
  log = append(c, "lark.ev.placement.default", "job.placed", log, &sb);
  msgpack_sbuffer_destroy(&sb);
  return log;
}

typedef struct loop {
  bus_conn *c;
  bus_view *v;
  atomic_int stop;
  int rc;
} loop;

static void *
run_service(void *ud) {
  loop *l = ud;
  bus_service_opts so;
  bus_service_opts_init(&so);
  so.name = "ipam";
  so.stop_flag = &l->stop;
  so.batch = 1024;
  so.tick_ms = 500;
  l->rc = bus_service_run(l->c, l->v, &so);
  return NULL;
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
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--jobs"))
      jobs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--pods"))
      pods = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cidr"))
      cidr = argv[i + 1];
  }
  ipam_cidr c;
  char err[200];
  if (jobs <= 0 || pods <= 0 || pods > 4096 ||
      ipam_cidr_parse(cidr, &c, err, sizeof err))
    bench_die("usage", "bench_ipam [--jobs J] [--pods P<=4096] [--cidr CIDR]");
  if ((uint64_t)jobs * (uint64_t)pods > ipam_cidr_usable(&c))
    bench_die("usage", "more pods than the range has addresses");
  lt_natsd srv;
  loop l = {0};
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
  pthread_t th;
  double t0 = bench_now_s();
  pthread_create(&th, NULL, run_service, &l);
  while ((got = used(l.v)) < want && bench_now_s() - t0 < 300 && !l.rc)
    usleep(2000);
  double dt = bench_now_s() - t0;
  l.stop = 1;
  pthread_join(th, NULL);
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
