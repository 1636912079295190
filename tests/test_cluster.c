/*
 * test_cluster.c - broker-config's 3-node cluster on loopback: an R3
 * LARK_EVENTS keeps every acknowledged event while one server is killed
 * in the middle of the appends (docs/design.md section 9), and a cluster
 * without its quorum answers "try again".
 *
 * Route ports are found by binding port 0 and closing; another process
 * may take one in between, so a cluster that fails to start is retried
 * with new ports.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy.h"
#include "events.h"
#include "natsd.h"
#include "ports.h"
#include "secure.h"
#include "wait.h"

enum { NSERVERS = 3, BEFORE = 300, DURING = 300 };

typedef struct cluster {
  char data[256];
  lt_natsd s[NSERVERS];
  char url[256];
  bus_conn *c;
  msgpack_sbuffer body;
} cluster;

static cluster *current; /* stopped by fini when an assertion fails */

static void
stop_current(void) {
  for (int i = 0; current && i < NSERVERS; i++)
    if (current->s[i].pid > 0)
      lt_natsd_stop(&current->s[i]);
}

static int
start_cluster(cluster *k) {
  int routes[NSERVERS];
  char pw[33], conf[NSERVERS][320], name[NSERVERS][16];
  lark_random_password(pw);
  for (int i = 0; i < NSERVERS; i++)
    routes[i] = lt_free_port();
  for (int i = 0; i < NSERVERS; i++) {
    lark_broker_opts o;
    lark_broker_opts_init(&o);
    snprintf(name[i], sizeof name[i], "lark-%d", i + 1);
    snprintf(conf[i], sizeof conf[i], "%s/%s.conf", k->data, name[i]);
    o.server_name = name[i];
    /* no store_dir: the helper gives each server its own with -sd */
    o.run_dir = k->data;
    o.cluster_port = routes[i];
    o.route_ports = routes;
    o.n_routes = NSERVERS;
    o.route_password = pw;
    cr_assert_eq(lark_render_conf("cluster", &o, conf[i]), 0, "%s",
                 lark_cfg_error());
  }
  size_t len = 0;
  for (int i = 0; i < NSERVERS; i++) {
    if (lt_natsd_start(&k->s[i], conf[i], NULL) < 0) {
      for (int j = 0; j < i; j++)
        lt_natsd_stop(&k->s[j]);
      return -1;
    }
    len += (size_t)snprintf(k->url + len, sizeof k->url - len, "%s%s",
                            i ? "," : "", k->s[i].url);
  }
  return 0;
}

static void
setup(cluster *k) {
  memset(k, 0, sizeof *k);
  current = k;
  lt_tmpdir(k->data, sizeof k->data, "cluster");
  cr_assert_eq(lark_creds_ensure(k->data, "admin", LARK_ROLE_ADMIN, NULL, NULL),
               0);
  cr_assert_eq(lt_render_accounts(k->data), 0, "%s", lark_cfg_error());
  int rc = -1;
  for (int t = 0; t < 3 && rc < 0; t++)
    rc = start_cluster(k);
  cr_assert_eq(rc, 0, "the cluster did not start");

  char creds[400];
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  lark_creds_path(k->data, "admin", creds, sizeof creds);
  o.url = k->url;
  o.creds = creds;
  o.js_wait_ms = 2000;
  cr_assert_eq(bus_conn_open(&k->c, &o), 0, "%s", bus_last_error());

  /* JetStream needs a meta leader before the streams can be made. */
  bus_streams_opts so;
  bus_streams_opts_init(&so);
  so.replicas = 3;
  so.dedupe_ns = 2000000000LL;
  int64_t end = lt_now_ms() + 30000;
  while ((rc = bus_streams_ensure(k->c, &so)) < 0 && lt_now_ms() < end)
    usleep(250000);
  cr_assert_eq(rc, 0, "streams at R3: %s", bus_last_error());

  lt_pack_text(&k->body, "r3");
}

static void
teardown(cluster *k) {
  bus_conn_close(k->c);
  for (int i = 0; i < NSERVERS; i++)
    lt_natsd_stop(&k->s[i]);
  current = NULL;
  lt_rmtree(k->data);
  msgpack_sbuffer_destroy(&k->body);
}

static void
event(cluster *k, bus_event *ev, char id[33]) {
  lt_sample_event(ev, id, "sample.created", &k->body);
}

static int
cmp_id(const void *a, const void *b) {
  return strcmp(a, b);
}

