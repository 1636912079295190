/*
 * bench/weights_fetch.c - one weights version to 8 nodes, beside a raw
 * TCP copy of the same bytes in the same run.
 *
 * Starts a nats-server and 9 real lark-edge processes on this machine
 * (n0 the source, n1..n8 the fetchers), each with a node certificate of a
 * test CA (tests/data/node_cert.sh, as the signer issues them) and its
 * weights server on 127.0.0.1. A pod on n0 publishes --bytes through its
 * socket; --pods pods on each of n1..n8 wait for it (wait_weights, no
 * hash of their own); the benchmark, playing lark-engine, writes the
 * Job's engine.peers to n0 and engine.weights to n1..n8. Each node
 * fetches once (8 fetches in all, counted in n0's log), over TLS 1.3,
 * hashing (SHA-256) and writing the bytes to its cache, fsync included.
 *
 *   per node   bytes / the fetch's own time (its weights.report `ms`:
 *              connect, handshake, transfer, hash, write, fsync, rename)
 *   aggregate  8 x bytes / wall time from the projections' write to the
 *              last cached report
 *   baseline   one raw TCP copy of the same file on the same machine: a
 *              thread reads the source's cache file in 1 MiB chunks and
 *              send()s them over a 127.0.0.1 connection, the reader
 *              write()s them to a new file and fsyncs it; no TLS, no
 *              hash. Timed from connect to fsync, once before the
 *              fetches and once after; the better is the figure. Also
 *              8 such copies at once (8 threads each with its own
 *              sender), the fetches' work without TLS and hash, to
 *              the last fsync.
 *
 *   serial     with --serial 1, the nodes fetch one after another, each
 *              alone on the machine: what one node's fetch costs when it
 *              has the CPUs to itself, as a node on its own machine does
 *
 *   bench_weights_fetch [--bytes N] [--pods P] [--serial 1]
 *
 * Needs LARK_BIN_DIR (lark-edge) and LARK_SOURCE_DIR (the pod script and
 * node_cert.sh), which ctest sets.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"
#include "natsd.h"
#include "proc.h"

enum { NODES = 9, CHUNK = 1 << 20 };

typedef struct run {
  lt_natsd srv;
  char dir[256], url[128], addr[64], sha[65];
  long bytes;
  int pods;
  bus_conn *c;
  bus_consumer *in;
  pid_t edges[NODES];
  uint64_t ms[NODES]; /* cached reports' ms; 0: none yet */
  int ncached;
  double last_s;
} run;

static void
shell(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (system(cmd) != 0)
    bench_die("shell", cmd);
}

static const char *
src_dir(void) {
  const char *s = getenv("LARK_SOURCE_DIR");
  if (!s)
    bench_die("LARK_SOURCE_DIR", "not set");
  return s;
}

static void
start_edges(run *r) {
  char node[8], data[300], tls[300], log[300];
  shell("sh %s/tests/data/node_cert.sh ca %s/ca", src_dir(), r->dir);
  for (int i = 0; i < NODES; i++) {
    snprintf(node, sizeof node, "n%d", i);
    snprintf(data, sizeof data, "%s/%s", r->dir, node);
    snprintf(tls, sizeof tls, "%s/tls-%s", r->dir, node);
    snprintf(log, sizeof log, "%s/%s.log", r->dir, node);
    shell("sh %s/tests/data/node_cert.sh node %s/ca %s %s", src_dir(), r->dir,
          tls, node);
    if (bus_node_stream_ensure(r->c, node, NULL))
      bench_die("node stream", bus_last_error());
    const char *extra[] = {
        "--node",      node,          "--tls-dir", tls, "--weights-listen",
        "127.0.0.1:0", "--heartbeat", "0.5",       NULL};
    if ((r->edges[i] =
             lt_start_service("lark-edge", r->url, data, log, extra)) < 0)
      bench_die("lark-edge", "cannot start");
  }
}

/* An event of type by actor appended to subject as it is. */
static void
put(run *r, const char *subject, const char *type, const char *actor,
    const msgpack_sbuffer *sb) {
  char id[33];
  bus_event ev;
  bench_event_init(&ev, id, type, actor, sb);
  if (bus_append(r->c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL))
    bench_die(type, bus_last_error());
}

