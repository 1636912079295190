/*
 * bench/relay.c - the pod network's throughput and connection set-up
 * time through the relay hub, as root, in network namespaces it makes.
 *
 * Builds the two-cluster topology of tests/support/relaynet.c (a core
 * namespace with nats-server and `lark-relay hub`, node namespaces n1
 * and n2 with `lark-relay node`, pods a1 in c1 and b1 in c2), then from
 * a thread inside pod a1's namespace to a sink thread inside pod b1's:
 *
 *   1. one long transfer of B bytes to b1's virtual address (captured in
 *      a1, an SSH channel n1 -> hub -> n2, delivered to b1's real
 *      address); the sink checks every byte against the pattern sent and
 *      replies with the count once it has read EOF. Gbit/s over the time
 *      from connect to that reply.
 *   2. N connections one after another, each connect + a 1-byte request
 *      + the sink's 1-byte reply: p50/p99 in ms.
 *
 * Beside each, in the same run, the baseline: the same between the same
 * two pod namespaces over a direct TCP path to b1's real address, made
 * for this only (forwarding on in the bench's own core and node
 * namespaces, routes to the pods' ranges in core). Nothing leaves the
 * namespaces the bench made. CPU seconds of the hub and relays during
 * the transfer through the hub are printed too, to show which process
 * bounds it.
 *
 *   bench_relay [--bytes B[K|M|G]] [--conns N]     (default 2G, 2000)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench.h"
#include "relaynet.h"

#define PORT 8080
#define PATTERN_LEN ((1 << 20) + 7) /* odd: a shifted stream shows */
#define CHUNK (256 * 1024)
#define IO_TIMEOUT_S 60

static relaynet rn;
static uint8_t *pattern; /* PATTERN_LEN bytes, then CHUNK more (wrap) */

/* ------------------------------------------------------------- helpers */

static void
cleanup(void) {
  relaynet_cleanup(&rn);
}

/* "16M", "2G", "4096" -> bytes; 0 when malformed. */
static uint64_t
parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  switch (*end) {
  case 'K':
  case 'k':
    v <<= 10, end++;
    break;
  case 'M':
  case 'm':
    v <<= 20, end++;
    break;
  case 'G':
  case 'g':
    v <<= 30, end++;
    break;
  }
  return *end || end == s ? 0 : (uint64_t)v;
}

/* Move the calling thread into namespace ns. */
static void
enter_ns(const char *ns) {
  int fd = podnet_ns_open(ns);
  if (fd < 0)
    bench_die(ns, bus_last_error());
  if (setns(fd, CLONE_NEWNET))
    bench_die("setns", strerror(errno));
  close(fd);
}

