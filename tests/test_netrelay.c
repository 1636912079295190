/*
 * test_netrelay.c - the pod network end to end, as root, in network
 * namespaces the test makes: two clusters, each one node namespace with
 * two pod namespaces, a NATS server and the relay hub, and a
 * `lark-relay node` in each node namespace.
 *
 *   core (this test's own namespace: nats-server, lark-relay hub)
 *    |- 10.99.1.0/30 - n1 (cluster c1): pods a1, a2 (domain d1)
 *    '- 10.99.2.0/30 - n2 (cluster c2): pods b1 (d1), b2 (d2)
 *
 * Each test first moves itself into a namespace it made ("core"), so
 * every address, route and veth lives in namespaces of its own, none has
 * a route out of the machine, and tests run side by side. The topology
 * (namespaces, broker, route rows, certificates, hub and relays) is
 * support/relaynet.c's, shared with bench/relay.c. Pods run unmodified
 * clients (socat under `ip netns exec`); the servers in the pods are
 * threads of this test holding sockets made inside the pods'
 * namespaces, counting what reaches them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus.h"
#include "podnet.h"
#include "relaynet.h"
#include "root.h"

#define SERVICE_PORT 8080
#define BIG_BYTES (4 * 1024 * 1024)

enum { A1 = RN_A1, A2 = RN_A2, B1 = RN_B1, B2 = RN_B2, NPODS = RN_NPODS };

/* What each pod's server saw. */
typedef struct pod_srv {
  int lfd;
  atomic_int conns; /* connections its server accepted */
  atomic_long bytes;
} pod_srv;

static relaynet rn;
static rn_pod *pods = rn.pods;
static pod_srv srv[NPODS];
static const char *dir = rn.dir;
static const char *err = rn.errout;

/* ------------------------------------------------------- pod servers */

typedef struct conn_arg {
  pod_srv *p;
  int fd;
} conn_arg;

static void *
serve_conn(void *arg) {
  conn_arg *c = arg;
  char buf[65536];
  ssize_t n;
  while ((n = read(c->fd, buf, sizeof buf)) > 0) {
    atomic_fetch_add(&c->p->bytes, n);
    if (write(c->fd, buf, (size_t)n) != n)
      break;
  }
  close(c->fd);
  free(c);
  return NULL;
}

/* Echo everything back, counting connections and bytes. */
static void *
serve_pod(void *arg) {
  pod_srv *p = arg;
  for (;;) {
    struct pollfd pf = {.fd = p->lfd, .events = POLLIN};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR)
      return NULL;
    int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    atomic_fetch_add(&p->conns, 1);
    conn_arg *c = malloc(sizeof *c);
    pthread_t t;
    c->p = p;
    c->fd = fd;
    if (pthread_create(&t, NULL, serve_conn, c) == 0)
      pthread_detach(t);
  }
}

/* The echo server inside pod i's namespace. */
static void
serve(int i) {
  pod_srv *p = &srv[i];
  p->lfd = podnet_listen(pods[i].ns, "0.0.0.0", SERVICE_PORT, NULL);
  cr_assert_geq(p->lfd, 0, "%s", bus_last_error());
  atomic_store(&p->conns, 0);
  atomic_store(&p->bytes, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, serve_pod, p), 0);
  pthread_detach(t);
}

/* ------------------------------------------------------------ processes */

#define sh(...) relaynet_sh(&rn, __VA_ARGS__)

static void
start_hub(int port) {
  cr_assert_eq(relaynet_start_hub(&rn, port), 0, "%s", rn.err);
}

static void
stop_hub(void) {
  int st = relaynet_stop_hub(&rn);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hub exit status %d", st);
}

static void
start_relay(int n) {
  cr_assert_eq(relaynet_start_relay(&rn, n), 0, "%s", rn.err);
}

static void
stop_relay(int n) {
  int st = relaynet_stop_relay(&rn, n);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "relay %d exit status %d", n,
            st);
}

static int
log_says(const char *file, const char *what, int seconds) {
  return relaynet_log_says(&rn, file, what, seconds);
}

/* ---------------------------------------------------------------- fixture */

/* Everything setup made, whatever point it reached; run by teardown
 * and at exit (a failed setup skips teardown). */
static void
cleanup(void) {
  for (int i = 0; i < NPODS; i++) {
    if (srv[i].lfd >= 0)
      close(srv[i].lfd); /* its server thread ends with the process */
    srv[i].lfd = -1;
  }
  relaynet_cleanup(&rn);
}