/* pod.desired Running for pod on node: `python3 weights_pod.py args`. */
static void
pod(run *r, const char *node, const char *name, const char *args) {
  char script[1024], subject[BUS_SUBJECT_MAX];
  snprintf(script, sizeof script,
           "exec python3 %s/tests/data/weights_pod.py %s %s/res-%s.json",
           src_dir(), args, r->dir, name);
  bus_str argv[3] = {BUS_STR("sh"), BUS_STR("-c"), bus_str_of(script)};
  bus_ev_pod_desired d = {
      .pod = bus_str_of(name),
      .job = BUS_STR("j"),
      .task = BUS_STR("j-a"),
      .desired = BUS_STR("Running"),
      .has_attempt = 1,
      .has_runtime = 1,
      .runtime = BUS_STR("raw"),
      .has_raw = 1,
      .raw = {.has_entrypoint = 1, .entrypoint = {argv, 3}}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_pod_desired_pack(&sb, &d) ||
      bus_subj_pod_desired(subject, sizeof subject, node, name))
    bench_die("pod.desired", bus_last_error());
  put(r, subject, "pod.desired", "lark-scheduler", &sb);
  msgpack_sbuffer_destroy(&sb);
}

static void
take(run *r, const bus_event *ev) {
  char node[16] = "", event[16] = "";
  int i = -1;
  if (strcmp(ev->type, "weights.report"))
    return;
  sscanf(ev->subject, "lark.in.n%d", &i);
  bus_obj_str(&ev->data, "event", event, sizeof event);
  snprintf(node, sizeof node, "n%d", i);
  if (i == 0 && !strcmp(event, "published")) {
    bus_obj_str(&ev->data, "address", r->addr, sizeof r->addr);
    bus_obj_str(&ev->data, "sha256", r->sha, sizeof r->sha);
  } else if (i > 0 && i < NODES && !strcmp(event, "cached") && !r->ms[i]) {
    r->ms[i] = (uint64_t)bus_obj_int(&ev->data, "ms", 0) + 1;
    r->ncached++;
    r->last_s = bench_now_s();
  }
}

/* Read the nodes' weights.reports until done(r) or seconds passed. */
static void
drain(run *r, int (*done)(const run *), int seconds) {
  bus_batch *b = NULL;
  double until = bench_now_s() + seconds;
  if (bus_batch_new(&b))
    bench_die("batch", "out of memory");
  while (!done(r) && bench_now_s() < until) {
    if (bus_consumer_fetch(r->in, 64, 200, b))
      bench_die("ingress", bus_last_error());
    for (size_t i = 0; i < bus_batch_len(b); i++)
      if (bus_batch_event(b, i))
        take(r, bus_batch_event(b, i));
    bus_batch_ack(b);
  }
  bus_batch_free(b);
  if (!done(r))
    bench_die("reports", "not all came in time (see the nodes' logs)");
}

static int
published(const run *r) {
  return r->addr[0] != 0;
}

static int
all_cached(const run *r) {
  return r->ncached == NODES - 1;
}

static int serial_at; /* --serial: the fetches cached so far */

static int
one_more_cached(const run *r) {
  return r->ncached > serial_at;
}

