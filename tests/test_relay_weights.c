/*
 * test_relay_weights.c - weights channels across clusters, as root, on
 * the pod network's two-cluster topology (support/relaynet.c): the real
 * hub and both `lark-relay node`s, each taking weights requests on its
 * node's address (--weights-listen), the hub following lark-engine's
 * events on a real nats-server.
 *
 *   core (this test: nats-server, hub, the fetchers' side)
 *    |- n1 (cluster c1): relay 1, weights requests on 10.99.1.2
 *    '- n2 (cluster c2): relay 2, and the weights server at 10.99.2.2:16000
 *
 * The weights server is a stand-in echo server in n2's namespace (the
 * relays only splice; the TLS between two lark-edge nodes is theirs). The
 * Job j1 runs on n1 (c1), n2 and n3 (c2); n2's weights server is
 * 10.99.2.2:16000 (weights.published). A permitted request from n1 to n2
 * carries 1 MiB both ways intact; every other request is refused, with
 * why in the hub's log, the fetcher's connection closed, and nothing
 * reaching the server.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "bus.h"
#include "podnet.h"
#include "relayc.h"
#include "relaynet.h"
#include "root.h"

#define SERVER "10.99.2.2:16000"
#define SERVER_PORT 16000
#define BIG (1 << 20)

static relaynet rn;
static int server_fd = -1;
static atomic_int server_conns;

/* ------------------------------------------------------------ events */

static void
append(const char *job, const char *type, msgpack_sbuffer *sb) {
  char subject[BUS_SUBJECT_MAX], id[33];
  snprintf(subject, sizeof subject, "lark.ev.engine.%s", job);
  bus_event_new_id(id);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .type = type,
                  .id = id,
                  .ts = 1,
                  .actor = "lark-engine",
                  .cause = "",
                  .data_mp = sb->data,
                  .data_mp_len = sb->size};
  cr_assert_eq(
      bus_append(rn.conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0,
      "%s", bus_last_error());
  msgpack_sbuffer_destroy(sb);
}

/* engine.nodes of job: "node=cluster" words. */
static void
nodes(const char *job, int n, const char *const *spec) {
  bus_engine_node v[8];
  char names[8][32], clusters[8][32];
  cr_assert(n <= 8);
  for (int i = 0; i < n; i++) {
    cr_assert_eq(sscanf(spec[i], "%31[^=]=%31s", names[i], clusters[i]), 2);
    v[i] = (bus_engine_node){.node = bus_str_of(names[i]),
                             .has_cluster = 1,
                             .cluster = bus_str_of(clusters[i])};
  }
  bus_ev_engine_nodes d = {.job = bus_str_of(job),
                           .nodes = {.v = v, .n = (uint32_t)n}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_nodes_pack(&sb, &d), 0, "%s", bus_last_error());
  append(job, "engine.nodes", &sb);
}

static void
published(const char *job, const char *node, const char *addr) {
  char sha[65];
  memset(sha, 'a', 64);
  sha[64] = 0;
  bus_ev_weights_published d = {.job = bus_str_of(job),
                                .version = 1,
                                .size = BIG,
                                .sha256 = bus_str_of(sha),
                                .pod = bus_str_of("j1-learner-0"),
                                .node = bus_str_of(node),
                                .address = bus_str_of(addr)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_weights_published_pack(&sb, &d), 0, "%s", bus_last_error());
  append(job, "weights.published", &sb);
}

/* ----------------------------------------------------------- fetchers */

/* A connection to relay n's weights port with line sent, or -1. */
static int
dial_relay(int n, const char *line) {
  char ip[32];
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons(RELAYNET_WEIGHTS_PORT)};
  snprintf(ip, sizeof ip, "10.99.%d.2", n);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
      write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

typedef struct sender {
  int fd;
  const unsigned char *p;
  size_t n;
} sender;

static void *
send_all(void *arg) {
  sender *s = arg;
  for (size_t at = 0; at < s->n;) {
    ssize_t w = write(s->fd, s->p + at, s->n - at);
    if (w <= 0)
      break;
    at += (size_t)w;
  }
  shutdown(s->fd, SHUT_WR);
  return NULL;
}

/* Read fd until EOF, an error or 10 s of silence; bytes read. */
static size_t
read_all(int fd, unsigned char *out, size_t cap) {
  size_t got = 0;
  for (;;) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 10000) != 1)
      break;
    ssize_t r = read(fd, out + got, cap - got);
    if (r <= 0)
      break;
    got += (size_t)r;
    if (got == cap)
      break;
  }
  return got;
}

