/*
 * bench/gateway_watch.c - how late a change reaches 200 watchers of
 * lark-gateway, beside 200 core-NATS subscribers of the same changes.
 *
 * A nats-server and a lark-scheduler place P pods (Jobs of 100 pods over
 * nodes of 64 CPUs); the scheduler is then stopped, so nothing but the
 * measured path works on the machine. One thread churns: pod.phase events
 * (Running, its reason naming the change) of pods picked round-robin,
 * appended directly to LARK_EVENTS as the scheduler would, at R changes a
 * second, each stamped with the time just before its append. Each event's
 * prev is its pod's last sequence (checked by the broker), as a writer of
 * the aggregate must give it, so a pod may change any number of times: an
 * event with another prev would be stale and ignored by every view.
 *
 *   baseline  W core-NATS subscriptions on lark.ev.pod.> (the broker
 *             delivers the appended messages to them as published), each
 *             change's receipt time taken in its subscription's callback;
 *   gateway   lark-gateway started on the log (--http on loopback, a
 *             token), W HTTP/1.1 connections watching pods from the
 *             current resourceVersion, read by one epoll thread that
 *             undoes the chunked encoding and takes each JSON line's
 *             resourceVersion; its receipt time is when the line ended.
 *
 * The lag of a change at a receiver is receipt minus append stamp; the
 * figure is its p50/p99/max over every (change, receiver), and how many
 * of the W x changes arrived. The two phases run one after the other on
 * the same broker (the gateway's first, then it is stopped), so they do
 * not share the machine.
 *
 *   bench_gateway_watch [--pods P] [--rate R] [--seconds S] [--watchers W]
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "bench.h"

/* ------------------------------------------------------------- setup */

typedef struct pod {
  char name[64], node[32], job[32];
  uint64_t last; /* the sequence of its subject's last event (0: none) */
} pod;

typedef struct bench {
  const char *argv0;
  lt_natsd srv;
  bus_conn *c;
  char dir[256];
  pod *pods;
  long npods;
  int rate, seconds, watchers;
  /* the changes of the current phase: the time just before change k's
   * append, and its sequence, first_seq + k */
  double *stamp;
  long nchanges_max;
  atomic_long nchanges;
  uint64_t first_seq;
  long done; /* changes of earlier phases */
  /* receipts: lag in ms of every (change, receiver) */
  double *lags;
  atomic_long nlags;
  long lags_cap;
} bench;

static void
keep_binding(const bus_event *placed, const msgpack_object *binding, long n,
             void *ud) {
  pod *p = &((bench *)ud)->pods[n];
  bus_obj_str(binding, "pod", p->name, sizeof p->name);
  bus_obj_str(binding, "node", p->node, sizeof p->node);
  bus_obj_str(&placed->data, "job", p->job, sizeof p->job);
}

static void
place_pods(bench *b) {
  pid_t sched =
      bench_start_service(b->argv0, "lark-scheduler", b->srv.url, b->dir);
  bench_wait_up(b->c, "scheduler");
  int nodes = (int)((b->npods + 63) / 64) + 1, jobs = (int)(b->npods / 100);
  bench_add_nodes(b->c, nodes);
  bench_add_jobs(b->c, jobs, 100, "spread");
  if (bench_wait_bindings(b->c, b->npods, bench_now_s() + 180, keep_binding,
                          b) < b->npods)
    bench_die("timeout", "not every pod was bound within 180 s");
  bench_stop_service(sched, "lark-scheduler");
}

/* ------------------------------------------------------------- churn */

/* The change with index k reached a receiver at now. */
static void
note_lag(bench *b, long k, double now) {
  if (k < 0 || k >= b->nchanges_max)
    return;
  long i = atomic_fetch_add(&b->nlags, 1);
  if (i < b->lags_cap)
    b->lags[i] = (now - b->stamp[k]) * 1000;
}

