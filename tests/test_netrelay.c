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
 * a route out of the machine, and tests run side by side. Route rows
 * are appended to LARK_ROUTES as lark-ipam writes them, for both
 * clusters' views; certificates come from ssh-keygen with a test CA.
 * Pods run unmodified clients (socat under `ip netns exec`); the servers
 * in the pods are threads of this test holding sockets made inside the
 * pods' namespaces, counting what reaches them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bus.h"
#include "natsd.h"
#include "podnet.h"
#include "proc.h"

#define SERVICE_PORT 8080
#define BIG_BYTES (4 * 1024 * 1024)

typedef struct pod {
  const char *tag;      /* a1, a2, b1, b2 */
  const char *domain;   /* d1, d2 */
  const char *vip;      /* virtual address */
  const char *cidr;     /* its Domain's prefix */
  int node;             /* 1 or 2 */
  const char *host_end; /* the node's end of its veth */
  const char *real;     /* its own address (localIP) */
  char name[64];        /* pod name, with the test's pid */
  char ns[PODNET_NS_MAX];
  int lfd;
  atomic_int conns; /* connections its server accepted */
  atomic_long bytes;
} pod;

#define POD(t, d, v, c, n, h, r)                                               \
  {                                                                            \
    .tag = t, .domain = d, .vip = v, .cidr = c, .node = n, .host_end = h,      \
    .real = r                                                                  \
  }
static pod pods[] = {
    POD("a1", "d1", "10.2.0.11", "10.2.0.0/24", 1, "10.88.1.1", "10.88.1.2"),
    POD("a2", "d1", "10.2.0.12", "10.2.0.0/24", 1, "10.88.1.5", "10.88.1.6"),
    POD("b1", "d1", "10.2.0.21", "10.2.0.0/24", 2, "10.88.2.1", "10.88.2.2"),
    POD("b2", "d2", "10.3.0.22", "10.3.0.0/24", 2, "10.88.2.5", "10.88.2.6"),
};
#define NPODS (int)(sizeof pods / sizeof pods[0])
enum { A1, A2, B1, B2 };

static char dir[256], core_ns[PODNET_NS_MAX], node_ns[3][PODNET_NS_MAX];
static char hub_log[512], relay_log[3][512];
static lt_natsd nats;
static bus_conn *conn;
static pid_t hub_pid, relay_pid[3];
static int hub_port;
static char out[1 << 14], err[1 << 14];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  return lt_run(argv, out, sizeof out, err, sizeof err);
}

static void
sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ------------------------------------------------------- pod servers */