/* Send line and n bytes through relay `relay`; 1 when the same n bytes
 * came back. */
static int
round_trip(int relay, const char *line, const unsigned char *data, size_t n) {
  int fd = dial_relay(relay, line);
  if (fd < 0)
    return 0;
  unsigned char *back = malloc(n + 1);
  sender s = {.fd = fd, .p = data, .n = n};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, send_all, &s), 0);
  size_t got = read_all(fd, back, n + 1);
  pthread_join(t, NULL);
  close(fd);
  int same = got == n && !memcmp(back, data, n);
  free(back);
  return same;
}

/* The line is refused: the connection closes with nothing back. */
static int
closed_unanswered(int relay, const char *line) {
  unsigned char buf[64];
  int fd = dial_relay(relay, line);
  if (fd < 0)
    return 1; /* refused before the line was sent */
  size_t got = read_all(fd, buf, sizeof buf);
  close(fd);
  return got == 0;
}

/* Whether a small round trip works within seconds (each try's wait is
 * bounded by read_all). */
static int
allowed_within(int relay, const char *line, int seconds) {
  static const unsigned char hello[] = "hello weights";
  int64_t end = bus_mono_ms() + seconds * 1000;
  while (bus_mono_ms() < end) {
    if (round_trip(relay, line, hello, sizeof hello))
      return 1;
    relaynet_sleep_ms(250);
  }
  return 0;
}

/* ---------------------------------------------------------------- fixture */

static void
cleanup(void) {
  if (server_fd >= 0)
    close(server_fd); /* its thread ends with the process */
  server_fd = -1;
  relaynet_cleanup(&rn);
}

static void
setup(void) {
  atexit(cleanup);
  lt_need_root("network namespaces, nftables");
  cr_assert_eq(relaynet_start(&rn, "relay-weights"), 0, "%s", rn.err);
  server_fd = podnet_listen(rn.node_ns[2], "10.99.2.2", SERVER_PORT, NULL);
  cr_assert_geq(server_fd, 0, "%s", bus_last_error());
  cr_assert_eq(lt_echo_start(server_fd, &server_conns), 0);
  for (int n = 1; n <= 2; n++)
    cr_assert(
        relaynet_log_says(&rn, rn.relay_log[n], "weights requests on", 10),
        "relay %d takes no weights requests", n);
  const char *const j1[] = {"n1=c1", "n2=c2", "n3=c2"};
  nodes("j1", 3, j1);
  published("j1", "n2", SERVER);
  cr_assert(allowed_within(1, "WEIGHTS j1 n1 n2 " SERVER "\n", 15),
            "the permitted channel never opened (see %s and %s)", rn.hub_log,
            rn.relay_log[1]);
}

static void
teardown(void) {
  for (int n = 1; n <= 2; n++)
    if (rn.relay_pid[n] > 0)
      relaynet_stop_relay(&rn, n);
  if (rn.hub_pid > 0)
    relaynet_stop_hub(&rn);
  cleanup();
}

TestSuite(relay_weights, .init = setup, .fini = teardown, .timeout = 180);

static void
refused(int relay, const char *line, const char *why) {
  int before = atomic_load(&server_conns);
  cr_expect(closed_unanswered(relay, line), "%s was answered", line);
  cr_expect(relaynet_log_says(&rn, rn.hub_log, why, 10),
            "%s: the hub's log "
            "lacks \"%s\"",
            line, why);
  cr_expect_eq(atomic_load(&server_conns), before, "%s reached the server",
               line);
}

/* ----------------------------------------------------------------- tests */

Test(relay_weights, a_permitted_channel_carries_bytes_both_ways_intact) {
  unsigned char *data = malloc(BIG);
  for (size_t i = 0; i < BIG; i++)
    data[i] = (unsigned char)(i * 2654435761u >> 13);
  int before = atomic_load(&server_conns);
  cr_expect(round_trip(1, "WEIGHTS j1 n1 n2 " SERVER "\n", data, BIG),
            "1 MiB through the relays came back different");
  cr_expect_eq(atomic_load(&server_conns), before + 1);
  cr_expect(relaynet_log_says(
      &rn, rn.hub_log, "job j1 n1 (c1) -> n2 at " SERVER " via relay c2", 5));
  cr_expect(relaynet_log_says(
      &rn, rn.relay_log[2],
      "inbound weights job j1 n1 -> n2 at " SERVER ": delivered", 5));
  free(data);
}