/* engine.peers of j to n0: a pod on each of n1..n8. */
static void
write_peers(run *r) {
  bus_peer peers[NODES];
  char names[NODES][16], nodes[NODES][8], subject[BUS_SUBJECT_MAX];
  for (int i = 1; i < NODES; i++) {
    snprintf(names[i], sizeof names[i], "j-b%d-0", i);
    snprintf(nodes[i], sizeof nodes[i], "n%d", i);
    peers[i - 1] = (bus_peer){.pod = bus_str_of(names[i]),
                              .task = BUS_STR("j-b"),
                              .node = bus_str_of(nodes[i])};
  }
  bus_ev_engine_peers d = {.job = BUS_STR("j"),
                           .has_version = 1,
                           .version = 1,
                           .has_peers = 1,
                           .peers = {peers, NODES - 1}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_engine_peers_pack(&sb, &d) ||
      bus_subj_engine_peers(subject, sizeof subject, "n0", "j"))
    bench_die("engine.peers", bus_last_error());
  put(r, subject, "engine.peers", "lark-engine", &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* engine.weights of j to node `only` (1..8), or to n1..n8 when 0:
 * version 1 from n0. */
static void
write_weights(run *r, int only) {
  char node[16], subject[BUS_SUBJECT_MAX];
  bus_weights_source src = {.node = BUS_STR("n0"),
                            .has_cluster = 1,
                            .cluster = BUS_STR("local"),
                            .address = bus_str_of(r->addr)};
  bus_weights_ref ref = {.version = 1,
                         .size = (uint64_t)r->bytes,
                         .sha256 = bus_str_of(r->sha),
                         .has_sources = 1,
                         .sources = {&src, 1}};
  bus_ev_engine_weights d = {.job = BUS_STR("j"),
                             .has_version = 1,
                             .version = 1,
                             .has_versions = 1,
                             .versions = {&ref, 1}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_engine_weights_pack(&sb, &d))
    bench_die("engine.weights", bus_last_error());
  for (int i = only ? only : 1; i < (only ? only + 1 : NODES); i++) {
    snprintf(node, sizeof node, "n%d", i);
    bus_subj_engine_weights(subject, sizeof subject, node, "j");
    put(r, subject, "engine.weights", "lark-engine", &sb);
  }
  msgpack_sbuffer_destroy(&sb);
}

/* ------------------------------------------------------- the baseline */

typedef struct raw_src {
  int lfd;
  char path[400];
} raw_src;

static void *
raw_serve(void *arg) {
  raw_src *s = arg;
  char *buf = malloc(CHUNK);
  int fd = accept(s->lfd, NULL, NULL), in = open(s->path, O_RDONLY);
  ssize_t n;
  while (buf && fd >= 0 && in >= 0 && (n = read(in, buf, CHUNK)) > 0)
    for (ssize_t off = 0, w; off < n; off += w)
      if ((w = send(fd, buf + off, (size_t)(n - off), 0)) <= 0)
        bench_die("raw copy", strerror(errno));
  close(in);
  close(fd);
  free(buf);
  return NULL;
}

/* One raw TCP copy of the source's cache file into dir/raw-<k>.bin:
 * seconds. */
static double
raw_copy(run *r, int k) {
  raw_src s;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  pthread_t th;
  char out[400], *buf = malloc(CHUNK);
  snprintf(s.path, sizeof s.path, "%s/n0/weights/%s", r->dir, r->sha);
  snprintf(out, sizeof out, "%s/raw-%d.bin", r->dir, k);
  s.lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (!buf || bind(s.lfd, (struct sockaddr *)&a, sizeof a) ||
      listen(s.lfd, 1) || getsockname(s.lfd, (struct sockaddr *)&a, &al) ||
      pthread_create(&th, NULL, raw_serve, &s))
    bench_die("raw copy", strerror(errno));
  double t0 = bench_now_s();
  int fd = socket(AF_INET, SOCK_STREAM, 0),
      o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ssize_t n;
  long got = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) || o < 0)
    bench_die("raw copy", strerror(errno));
  while ((n = recv(fd, buf, CHUNK, 0)) > 0 && write(o, buf, (size_t)n) == n)
    got += n;
  fsync(o);
  double t = bench_now_s() - t0;
  close(o), close(fd), close(s.lfd);
  pthread_join(th, NULL);
  unlink(out);
  free(buf);
  if (got != r->bytes)
    bench_die("raw copy", "short");
  return t;
}

typedef struct raw_job {
  run *r;
  int k;
  pthread_t th;
} raw_job;

static void *
raw_one(void *arg) {
  raw_job *j = arg;
  raw_copy(j->r, j->k);
  return NULL;
}

/* n raw copies at once, as the n fetches run: seconds until the last. */
static double
raw_copies(run *r, int n) {
  raw_job j[NODES];
  double t0 = bench_now_s();
  for (int k = 0; k < n; k++) {
    j[k] = (raw_job){.r = r, .k = k};
    if (pthread_create(&j[k].th, NULL, raw_one, &j[k]))
      bench_die("raw copies", "no thread");
  }
  for (int k = 0; k < n; k++)
    pthread_join(j[k].th, NULL);
  return bench_now_s() - t0;
}

/* Every waiting pod was handed version 1 (its answer file says ok). */
static void
answered(run *r) {
  char path[400], text[4096];
  for (int i = 1; i < NODES; i++)
    for (int k = 0; k < r->pods; k++) {
      snprintf(path, sizeof path, "%s/res-j-b%d-%d.json", r->dir, i, k);
      FILE *f = NULL;
      for (int t = 0; t < 600 && !(f = fopen(path, "r")); t++)
        usleep(100000);
      size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
      text[n] = 0;
      if (f)
        fclose(f);
      if (!strstr(text, "\"ok\": true") || !strstr(text, r->sha))
        bench_die(path, *text ? text : "no answer");
    }
}

/* ------------------------------------------------------------- main */

static int
cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void
load(const char *when) {
  char l[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fgets(l, sizeof l, f))
    l[strcspn(l, "\n")] = 0;
  if (f)
    fclose(f);
  printf("load %s: %s (%ld CPUs)\n", when, l, sysconf(_SC_NPROCESSORS_ONLN));
  fflush(stdout); /* before the children fork */
}