/*
 * R changes a second for S seconds, paced against the clock. Change k of
 * the phase is the g-th of the run (g = done + k): pod g mod P, Running,
 * its reason "k g". Nothing else writes LARK_EVENTS meanwhile, so change
 * k gets sequence first_seq + k (checked); the baseline reads k from the
 * reason.
 */
static void
churn(bench *b) {
  bus_packbuf pb;
  bus_packbuf_init(&pb);
  long total = (long)b->rate * b->seconds;
  double t0 = bench_now_s();
  for (long k = 0; k < total; k++) {
    double due = t0 + (double)k / b->rate, now = bench_now_s();
    if (due > now)
      usleep((useconds_t)((due - now) * 1e6));
    long g = b->done + k;
    pod *p = &b->pods[g % b->npods];
    char subject[128], id[33], reason[32];
    snprintf(reason, sizeof reason, "%ld %ld", k, g);
    msgpack_sbuffer_clear(&pb.sb);
    msgpack_pack_map(&pb.pk, 5);
    bus_pack_kv_str(&pb.pk, "phase", "Running");
    bus_pack_kv_str(&pb.pk, "job", p->job);
    bus_pack_kv_str(&pb.pk, "node", p->node);
    bus_pack_kv_uint(&pb.pk, "attempt", 0);
    bus_pack_kv_str(&pb.pk, "reason", reason);
    snprintf(subject, sizeof subject, "lark.ev.pod.%s", p->name);
    bus_event ev;
    bench_event_init(&ev, id, "pod.phase", "lark-scheduler", &pb.sb);
    ev.prev = p->last;
    uint64_t seq = 0;
    b->stamp[k] = bench_now_s();
    atomic_store(&b->nchanges, k + 1);
    if (bus_append(b->c, subject, &ev, BUS_APPEND_CHECK, &seq, NULL))
      bench_die("append", bus_last_error());
    p->last = seq;
    if (seq != b->first_seq + (uint64_t)k)
      bench_die("append", "another writer on LARK_EVENTS during the churn");
  }
  b->done += total;
  bus_packbuf_destroy(&pb);
}

/* Start a phase: the next change's sequence, nothing received yet. */
static void
phase_start(bench *b) {
  uint64_t last = 0;
  if (bus_stream_last_seq(b->c, "LARK_EVENTS", &last))
    bench_die("stream", bus_last_error());
  b->first_seq = last + 1;
  atomic_store(&b->nchanges, 0);
  atomic_store(&b->nlags, 0);
}

static int
cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, c = *(const double *)y;
  return a < c ? -1 : a > c;
}

/* The lags of the phase; p99 into *p99. */
static void
report(bench *b, const char *what, double *p99) {
  long n = atomic_load(&b->nlags);
  if (n > b->lags_cap)
    n = b->lags_cap;
  long want = atomic_load(&b->nchanges) * b->watchers;
  qsort(b->lags, (size_t)n, sizeof *b->lags, cmp_double);
  double p50 = n ? b->lags[n / 2] : 0, max = n ? b->lags[n - 1] : 0;
  *p99 = n ? b->lags[n * 99 / 100] : 0;
  printf("  %-32s p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  received %ld of "
         "%ld\n",
         what, p50, *p99, max, n, want);
  fflush(stdout);
}

/* Wait until every change reached every receiver, or 10 s went by idle. */
static void
wait_received(bench *b) {
  long want = atomic_load(&b->nchanges) * b->watchers, seen = -1;
  double idle = bench_now_s();
  while (atomic_load(&b->nlags) < want && bench_now_s() - idle < 10) {
    long n = atomic_load(&b->nlags);
    if (n != seen)
      seen = n, idle = bench_now_s();
    usleep(50 * 1000);
  }
}

/* ---------------------------------------------------------- baseline */