static void
setup(void) {
  for (int i = 0; i < NPODS; i++)
    srv[i].lfd = -1;
  atexit(cleanup);
  lt_need_root("network namespaces, nftables");
  cr_assert_eq(relaynet_start(&rn, "netrelay"), 0, "test_netrelay: %s", rn.err);
  for (int i = 0; i < NPODS; i++)
    serve(i);
  cr_assert_eq(sh("cd %s && head -c %d /dev/urandom > big && "
                  "echo hello > small",
                  dir, BIG_BYTES),
               0, "%s", err);
}

static void
teardown(void) {
  for (int n = 1; n <= 2; n++)
    if (rn.relay_pid[n] > 0)
      stop_relay(n); /* a clean stop exits 0 */
  if (rn.hub_pid > 0)
    stop_hub();
  cleanup();
}

TestSuite(netrelay, .init = setup, .fini = teardown, .timeout = 240);

/* -------------------------------------------------------------- clients */

/* From pod `from`, an unmodified client sends file `in` to vip:port and
 * writes what comes back to dir/<tag>.out; its exit code. */
static int
client(int from, const char *vip, const char *in, const char *tag) {
  return sh("cd %s && timeout 60 ip netns exec %s socat -t 30 -T 30 - "
            "TCP:%s:%d,connect-timeout=3 < %s > %s.out",
            dir, pods[from].ns, vip, SERVICE_PORT, in, tag);
}

static int
same(const char *in, const char *tag) {
  return sh("cd %s && cmp -s %s %s.out", dir, in, tag) == 0;
}

/* Retry a small round trip for up to seconds: new connections work. */
static int
works_within(int from, int to, int seconds) {
  for (int i = 0; i < seconds * 4; i++) {
    if (client(from, pods[to].vip, "small", "retry") == 0 &&
        same("small", "retry"))
      return 1;
    relaynet_sleep_ms(250);
  }
  return 0;
}

/* ----------------------------------------------------------------- tests */

Test(netrelay, across_clusters_through_the_hub) {
  cr_assert_eq(client(A1, pods[B1].vip, "big", "ab"), 0, "%s", err);
  cr_expect(same("big", "ab"), "bytes differ after the round trip");
  cr_expect_eq(atomic_load(&srv[B1].bytes), BIG_BYTES);
  cr_expect(log_says(rn.relay_log[1], "via hub", 5));
  cr_expect(log_says(rn.relay_log[2], "delivered", 5));
  /* and back the other way */
  cr_assert_eq(client(B1, pods[A1].vip, "big", "ba"), 0, "%s", err);
  cr_expect(same("big", "ba"));
  cr_expect_eq(atomic_load(&srv[A1].bytes), BIG_BYTES);
}

Test(netrelay, same_cluster_without_the_hub) {
  stop_hub();
  cr_assert_eq(client(A1, pods[A2].vip, "big", "aa"), 0, "%s", err);
  cr_expect(same("big", "aa"));
  cr_expect_eq(atomic_load(&srv[A2].conns), 1);
  cr_expect(log_says(rn.relay_log[1], "local to pod", 5));
}

Test(netrelay, refused_with_nothing_delivered) {
  /* an address of the Domain's prefix that no pod holds: reset at once */
  /* (socat may exit 0 when the reset comes after its input's EOF: what
   * counts is that nothing arrives anywhere) */
  client(A1, "10.2.0.99", "small", "unknown");
  cr_expect(log_says(rn.relay_log[1], "no route in domain d1", 5));
  /* a pod of another Domain, and a target outside the Domain */
  client(A1, pods[B2].vip, "small", "otherdom");
  client(B2, pods[B1].vip, "small", "outside");
  for (int i = 0; i < NPODS; i++)
    cr_expect_eq(atomic_load(&srv[i].conns), 0, "pod %s got a connection",
                 pods[i].tag);
  cr_expect(sh("cd %s && test ! -s unknown.out && test ! -s otherdom.out && "
               "test ! -s outside.out",
               dir) == 0);
}

Test(netrelay, relay_and_hub_restarts) {
  cr_assert(works_within(A1, B1, 10));
  stop_relay(2);
  client(A1, pods[B1].vip, "small", "down"); /* reset, maybe after EOF */
  cr_expect(sh("test ! -s %s/down.out", dir) == 0, "bytes came back");
  start_relay(2);
  cr_expect(works_within(A1, B1, 15), "no connection after the relay restart");
  int port = rn.hub_port;
  stop_hub();
  start_hub(port);
  cr_expect(works_within(A1, B1, 15), "no connection after the hub restart");
  cr_expect(works_within(B1, A1, 5));
}