Test(relay_weights, requests_outside_the_job_rule_are_refused) {
  refused(1, "WEIGHTS j1 n3 n2 " SERVER "\n",
          "node n3 is in cluster c2, the relay in c1");
  refused(1, "WEIGHTS j1 n1 n9 " SERVER "\n", "node n9 hosts no pod of job j1");
  refused(1, "WEIGHTS j1 n9 n2 " SERVER "\n", "node n9 hosts no pod of job j1");
  refused(1, "WEIGHTS j1 n1 n2 10.99.2.2:16001\n",
          "job j1 gave no address 10.99.2.2:16001 for node n2");
  refused(1, "WEIGHTS j1 n1 n3 " SERVER "\n",
          "job j1 gave no address " SERVER " for node n3");
  refused(1, "WEIGHTS j9 n1 n2 " SERVER "\n",
          "job j9 has no nodes (unknown job)");
}

Test(relay_weights, malformed_requests_are_refused_by_the_relay) {
  const char *bad[] = {"HELLO\n", "WEIGHTS j1 n1 n2\n",
                       "WEIGHTS j1 n1 n2 example.com:443\n",
                       "WEIGHTS J1 n1 n2 " SERVER "\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_expect(closed_unanswered(1, bad[i]), "%s was answered", bad[i]);
  cr_expect(relaynet_log_says(&rn, rn.relay_log[1],
                              "address is not a numeric host:port", 5));
  cr_expect(relaynet_log_says(&rn, rn.relay_log[1],
                              "job and nodes must be names", 5));
}

Test(relay_weights, the_hub_follows_engine_nodes_live) {
  const char *line = "WEIGHTS j1 n4 n2 " SERVER "\n";
  refused(1, line, "node n4 hosts no pod of job j1");
  const char *const more[] = {"n1=c1", "n2=c2", "n3=c2", "n4=c1"};
  nodes("j1", 4, more);
  cr_expect(allowed_within(1, line, 5), "n4 joined the Job but is refused");
  /* and a node that leaves is refused again */
  const char *const fewer[] = {"n1=c1", "n2=c2", "n3=c2"};
  nodes("j1", 3, fewer);
  int gone = 0;
  for (int i = 0; i < 20 && !gone; i++) {
    gone = closed_unanswered(1, line);
    if (!gone)
      relaynet_sleep_ms(250);
  }
  cr_expect(gone, "n4 left the Job but is still let through");
}

/* ------------------------------------------------------------ hostile */

/* A libssh session to the hub with dir/name and its certificate. */
static ssh_session
ssh_to_hub(const char *name) {
  ssh_session s = lt_ssh_to_hub("127.0.0.1", rn.hub_port, rn.dir, name);
  cr_assert(s, "%s did not authenticate with the hub", name);
  return s;
}

static int
opens(ssh_session s, const char *dest) {
  ssh_channel ch = ssh_channel_new(s);
  int rc = ssh_channel_open_forward(ch, dest, SERVER_PORT, "127.0.0.1", 1);
  if (rc == SSH_OK)
    ssh_channel_close(ch);
  ssh_channel_free(ch);
  return rc == SSH_OK;
}

Test(relay_weights,
     a_relay_of_another_cluster_cannot_claim_a_node_of_this_one) {
  /* valid credentials, signed by the platform's CA, for cluster c2 */
  cr_assert_eq(
      relaynet_sh(&rn,
                  "cd %s && ssh-keygen -q -t ed25519 -N '' -f evil && "
                  "ssh-keygen -q -s ca -I 'evil role=domain domain=d1' "
                  "-n domain:d1 -z 900 -V -1m:+1h "
                  "-O extension:cluster@larkbus=c2 evil.pub",
                  rn.dir),
      0, "%s", rn.errout);
  ssh_session s = ssh_to_hub("evil");
  int before = atomic_load(&server_conns);
  cr_expect(!opens(s, "lark-weights@larkbus j1 n1 n2 " SERVER),
            "a c2 relay opened a channel as n1 of c1");
  cr_expect(relaynet_log_says(&rn, rn.hub_log,
                              "node n1 is in cluster c1, the relay in c2", 10));
  cr_expect_eq(atomic_load(&server_conns), before);
  /* the same session, asking for a node of its own cluster, is let by */
  cr_expect(opens(s, "lark-weights@larkbus j1 n3 n2 " SERVER));
  ssh_disconnect(s);
  ssh_free(s);
}