static void
on_change(bus_conn *c, const char *subject, const char *reply, const void *data,
          size_t len, void *ud) {
  bench *b = ud;
  double now = bench_now_s();
  (void)c, (void)subject, (void)reply;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event ev;
  char reason[32] = "";
  if (bus_event_decode(data, len, &ev, &z) == 0 &&
      bus_obj_str(&ev.data, "reason", reason, sizeof reason))
    note_lag(b, strtol(reason, NULL, 10), now);
  msgpack_zone_destroy(&z);
}

/* W subscriptions on lark.ev.pod.>, over 8 connections. */
static void
baseline(bench *b, double *p99) {
  enum { NCONN = 8 };
  bus_conn *cs[NCONN];
  bus_serve **subs = calloc((size_t)b->watchers, sizeof *subs);
  for (int i = 0; i < NCONN; i++)
    cs[i] = bench_connect(b->srv.url, "bench-sub", 0);
  for (int i = 0; i < b->watchers; i++)
    if (bus_conn_serve(cs[i % NCONN], "lark.ev.pod.>", NULL, on_change, b,
                       &subs[i]))
      bench_die("subscribe", bus_last_error());
  usleep(300 * 1000);
  phase_start(b);
  churn(b);
  wait_received(b);
  report(b, "core NATS, W subscribers", p99);
  for (int i = 0; i < b->watchers; i++)
    bus_conn_unserve(subs[i]);
  for (int i = 0; i < NCONN; i++)
    bus_conn_close(cs[i]);
  free(subs);
}

/* ----------------------------------------------------------- gateway */

#define TOKEN "bench-watch-token-0123456789abcdef"

static pid_t
start_gateway(bench *b, int *port) {
  char self[4096], bin[4300], data[512], log[512], tok[512], pf[512];
  snprintf(self, sizeof self, "%s", b->argv0);
  char *slash = strrchr(self, '/');
  snprintf(bin, sizeof bin, "%.*s/lark-gateway",
           slash ? (int)(slash - self) : 1, slash ? self : ".");
  snprintf(data, sizeof data, "%s/gateway", b->dir);
  snprintf(log, sizeof log, "%s/lark-gateway.log", b->dir);
  snprintf(tok, sizeof tok, "%s/token", b->dir);
  snprintf(pf, sizeof pf, "%s/gateway.ports", b->dir);
  FILE *f = fopen(tok, "w");
  if (!f || fprintf(f, "%s\n", TOKEN) < 0 || fclose(f) || chmod(tok, 0600))
    bench_die("token", "cannot write the token file");
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--url", b->srv.url, "--data", data, "--http",
          "127.0.0.1:0", "--token-file", tok, "--port-file", pf, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 300 && *port == 0; i++) {
    usleep(100 * 1000);
    char line[256];
    FILE *p = fopen(pf, "r");
    while (p && fgets(line, sizeof line, p))
      if (sscanf(line, "http %d", port) == 1)
        break;
    if (p)
      fclose(p);
  }
  if (!*port)
    bench_die("lark-gateway", "no port file (see lark-gateway.log)");
  return pid;
}