static void
report(run *r, int serial, double raw_s, double raw8_s, double wall_s) {
  uint64_t ms[NODES - 1];
  double mib = (double)r->bytes / (1 << 20);
  for (int i = 1; i < NODES; i++)
    ms[i - 1] = r->ms[i] - 1;
  qsort(ms, NODES - 1, sizeof ms[0], cmp_u64);
  printf("weights by reference: %.0f MiB to %d nodes, %d pods each waiting, "
         "%d fetches\n",
         mib, NODES - 1, r->pods, NODES - 1);
  printf("  per node (TLS 1.3 + sha256 + write + fsync), %s: slowest %.0f, "
         "median %.0f, fastest %.0f MiB/s\n",
         serial ? "one node at a time" : "8 at once",
         mib * 1000 / (double)(ms[NODES - 2] ? ms[NODES - 2] : 1),
         mib * 1000 / (double)(ms[(NODES - 1) / 2] ? ms[(NODES - 1) / 2] : 1),
         mib * 1000 / (double)(ms[0] ? ms[0] : 1));
  printf("  median node / baseline: %.2fx\n",
         mib * 1000 / (double)(ms[(NODES - 1) / 2] ? ms[(NODES - 1) / 2] : 1) /
             (mib / raw_s));
  printf("  aggregate (%s, projections to last cached): %.0f MiB/s "
         "(%.2f s)\n",
         serial ? "one at a time" : "8 concurrent", (NODES - 1) * mib / wall_s,
         wall_s);
  printf("  baseline, one raw TCP copy into a file + fsync: %.0f MiB/s "
         "(%.2f s)\n",
         mib / raw_s, raw_s);
  printf("  aggregate / baseline: %.2fx\n",
         ((NODES - 1) * mib / wall_s) / (mib / raw_s));
  printf("  the same 8 raw copies at once: %.0f MiB/s (%.2f s); aggregate / "
         "that: %.2fx\n",
         (NODES - 1) * mib / raw8_s, raw8_s, raw8_s / wall_s);
}

static void
setup(run *r) {
  snprintf(r->dir, sizeof r->dir, "/tmp/lark-bench-weights-XXXXXX");
  if (!mkdtemp(r->dir))
    bench_die("mkdtemp", strerror(errno));
  bench_natsd_start(&r->srv, r->dir, 0, NULL);
  snprintf(r->url, sizeof r->url, "%s", r->srv.url);
  r->c = bench_connect_streams(r->url, 0);
  bus_consumer_opts o;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_INGRESS";
  o.durable = "engine";
  o.filter = "lark.in.*.engine.>";
  if (bus_consumer_open(r->c, &o, &r->in))
    bench_die("ingress", bus_last_error());
  start_edges(r);
}

int
main(int argc, char **argv) {
  static run r;
  char args[128], name[32], node[8];
  r.bytes = 64L << 20;
  r.pods = 8;
  int serial = 0;
  bench_opt opts[] = {{"--bytes", NULL, &r.bytes, NULL},
                      {"--pods", &r.pods, NULL, NULL},
                      {"--serial", &serial, NULL, NULL},
                      {NULL}};
  if (bench_opts(argc, argv, opts) || r.bytes < 1 || r.pods < 1)
    bench_die("usage", "[--bytes N] [--pods P] [--serial 1]");
  signal(SIGPIPE, SIG_IGN);
  load("before");
  setup(&r);
  snprintf(args, sizeof args, "publish 1 %ld 7", r.bytes);
  pod(&r, "n0", "j-a-0", args);
  drain(&r, published, 600);
  double raw1 = raw_copy(&r, 0);
  for (int i = 1; i < NODES; i++)
    for (int k = 0; k < r.pods; k++) {
      snprintf(node, sizeof node, "n%d", i);
      snprintf(name, sizeof name, "j-b%d-%d", i, k);
      pod(&r, node, name, "load 1");
    }
  write_peers(&r);
  sleep(2); /* the pods start and wait */
  double t0 = bench_now_s();
  for (int i = 1; serial && i < NODES; i++, serial_at++) {
    write_weights(&r, i); /* each node alone: one fetch at a time */
    drain(&r, one_more_cached, 1800);
  }
  if (!serial)
    write_weights(&r, 0);
  drain(&r, all_cached, 1800);
  double wall = r.last_s - t0, raw2 = raw_copy(&r, 0);
  double raw8 = raw_copies(&r, NODES - 1);
  report(&r, serial, raw1 < raw2 ? raw1 : raw2, raw8, wall);
  load("after");
  answered(&r);
  for (int i = 0; i < NODES; i++)
    lt_kill(r.edges[i], SIGTERM);
  bus_consumer_close(r.in);
  bus_conn_close(r.c);
  lt_natsd_stop(&r.srv);
  shell("rm -rf %s", r.dir);
  return 0;
}