typedef struct conn_arg {
  pod *p;
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
  pod *p = arg;
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

/* -------------------------------------------------------------- network */

static void
enter_core(void) {
  snprintf(core_ns, sizeof core_ns, "lkn-%d-core", (int)getpid());
  podnet_ns_delete(core_ns);
  cr_assert_eq(podnet_ns_create(core_ns), 0, "%s", bus_last_error());
  int fd = podnet_ns_open(core_ns);
  cr_assert_geq(fd, 0, "%s", bus_last_error());
  cr_assert_eq(setns(fd, CLONE_NEWNET), 0, "setns: %s", strerror(errno));
  close(fd);
}

static void
make_node(int i) {
  char host_if[PODNET_IFNAME_MAX], here[32], there[32];
  snprintf(node_ns[i], sizeof node_ns[i], "lkn-%d-n%d", (int)getpid(), i);
  snprintf(host_if, sizeof host_if, "ln%d", i);
  snprintf(here, sizeof here, "10.99.%d.1", i);
  snprintf(there, sizeof there, "10.99.%d.2", i);
  podnet_ns_delete(node_ns[i]);
  cr_assert_eq(podnet_ns_create(node_ns[i]), 0, "%s", bus_last_error());
  podnet_veth v = {.ns = node_ns[i],
                   .host_if = host_if,
                   .host_addr = here,
                   .pod_addr = there,
                   .plen = 30};
  cr_assert_eq(podnet_veth_add(&v), 0, "%s", bus_last_error());
}

static int
pod_veth(void *ud) {
  pod *p = ud;
  char host_if[PODNET_IFNAME_MAX];
  snprintf(host_if, sizeof host_if, "lp%s", p->tag);
  podnet_veth v = {.ns = p->ns,
                   .host_if = host_if,
                   .host_addr = p->host_end,
                   .pod_addr = p->real,
                   .plen = 30};
  return podnet_veth_add(&v);
}

/* A pod namespace joined to its node, and its echo server. */
static void
make_pod(pod *p) {
  snprintf(p->name, sizeof p->name, "%s-%d", p->tag, (int)getpid());
  podnet_ns_name(p->name, p->ns);
  podnet_ns_delete(p->ns);
  cr_assert_eq(podnet_ns_create(p->ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_in_ns(node_ns[p->node], pod_veth, p), 0, "%s",
               bus_last_error());
  p->lfd = podnet_listen(p->ns, "0.0.0.0", SERVICE_PORT, NULL);
  cr_assert_geq(p->lfd, 0, "%s", bus_last_error());
  atomic_store(&p->conns, 0);
  atomic_store(&p->bytes, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, serve_pod, p), 0);
  pthread_detach(t);
}

/* --------------------------------------------------------------- routes */

static void
kv(msgpack_packer *pk, const char *k, const char *v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
}

/* Row of pod p as cluster c's relay reads it, as lark-ipam writes it. */
static void
route_row(const pod *p, const char *cluster) {
  char subject[BUS_SUBJECT_MAX], id[33], pc[8], node[8];
  msgpack_sbuffer sb;
  msgpack_packer pk;
  snprintf(pc, sizeof pc, "c%d", p->node);
  snprintf(node, sizeof node, "n%d", p->node);
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 9);
  kv(&pk, "domain", p->domain);
  kv(&pk, "cidr", p->cidr);
  kv(&pk, "cluster", cluster);
  kv(&pk, "pod", p->name);
  kv(&pk, "ip", p->vip);
  kv(&pk, "realIP", p->real);
  kv(&pk, "node", node);
  kv(&pk, "podCluster", pc);
  kv(&pk, "via", strcmp(pc, cluster) ? "hub" : "local");
  snprintf(subject, sizeof subject, "lark.route.%s.%s.%s", p->domain, cluster,
           p->name);
  bus_event_new_id(id);
  bus_event ev = {.type = "route.set",
                  .id = id,
                  .ts = 1,
                  .actor = "ipam",
                  .cause = "",
                  .data_mp = sb.data,
                  .data_mp_len = sb.size};
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

/* d1 is in both clusters, d2 only in c2: each cluster sees every pod of
 * the Domains it has. */
static void
publish_routes(void) {
  for (int i = 0; i < NPODS; i++) {
    route_row(&pods[i], "c2");
    if (!strcmp(pods[i].domain, "d1"))
      route_row(&pods[i], "c1");
  }
}

/* -------------------------------------------------------- certificates */

/* certs<n>/<domain>.key and -cert.pub for cluster c<n>. */
static void
domain_cert(int n, const char *domain, int serial) {
  cr_assert_eq(sh("cd %s && mkdir -p certs%d && cd certs%d && "
                  "ssh-keygen -q -t ed25519 -N '' -f %s.key && "
                  "ssh-keygen -q -s ../ca -I 'relay-c%d role=domain "
                  "domain=%s' -n domain:%s -z %d -V -1m:+1h %s.key.pub && "
                  "mv %s.key-cert.pub %s-cert.pub",
                  dir, n, n, domain, n, domain, domain, serial, domain, domain,
                  domain),
               0, "%s", err);
}

/* ------------------------------------------------------------ processes */

static void
start_hub(int port) {
  char bin[512], ca[512], key[512], pf[512], listen[64];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(ca, sizeof ca, "%s/ca.pub", dir);
  snprintf(key, sizeof key, "%s/hostkey", dir);
  snprintf(pf, sizeof pf, "%s/hub.port", dir);
  snprintf(listen, sizeof listen, "0.0.0.0:%d", port);
  unlink(pf);
  char *argv[] = {bin,
                  (char *)"hub",
                  (char *)"--listen",
                  listen,
                  (char *)"--ca",
                  ca,
                  (char *)"--host-key",
                  key,
                  (char *)"--url",
                  nats.url,
                  (char *)"--port-file",
                  pf,
                  NULL};
  hub_pid = lt_spawn(argv, hub_log);
  cr_assert_gt(hub_pid, 0);
  hub_port = 0;
  for (int i = 0; i < 200 && !hub_port; i++) {
    FILE *f = fopen(pf, "r");
    if (f) {
      if (fscanf(f, "%d", &hub_port) != 1)
        hub_port = 0;
      fclose(f);
    }
    if (!hub_port)
      sleep_ms(50);
  }
  cr_assert_gt(hub_port, 0, "the hub did not start (see %s)", hub_log);
}

static void
stop_hub(void) {
  int st = lt_kill(hub_pid, SIGTERM);
  hub_pid = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hub exit status %d", st);
}

static void
start_relay(int n) {
  char bin[512], hub[64], key[512], certs[512], url[96], cl[8], nd[8];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(hub, sizeof hub, "10.99.%d.1:%d", n, hub_port);
  snprintf(key, sizeof key, "%s/hostkey.pub", dir);
  snprintf(certs, sizeof certs, "%s/certs%d", dir, n);
  snprintf(url, sizeof url, "nats://10.99.%d.1:%d", n, nats.port);
  snprintf(cl, sizeof cl, "c%d", n);
  snprintf(nd, sizeof nd, "n%d", n);
  char *argv[] = {(char *)"/usr/sbin/ip",
                  (char *)"netns",
                  (char *)"exec",
                  node_ns[n],
                  bin,
                  (char *)"node",
                  (char *)"--cluster",
                  cl,
                  (char *)"--node",
                  nd,
                  (char *)"--hub",
                  hub,
                  (char *)"--hub-key",
                  key,
                  (char *)"--certs",
                  certs,
                  (char *)"--url",
                  url,
                  NULL};
  relay_pid[n] = lt_spawn(argv, relay_log[n]);
  cr_assert_gt(relay_pid[n], 0);
}

static void
stop_relay(int n) {
  int st = lt_kill(relay_pid[n], SIGTERM);
  relay_pid[n] = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "relay %d exit status %d", n,
            st);
}