static int
dial(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
    bench_die("connect", strerror(errno));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void
send_all(int fd, const char *req) {
  size_t len = strlen(req), off = 0;
  while (off < len) {
    ssize_t n = write(fd, req + off, len - off);
    if (n <= 0)
      bench_die("request", strerror(errno));
    off += (size_t)n;
  }
}

/* GET /readyz until 200, for up to 60 s: the view caught up. */
static void
wait_ready(int port) {
  for (int i = 0; i < 600; i++) {
    int fd = dial(port);
    char buf[256] = "";
    send_all(fd, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Connection: close\r\n\r\n");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 12 && !strncmp(buf + 9, "200", 3))
      return;
    usleep(100 * 1000);
  }
  bench_die("lark-gateway", "not ready within 60 s");
}

/* One watch connection: the response undone as it comes (headers, then
 * chunks), its JSON lines taken one by one. */
enum { W_HEAD, W_SIZE, W_DATA, W_CRLF, W_RAW };
typedef struct watcher {
  int fd, state, chunked;
  char head[8192];
  size_t hlen;
  char size[32];
  size_t slen;
  long left; /* of the chunk */
  char line[1 << 16];
  size_t llen;
} watcher;

/* "resourceVersion":"N" of a change line (a BOOKMARK holds one too, of a
 * change already given: it is not a change of this phase then). */
static void
take_line(bench *b, watcher *w, double now) {
  static const char key[] = "\"resourceVersion\":\"";
  w->line[w->llen < sizeof w->line ? w->llen : sizeof w->line - 1] = 0;
  const char *p = strstr(w->line, key);
  if (p && strncmp(w->line, "{\"type\":\"BOOKMARK\"", 18)) {
    uint64_t seq = strtoull(p + sizeof key - 1, NULL, 10);
    if (seq >= b->first_seq)
      note_lag(b, (long)(seq - b->first_seq), now);
  }
  w->llen = 0;
}

static void
body_bytes(bench *b, watcher *w, const char *p, size_t n, double now) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\n')
      take_line(b, w, now);
    else if (w->llen < sizeof w->line - 1)
      w->line[w->llen++] = p[i];
  }
}

static void
headers_done(watcher *w) {
  w->head[w->hlen] = 0;
  if (strncmp(w->head, "HTTP/1.1 200", 12))
    bench_die("watch", w->head);
  w->chunked = strcasestr(w->head, "transfer-encoding: chunked") != NULL;
  w->state = w->chunked ? W_SIZE : W_RAW;
}

/* What one read brought. */
static void
feed(bench *b, watcher *w, const char *p, size_t n, double now) {
  while (n) {
    switch (w->state) {
    case W_HEAD:
      if (w->hlen < sizeof w->head - 1)
        w->head[w->hlen++] = *p;
      p++, n--;
      if (w->hlen >= 4 && !memcmp(w->head + w->hlen - 4, "\r\n\r\n", 4))
        headers_done(w);
      break;
    case W_SIZE:
      if (*p == '\n') {
        w->size[w->slen] = 0;
        w->left = strtol(w->size, NULL, 16);
        w->slen = 0;
        w->state = w->left ? W_DATA : W_HEAD; /* 0: the stream ended */
      } else if (w->slen < sizeof w->size - 1) {
        w->size[w->slen++] = *p;
      }
      p++, n--;
      break;
    case W_DATA: {
      size_t k = n < (size_t)w->left ? n : (size_t)w->left;
      body_bytes(b, w, p, k, now);
      p += k, n -= k, w->left -= (long)k;
      if (!w->left)
        w->state = W_CRLF, w->slen = 0;
      break;
    }
    case W_CRLF:
      if (*p == '\n')
        w->state = W_SIZE;
      p++, n--;
      break;
    default: /* W_RAW: no chunks, the body as it comes */
      body_bytes(b, w, p, n, now);
      n = 0;
    }
  }
}

typedef struct reader {
  bench *b;
  watcher *ws;
  int ep;
  atomic_int stop;
  pthread_t th;
} reader;

static void *
read_loop(void *ud) {
  reader *r = ud;
  static char buf[1 << 16];
  struct epoll_event evs[64];
  while (!atomic_load(&r->stop)) {
    int n = epoll_wait(r->ep, evs, 64, 100);
    for (int i = 0; i < n; i++) {
      watcher *w = evs[i].data.ptr;
      ssize_t got = read(w->fd, buf, sizeof buf);
      if (got > 0)
        feed(r->b, w, buf, (size_t)got, bench_now_s());
      else if (got == 0 || errno != EAGAIN)
        epoll_ctl(r->ep, EPOLL_CTL_DEL, w->fd, NULL);
    }
  }
  return NULL;
}

