/*
 * bench/logs.c - log lines per second from the nodes' ingress to what
 * `larkctl logs` reads.
 *
 * Starts a nats-server and a real lark-logs, binds P pods to one node
 * with a job.placed event, then publishes B log.batch messages of L lines
 * each on lark.in.<node>.logs.<pod> as nodes do (async, one flush) while a
 * reader follows lark.log.<job>.> in LARK_LOGS, as `larkctl logs -f` does,
 * decoding every batch and counting its lines. The figure is lines read
 * over the time from the first publish to the last line read.
 *
 * Beside it, in the same run, the raw baseline: the same batches (same
 * bytes, new ids) published straight to a LARK_LOGS subject and read back
 * the same way, with no lark-logs in between.
 *
 *   bench_logs [--batches B] [--lines L] [--pods P]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

typedef struct run {
  bus_conn *c;
  int batches, lines, pods;
  const char *prefix;    /* subject prefix: ingress or raw */
  msgpack_sbuffer *data; /* one per pod */
  int rc;
} run;

/* A pod's batch: L lines of about 80 bytes. */
static void
make_batch(msgpack_sbuffer *sb, int pod, int lines) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  char name[64], text[128];
  snprintf(name, sizeof name, "bench-w-%d", pod);
  msgpack_pack_map(&pk, 3);
  bus_pack_str(&pk, "pod");
  bus_pack_str(&pk, name);
  bus_pack_str(&pk, "attempt");
  msgpack_pack_uint32(&pk, 0);
  bus_pack_str(&pk, "lines");
  msgpack_pack_array(&pk, (uint32_t)lines);
  int64_t ts = bus_wall_ns();
  for (int k = 0; k < lines; k++) {
    snprintf(text, sizeof text,
             "step %06d loss 0.%06d reward 0.%04d lr 3e-4 "
             "throughput 1234.5 samples/s",
             k, k * 7 % 1000000, k % 10000);
    msgpack_pack_map(&pk, 3);
    bus_pack_str(&pk, "ts");
    msgpack_pack_int64(&pk, ts + k);
    bus_pack_str(&pk, "stream");
    bus_pack_str(&pk, "stdout");
    bus_pack_str(&pk, "text");
    bus_pack_str(&pk, text);
  }
}

static void *
publish(void *arg) {
  run *r = arg;
  char subject[256], id[33];
  for (int i = 0; i < r->batches && !r->rc; i++) {
    int pod = i % r->pods;
    snprintf(subject, sizeof subject, "%s%d", r->prefix, pod);
    bus_event ev;
    bench_event_init(&ev, id, "log.batch", "node:n1", &r->data[pod]);
    r->rc = bus_append_async(r->c, subject, &ev, BUS_APPEND_NOCHECK);
  }
  if (!r->rc)
    r->rc = bus_append_flush(r->c, 60000, NULL);
  return NULL;
}

/* Publish in a thread, follow filter until every line is read: lines/s. */
static double
measure(bus_conn *pub, bus_conn *rd, run *r, const char *filter) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_LOGS";
  o.filter = filter;
  o.follow = 1;
  o.batch = 4096;
  bus_reader *rr;
  bus_batch *b;
  if (bus_batch_new(&b) || bus_reader_open(rd, &o, &rr))
    bench_die("reader", bus_last_error());
  r->c = pub;
  pthread_t th;
  uint64_t want = (uint64_t)r->batches * (uint64_t)r->lines, got = 0;
  double t0 = bench_now_s(), last = t0;
  pthread_create(&th, NULL, publish, r);
  while (got < want) {
    int rc = bus_reader_next(rr, b, 500);
    if (rc < 0 && rc != BUS_ETIMEOUT && rc != BUS_EEOF)
      bench_die("read", bus_last_error());
    for (size_t i = 0; i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      const msgpack_object *l = ev ? bus_obj_get(&ev->data, "lines") : NULL;
      got += l && l->type == MSGPACK_OBJECT_ARRAY ? l->via.array.size : 0;
      last = bench_now_s();
    }
    if (bench_now_s() - last > 30)
      bench_die("read", "no lines for 30 s: is lark-logs running?");
  }
  double dt = bench_now_s() - t0;
  pthread_join(th, NULL);
  if (r->rc)
    bench_die("publish", bus_last_error());
  bus_reader_close(rr);
  bus_batch_free(b);
  return (double)got / dt;
}

/* job.placed binding bench-w-<i> to n1, then wait until lark-logs has it. */
static void
place(bus_conn *c, int pods) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_ev_job_placed d = {.pool = BUS_STR("default"), .job = BUS_STR("bench")};
  bus_binding b = {.task = BUS_STR("bench-w"), .node = BUS_STR("n1")};
  bench_placed_pack(&sb, &d, &b, pods);
  uint64_t seq =
      bench_append(c, "lark.ev.placement.default", "job.placed", 0, &sb);
  msgpack_sbuffer_destroy(&sb);
  bus_status st;
  for (int i = 0; i < 300; i++) {
    if (bus_status_query(c, "logs", 500, &st) == 0 && st.seq >= seq)
      return;
    usleep(100 * 1000);
  }
  bench_die("lark-logs", "did not apply the placement");
}

int
main(int argc, char **argv) {
  int batches = 2000, lines = 100, pods = 8;
  const bench_opt opts[] = {{"--batches", .i = &batches},
                            {"--lines", .i = &lines},
                            {"--pods", .i = &pods},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (batches <= 0 || lines <= 0 || lines > 4096 || pods <= 0 || pods > 1000)
    bench_die("usage",
              "bench_logs [--batches B] [--lines L (1..4096)] [--pods P]");
  lt_natsd srv;
  bus_conn *pub, *rd;
  char dir[256];
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &pub) ||
      lt_connect(&srv, &rd) || lt_streams(pub, 120000))
    bench_die("broker", bus_last_error());
  lt_tmpdir(dir, sizeof dir, "bench-logs");
  pid_t pid = bench_start_service(argv[0], "lark-logs", srv.url, dir);
  place(pub, pods);
  msgpack_sbuffer *data = calloc((size_t)pods, sizeof *data);
  for (int i = 0; i < pods; i++) {
    msgpack_sbuffer_init(&data[i]);
    make_batch(&data[i], i, lines);
  }
  run raw = {.batches = batches,
             .lines = lines,
             .pods = pods,
             .prefix = "lark.log.raw.raw-w.raw-w-",
             .data = data};
  double base = measure(pub, rd, &raw, "lark.log.raw.>");
  run e2e = raw;
  e2e.prefix = "lark.in.n1.logs.bench-w-";
  double rate = measure(pub, rd, &e2e, "lark.log.bench.>");
  printf("bench_logs: %d batches x %d lines (%zu bytes a batch), %d pods\n",
         batches, lines, data[0].size, pods);
  printf("  raw publish + read of LARK_LOGS : %10.0f lines/s\n", base);
  printf("  ingress -> lark-logs -> LARK_LOGS: %10.0f lines/s (%.0f%% of "
         "raw; target >= 100000)\n",
         rate, 100.0 * rate / base);
  for (int i = 0; i < pods; i++)
    msgpack_sbuffer_destroy(&data[i]);
  free(data);
  bench_stop_service(pid, "lark-logs");
  bus_conn_close(rd);
  bus_conn_close(pub);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return 0;
}