/* Wait (up to seconds) for file to contain what. */
static int
log_says(const char *file, const char *what, int seconds) {
  for (int i = 0; i < seconds * 10; i++) {
    if (sh("grep -F -q -- '%s' %s", what, file) == 0)
      return 1;
    sleep_ms(100);
  }
  return 0;
}

/* ---------------------------------------------------------------- fixture */

static void cleanup(void);

static void
setup(void) {
  cr_assert_eq(geteuid(), 0,
               "test_netrelay needs root (network namespaces, nftables): run "
               "it as root, as CI does");
  for (int i = 0; i < NPODS; i++)
    pods[i].lfd = -1;
  atexit(cleanup);
  enter_core();
  lt_tmpdir(dir, sizeof dir, "netrelay");
  snprintf(hub_log, sizeof hub_log, "%s/hub.log", dir);
  for (int n = 1; n <= 2; n++) {
    snprintf(relay_log[n], sizeof relay_log[n], "%s/relay%d.log", dir, n);
    make_node(n);
  }
  for (int i = 0; i < NPODS; i++)
    make_pod(&pods[i]);
  const char *extra[] = {"-a", "0.0.0.0", NULL};
  cr_assert_eq(lt_natsd_start(&nats, NULL, extra), 0);
  cr_assert_eq(lt_connect(&nats, &conn), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(conn, 1000), 0, "%s", bus_last_error());
  cr_assert_eq(sh("cd %s && ssh-keygen -q -t ed25519 -N '' -f ca && "
                  "ssh-keygen -q -t ed25519 -N '' -f hostkey && "
                  "head -c %d /dev/urandom > big && echo hello > small",
                  dir, BIG_BYTES),
               0, "%s", err);
  domain_cert(1, "d1", 101);
  domain_cert(2, "d1", 201);
  domain_cert(2, "d2", 202);
  publish_routes();
  start_hub(0);
  start_relay(1);
  start_relay(2);
  for (int n = 1; n <= 2; n++) {
    cr_assert(log_says(relay_log[n], "registered cluster", 20),
              "relay %d did not register with the hub", n);
  }
  cr_assert(log_says(relay_log[1], "capturing", 20));
  cr_assert(log_says(relay_log[2], "capturing", 20));
}