/* W watches of pods from the log's current end, then the churn. */
static void
through_gateway(bench *b, double *p99) {
  int port = 0;
  pid_t gw = start_gateway(b, &port);
  wait_ready(port);
  phase_start(b);
  reader r = {.b = b, .ep = epoll_create1(0)};
  r.ws = calloc((size_t)b->watchers, sizeof *r.ws);
  if (!r.ws || r.ep < 0)
    bench_die("watchers", "out of memory");
  char req[512];
  snprintf(req, sizeof req,
           "GET /api/v1/rlinf.io/v1alpha1/pods?watch=1&resourceVersion=%llu "
           "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer " TOKEN
           "\r\n\r\n",
           (unsigned long long)(b->first_seq - 1), port);
  for (int i = 0; i < b->watchers; i++) {
    watcher *w = &r.ws[i];
    w->fd = dial(port);
    send_all(w->fd, req);
    fcntl(w->fd, F_SETFL, O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    epoll_ctl(r.ep, EPOLL_CTL_ADD, w->fd, &ev);
  }
  if (pthread_create(&r.th, NULL, read_loop, &r))
    bench_die("reader", "no thread");
  usleep(500 * 1000);
  churn(b);
  wait_received(b);
  report(b, "lark-gateway, W HTTP watchers", p99);
  atomic_store(&r.stop, 1);
  pthread_join(r.th, NULL);
  for (int i = 0; i < b->watchers; i++)
    close(r.ws[i].fd);
  close(r.ep);
  free(r.ws);
  bench_stop_service(gw, "lark-gateway");
}

int
main(int argc, char **argv) {
  int pods = 10000, rate = 1000, seconds = 10, watchers = 200;
  const bench_opt opts[] = {{"--pods", .i = &pods},
                            {"--rate", .i = &rate},
                            {"--seconds", .i = &seconds},
                            {"--watchers", .i = &watchers},
                            {NULL}};
  if (bench_opts(argc, argv, opts) || pods < 100 || rate <= 0 || seconds <= 0 ||
      watchers <= 0)
    bench_die("usage", "bench_gateway_watch [--pods P] [--rate R] "
                       "[--seconds S] [--watchers W]");
  signal(SIGPIPE, SIG_IGN);
  bench b = {.argv0 = argv[0],
             .npods = pods / 100 * 100,
             .rate = rate,
             .seconds = seconds,
             .watchers = watchers};
  b.nchanges_max = (long)rate * seconds;
  b.lags_cap = b.nchanges_max * watchers;
  b.stamp = calloc((size_t)b.nchanges_max, sizeof *b.stamp);
  b.lags = calloc((size_t)b.lags_cap, sizeof *b.lags);
  b.pods = calloc((size_t)b.npods, sizeof *b.pods);
  if (!b.stamp || !b.lags || !b.pods)
    bench_die("memory", "out of memory");
  printf("bench_gateway_watch: %ld pods, %d changes/s for %d s, %d "
         "receivers\n",
         b.npods, rate, seconds, watchers);
  fflush(stdout);
  lt_tmpdir(b.dir, sizeof b.dir, "bench-gwwatch");
  bench_natsd_start(&b.srv, b.dir, 0, NULL);
  if (lt_connect(&b.srv, &b.c) || lt_streams(b.c, 120000))
    bench_die("broker", bus_last_error());
  place_pods(&b);
  double base = 0, gw = 0;
  /* the gateway first: each pod's first change (see the top) */
  through_gateway(&b, &gw);
  baseline(&b, &base);
  printf("  p99 lag %.1f ms through lark-gateway, %.1f ms raw: %.1fx "
         "(target <= 100 ms)\n",
         gw, base, base > 0 ? gw / base : 0);
  bus_conn_close(b.c);
  lt_natsd_stop(&b.srv);
  lt_rmtree(b.dir);
  free(b.stamp);
  free(b.lags);
  free(b.pods);
  return 0;
}