Test(cluster, r3_keeps_acked_events_when_a_server_dies, .timeout = 180,
     .fini = stop_current) {
  cluster k;
  setup(&k);
  static char acked[BEFORE + DURING][33];
  size_t nacked = 0, failed_sync = 0;
  bus_event ev;
  char subject[64];

  /* Async appends while all three run: every one must be acked. */
  for (int i = 0; i < BEFORE; i++) {
    event(&k, &ev, acked[nacked]);
    snprintf(subject, sizeof subject, "lark.ev.sample.a%d", i);
    cr_assert_eq(bus_append_async(k.c, subject, &ev, BUS_APPEND_NOCHECK), 0,
                 "%s", bus_last_error());
    nacked++;
  }
  uint64_t failed = 0;
  cr_assert_eq(bus_append_flush(k.c, 10000, &failed), 0, "%s (%llu)",
               bus_last_error(), (unsigned long long)failed);

  /* Sync appends; one server is killed a third of the way in. */
  int64_t end = lt_now_ms() + 40000;
  for (int i = 0; i < DURING && lt_now_ms() < end; i++) {
    if (i == DURING / 3) {
      kill(k.s[1].pid, SIGKILL);
      waitpid(k.s[1].pid, NULL, 0);
      k.s[1].pid = 0;
    }
    char id[33];
    uint64_t seq = 0;
    event(&k, &ev, id);
    snprintf(subject, sizeof subject, "lark.ev.sample.s%d", i);
    /* While the client reconnects and a new leader is elected, appends
     * fail; the same id is retried (the broker drops a duplicate). */
    int rc = -1;
    while ((rc = bus_append(k.c, subject, &ev, BUS_APPEND_NOCHECK, &seq,
                            NULL)) < 0 &&
           lt_now_ms() < end) {
      failed_sync++;
      usleep(100000);
    }
    if (rc == 0 && seq > 0)
      memcpy(acked[nacked++], id, 33);
  }
  cr_assert_gt(nacked, BEFORE + DURING / 2, "too few acked: %zu", nacked);

  /* Read everything back from the two that remain. */
  qsort(acked, nacked, 33, cmp_id);
  static char seen[BEFORE + DURING];
  memset(seen, 0, sizeof seen);
  bus_reader_opts ro;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  bus_reader_opts_init(&ro);
  ro.stream = "LARK_EVENTS";
  int rc = -1;
  int64_t until = lt_now_ms() + 20000;
  while ((rc = bus_reader_open(k.c, &ro, &r)) < 0 && lt_now_ms() < until)
    usleep(250000);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_new(&b), 0);
  size_t total = 0;
  for (int i = 0; i < 1000; i++) {
    rc = bus_reader_next(r, b, 2000);
    for (size_t j = 0; j < bus_batch_len(b); j++) {
      const bus_event *e = bus_batch_event(b, j);
      cr_assert(e, "undecodable event");
      total++;
      char(*hit)[33] = bsearch(e->id, acked, nacked, 33, cmp_id);
      if (hit)
        seen[hit - acked] = 1;
    }
    if (rc == BUS_EEOF)
      break;
    cr_assert_eq(rc, 0, "%s", bus_last_error());
  }
  bus_reader_close(r);
  bus_batch_free(b);
  for (size_t i = 0; i < nacked; i++)
    cr_assert(seen[i],
              "acked event %s is missing (%zu read, %zu acked, "
              "%zu sync attempts failed)",
              acked[i], total, nacked, failed_sync);
  teardown(&k);
}

/* Codes every caller takes as "try again". */
static int
try_again(int rc) {
  return rc == BUS_ECONN || rc == BUS_ETIMEOUT || rc == BUS_ENO_STREAM;
}

/* What a cluster that lost its quorum answers: "try again", not a
 * refusal. Two of three servers are killed; the survivor has no meta
 * leader, and the stream's leader cannot apply what it proposes. Making
 * a node's stream (as the scheduler does for a registration) and a
 * checked append (a node.registered), waited for or async, must fail
 * with a code every caller retries, never with one that drops the work
 * or stops a service (BUS_EBROKER was said of "JetStream system
 * temporarily unavailable", 10008, and of a check against a subject
 * whose last write is in flight, 10164). Which answers come depends on
 * where the leaders were. */
Test(cluster, a_cluster_without_quorum_says_try_again, .timeout = 120,
     .fini = stop_current) {
  cluster k;
  setup(&k);
  for (int i = 1; i < NSERVERS; i++) {
    kill(k.s[i].pid, SIGKILL);
    waitpid(k.s[i].pid, NULL, 0);
    k.s[i].pid = 0;
  }
  int64_t end = lt_now_ms() + 10000;
  int tries = 0, broker = 0;
  char last[1024] = "";
  while (lt_now_ms() < end) {
    int rcs[3];
    char why[3][1024];
    bus_event ev;
    char id[33], name[32];
    snprintf(name, sizeof name, "q%d", tries);
    rcs[0] = bus_node_stream_ensure(k.c, name, NULL);
    snprintf(why[0], sizeof why[0], "%.900s", bus_last_error());
    event(&k, &ev, id);
    rcs[1] =
        bus_append(k.c, "lark.ev.sample.q", &ev, BUS_APPEND_CHECK, NULL, NULL);
    snprintf(why[1], sizeof why[1], "%.900s", bus_last_error());
    event(&k, &ev, id);
    rcs[2] = bus_append_async(k.c, "lark.ev.sample.q", &ev, BUS_APPEND_CHECK);
    if (!rcs[2])
      rcs[2] = bus_append_flush(k.c, 2000, NULL);
    snprintf(why[2], sizeof why[2], "%.900s", bus_last_error());
    for (int j = 0; j < 3; j++) {
      static const char *const what[] = {"stream", "append", "async"};
      cr_log_info("try %d, %s: %s (%s)", tries, what[j], bus_err_name(rcs[j]),
                  rcs[j] ? why[j] : "");
      if (rcs[j] && !try_again(rcs[j]) && !broker++)
        memcpy(last, why[j], sizeof last);
    }
    tries++;
    usleep(500 * 1000);
  }
  cr_expect_eq(broker, 0, "%d of %d answers were not \"try again\": %s", broker,
               2 * tries, last);
  teardown(&k);
}