static void
timeouts(int fd) {
  struct timeval tv = {IO_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Send (out) or receive n bytes whole; -1 when the peer is gone. */
static int
io_all(int fd, void *p, size_t n, int out) {
  uint8_t *b = p;
  while (n) {
    ssize_t k = out ? send(fd, b, n, MSG_NOSIGNAL) : recv(fd, b, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

static int
write_all(int fd, const void *p, size_t n) {
  return io_all(fd, (void *)p, n, 1);
}

static int
read_all(int fd, void *p, size_t n) {
  return io_all(fd, p, n, 0);
}

/* ---------------------------------------------------------------- sink */

/*
 * In pod b1: each connection starts with one byte. 'P': reply one byte
 * and close. 'T': read to EOF checking every byte against the pattern,
 * then reply {count, bad} and close.
 */
typedef struct sink {
  int lfd;
  atomic_int stop;
} sink;

typedef struct tally {
  uint64_t count, bad;
} tally;

static void
sink_transfer(int fd) {
  static uint8_t buf[CHUNK];
  tally t = {0, 0};
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    size_t off = (size_t)(t.count % PATTERN_LEN);
    /* pattern has CHUNK bytes of wrap after PATTERN_LEN */
    if (memcmp(buf, pattern + off, (size_t)r))
      t.bad++;
    t.count += (uint64_t)r;
  }
  write_all(fd, &t, sizeof t);
}

static void *
sink_main(void *arg) {
  sink *s = arg;
  while (!atomic_load(&s->stop)) {
    struct pollfd pf = {.fd = s->lfd, .events = POLLIN};
    if (poll(&pf, 1, 200) <= 0)
      continue;
    int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    timeouts(fd);
    char op;
    if (read_all(fd, &op, 1) == 0) {
      if (op == 'P')
        write_all(fd, "p", 1);
      else if (op == 'T')
        sink_transfer(fd);
    }
    close(fd);
  }
  return NULL;
}

/* -------------------------------------------------------------- client */

/* What the thread in pod a1 is asked to do. */
typedef struct job {
  const char *ns;
  const char *ip; /* target */
  uint64_t bytes; /* > 0: one transfer */
  int conns;      /* > 0: connections one after another */
  int retry_s;    /* > 0: one ping, retried up to this many seconds */
  /* results */
  double seconds;  /* the transfer */
  double *setup_s; /* conns of them */
  tally t;
  char err[256];
} job;

static int
dial(job *j) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PORT)};
  inet_pton(AF_INET, j->ip, &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  timeouts(fd);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One connect + 'P' + reply; seconds, or -1. */
static double
ping(job *j) {
  double t0 = bench_now_s();
  int fd = dial(j);
  char c;
  if (fd < 0)
    return -1;
  int ok = write_all(fd, "P", 1) == 0 && read_all(fd, &c, 1) == 0 && c == 'p';
  double dt = bench_now_s() - t0;
  close(fd);
  return ok ? dt : -1;
}

static void
transfer(job *j) {
  double t0 = bench_now_s();
  int fd = dial(j);
  if (fd < 0 || write_all(fd, "T", 1)) {
    snprintf(j->err, sizeof j->err, "connect to %s: %s", j->ip,
             strerror(errno));
    if (fd >= 0)
      close(fd);
    return;
  }
  uint64_t sent = 0;
  while (sent < j->bytes) {
    size_t off = (size_t)(sent % PATTERN_LEN);
    size_t n = j->bytes - sent < CHUNK ? (size_t)(j->bytes - sent) : CHUNK;
    if (write_all(fd, pattern + off, n)) {
      snprintf(j->err, sizeof j->err, "send to %s after %llu bytes: %s", j->ip,
               (unsigned long long)sent, strerror(errno));
      close(fd);
      return;
    }
    sent += n;
  }
  shutdown(fd, SHUT_WR);
  if (read_all(fd, &j->t, sizeof j->t))
    snprintf(j->err, sizeof j->err, "no count back from %s: %s", j->ip,
             strerror(errno));
  j->seconds = bench_now_s() - t0;
  close(fd);
}

static void *
client_main(void *arg) {
  job *j = arg;
  enter_ns(j->ns);
  if (j->retry_s) {
    double until = bench_now_s() + j->retry_s;
    while (ping(j) < 0) {
      if (bench_now_s() > until) {
        snprintf(j->err, sizeof j->err, "%s does not answer", j->ip);
        break;
      }
      relaynet_sleep_ms(200);
    }
  }
  if (j->bytes)
    transfer(j);
  for (int i = 0; i < j->conns && !j->err[0]; i++)
    if ((j->setup_s[i] = ping(j)) < 0)
      snprintf(j->err, sizeof j->err, "connection %d to %s failed: %s", i,
               j->ip, strerror(errno));
  return NULL;
}

/* Run j on a thread inside pod a1's namespace; die on failure. */
static void
run(job *j) {
  pthread_t th;
  j->ns = rn.pods[RN_A1].ns;
  if (pthread_create(&th, NULL, client_main, j))
    bench_die("thread", strerror(errno));
  pthread_join(th, NULL);
  if (j->err[0])
    bench_die("client", j->err);
  if (j->bytes && (j->t.count != j->bytes || j->t.bad))
    bench_die("transfer", "bytes lost or changed on the way");
}

/* ------------------------------------------------------------- network */

/*
 * The baseline's path: a1 -> n1 -> core -> n2 -> b1 by real addresses.
 * Pods and nodes already have default routes towards core; core learns
 * the pods' ranges, and the three namespaces forward.
 */
static void
direct_path(void) {
  if (relaynet_sh(&rn,
                  "for ns in %s %s %s; do ip netns exec $ns sysctl -q -w "
                  "net.ipv4.ip_forward=1 || exit 1; done",
                  rn.core_ns, rn.node_ns[1], rn.node_ns[2]))
    bench_die("forwarding", rn.errout);
  if (podnet_route_add(NULL, "10.88.1.0/24", "ln1", "10.99.1.2") ||
      podnet_route_add(NULL, "10.88.2.0/24", "ln2", "10.99.2.2"))
    bench_die("route", bus_last_error());
}

static int
cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void
percentiles(double *v, int n, double *p50, double *p99) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *p50 = v[n / 2] * 1e3;
  int i = (int)((long)n * 99 / 100);
  *p99 = v[i < n ? i : n - 1] * 1e3;
}

/* A pseudo-random pattern the sink checks, CHUNK bytes longer than its
 * period so any chunk is one read. */
static void
make_pattern(void) {
  pattern = malloc(PATTERN_LEN + CHUNK);
  if (!pattern)
    bench_die("memory", strerror(ENOMEM));
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < PATTERN_LEN; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pattern[i] = (uint8_t)x;
  }
  memcpy(pattern + PATTERN_LEN, pattern, CHUNK);
}

/* The result lines: the transfers (direct, then through the hub with the
 * CPU the hub and relays took), and set-up times in ms (direct p50, p99,
 * through the hub p50, p99). */
static void
report(uint64_t bytes, int conns, const job *dt, const job *ht,
       const double *cpu0, const double *cpu1, const double *ms) {
  double dg = (double)bytes * 8 / dt->seconds / 1e9;
  double hg = (double)bytes * 8 / ht->seconds / 1e9;
  printf("bench_relay: one transfer of %llu MiB and %d connections, pod a1 "
         "(c1) -> pod b1 (c2)\n",
         (unsigned long long)(bytes >> 20), conns);
  printf("  direct TCP, same two pods : %7.2f Gbit/s (%.2f s)\n", dg,
         dt->seconds);
  printf("  through the hub, by vip   : %7.2f Gbit/s (%.2f s; %.2fx direct; "
         "target >= 1 Gbit/s)\n",
         hg, ht->seconds, hg / dg);
  printf("    CPU during it: hub %.0f%%, relay c1 %.0f%%, relay c2 %.0f%% "
         "(of one core)\n",
         100 * (cpu1[0] - cpu0[0]) / ht->seconds,
         100 * (cpu1[1] - cpu0[1]) / ht->seconds,
         100 * (cpu1[2] - cpu0[2]) / ht->seconds);
  printf("  set-up direct p50 / p99   : %7.3f / %.3f ms\n", ms[0], ms[1]);
  printf("  set-up via hub p50 / p99  : %7.3f / %.3f ms (target p50 <= 5 "
         "ms)\n",
         ms[2], ms[3]);
}

int
main(int argc, char **argv) {
  uint64_t bytes = 2ULL << 30;
  int conns = 2000;
  const char *size = NULL;
  const bench_opt opts[] = {
      {"--bytes", .s = &size}, {"--conns", .i = &conns}, {NULL}};
  int bad = bench_opts(argc, argv, opts) < 0;
  if (size)
    bytes = parse_size(size);
  if (bad || !bytes || conns <= 0 || conns > 1000000)
    bench_die("usage", "bench_relay [--bytes B[K|M|G]] [--conns N]");
  if (geteuid() != 0)
    bench_die("needs root",
              "it makes network namespaces, veths and nftables rules");
  if (!getenv("LARK_BIN_DIR")) {
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    setenv("LARK_BIN_DIR", dirname(self), 1);
  }
  make_pattern();
  double *setup_s = calloc((size_t)conns, sizeof *setup_s);
  if (!setup_s)
    bench_die("memory", strerror(ENOMEM));

  atexit(cleanup);
  if (relaynet_start(&rn, "bench-relay"))
    bench_die("topology", rn.err);
  direct_path();
  sink s = {.lfd = podnet_listen(rn.pods[RN_B1].ns, "0.0.0.0", PORT, NULL)};
  pthread_t sth;
  if (s.lfd < 0)
    bench_die("listen in b1", bus_last_error());
  if (pthread_create(&sth, NULL, sink_main, &s))
    bench_die("thread", strerror(errno));
  const char *real = rn.pods[RN_B1].real, *vip = rn.pods[RN_B1].vip;

  /* both paths answer before anything is timed */
  job warm = {.ip = real, .retry_s = 10};
  run(&warm);
  job warm2 = {.ip = vip, .retry_s = 20};
  run(&warm2);

  job dt = {.ip = real, .bytes = bytes};
  run(&dt);
  pid_t who[3] = {rn.hub_pid, rn.relay_pid[1], rn.relay_pid[2]};
  double cpu0[3], cpu1[3];
  for (int i = 0; i < 3; i++)
    cpu0[i] = bench_cpu_s(who[i]);
  job ht = {.ip = vip, .bytes = bytes};
  run(&ht);
  for (int i = 0; i < 3; i++)
    cpu1[i] = bench_cpu_s(who[i]);

  double dp50, dp99, hp50, hp99;
  job dc = {.ip = real, .conns = conns, .setup_s = setup_s};
  run(&dc);
  percentiles(setup_s, conns, &dp50, &dp99);
  job hc = {.ip = vip, .conns = conns, .setup_s = setup_s};
  run(&hc);
  percentiles(setup_s, conns, &hp50, &hp99);

  report(bytes, conns, &dt, &ht, cpu0, cpu1,
         (double[]){dp50, dp99, hp50, hp99});
  atomic_store(&s.stop, 1);
  pthread_join(sth, NULL);
  close(s.lfd);
  free(setup_s);
  free(pattern);
  return 0;
}