/* Everything setup made, whatever point it reached; run by teardown
 * and at exit (a failed setup skips teardown). */
static void
cleanup(void) {
  for (int n = 1; n <= 2; n++)
    if (relay_pid[n] > 0)
      lt_kill(relay_pid[n], SIGKILL);
  if (hub_pid > 0)
    lt_kill(hub_pid, SIGKILL);
  relay_pid[1] = relay_pid[2] = hub_pid = 0;
  bus_conn_close(conn);
  conn = NULL;
  if (nats.pid > 0)
    lt_natsd_stop(&nats);
  for (int i = 0; i < NPODS; i++) {
    if (pods[i].lfd >= 0)
      close(pods[i].lfd); /* its server thread ends with the process */
    pods[i].lfd = -1;
    if (pods[i].ns[0])
      podnet_ns_delete(pods[i].ns);
  }
  for (int n = 1; n <= 2; n++)
    if (node_ns[n][0])
      podnet_ns_delete(node_ns[n]);
  if (core_ns[0])
    podnet_ns_delete(core_ns);
  if (dir[0] && getenv("LARK_KEEP_TEST_DIR"))
    fprintf(stderr, "test_netrelay: kept %s\n", dir);
  else if (dir[0])
    lt_rmtree(dir);
  dir[0] = 0;
}

static void
teardown(void) {
  for (int n = 1; n <= 2; n++)
    if (relay_pid[n] > 0)
      stop_relay(n); /* a clean stop exits 0 */
  if (hub_pid > 0)
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
    sleep_ms(250);
  }
  return 0;
}

/* ----------------------------------------------------------------- tests */

Test(netrelay, across_clusters_through_the_hub) {
  cr_assert_eq(client(A1, pods[B1].vip, "big", "ab"), 0, "%s", err);
  cr_expect(same("big", "ab"), "bytes differ after the round trip");
  cr_expect_eq(atomic_load(&pods[B1].bytes), BIG_BYTES);
  cr_expect(log_says(relay_log[1], "via hub", 5));
  cr_expect(log_says(relay_log[2], "delivered", 5));
  /* and back the other way */
  cr_assert_eq(client(B1, pods[A1].vip, "big", "ba"), 0, "%s", err);
  cr_expect(same("big", "ba"));
  cr_expect_eq(atomic_load(&pods[A1].bytes), BIG_BYTES);
}

Test(netrelay, same_cluster_without_the_hub) {
  stop_hub();
  cr_assert_eq(client(A1, pods[A2].vip, "big", "aa"), 0, "%s", err);
  cr_expect(same("big", "aa"));
  cr_expect_eq(atomic_load(&pods[A2].conns), 1);
  cr_expect(log_says(relay_log[1], "local to pod", 5));
}

Test(netrelay, refused_with_nothing_delivered) {
  /* an address of the Domain's prefix that no pod holds: reset at once */
  /* (socat may exit 0 when the reset comes after its input's EOF: what
   * counts is that nothing arrives anywhere) */
  client(A1, "10.2.0.99", "small", "unknown");
  cr_expect(log_says(relay_log[1], "no route in domain d1", 5));
  /* a pod of another Domain, and a target outside the Domain */
  client(A1, pods[B2].vip, "small", "otherdom");
  client(B2, pods[B1].vip, "small", "outside");
  for (int i = 0; i < NPODS; i++)
    cr_expect_eq(atomic_load(&pods[i].conns), 0, "pod %s got a connection",
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
  int port = hub_port;
  stop_hub();
  start_hub(port);
  cr_expect(works_within(A1, B1, 15), "no connection after the hub restart");
  cr_expect(works_within(B1, A1, 5));
}
