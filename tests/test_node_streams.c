/*
 * test_node_streams.c - node streams are kept in memory, against real
 * brokers and processes: a node stream left on file by an earlier version
 * is made anew in memory; and a broker killed (SIGKILL) and started
 * again, which has lost every node stream and consumer, gets each pod's
 * desired state back from lark-scheduler while the pods run on, untouched
 * (nothing runs twice), and the nodes take new work and act on changes
 * (the new streams number from 1 again; the nodes go by the versions the
 * scheduler puts in each desired state). And the service loop alone: with
 * nothing else happening, its reconnection to a restarted broker is what
 * makes the streams again and sends what its queue holds once more. And
 * a desired state pushed ahead of its stream starts its pod with the
 * stream's delivery paused; the stored copy then starts nothing again.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "edgebed.h"
#include "cmd.h"
#include "deploy.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[3]; /* edge-1, edge-2, lark-scheduler */

static const char *const agent_args[] = {"--capacity", "cpu=8,memory=16Gi",
                                         NULL};

static void
setup(void) {
  setenv("LARK_NODE_TIMEOUT_MS", "30000", 1);
  lt_two_edges_up(&srv, &conn, dir, sizeof dir, "nodestreams", agent_args,
                  procs);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 3);
}

TestSuite(node_streams, .init = setup, .fini = teardown, .timeout = 150);

#define wait_field(kind, name, key, want, seconds)                             \
  lt_field_becomes(conn, kind, lt_sub_of(kind), name, key, want, seconds)

/* A Job of one task: replicas pods of sh -c script, spread. */
#define job(name, replicas, script)                                            \
  lt_sh_job(conn, name, replicas, 0, 0, "spread", script)
#define job_verb(verb, name) lt_job_verb(conn, verb, name)

/* The pid pod wrote into dir/<pod>.pid, waiting up to 10 s; 0 if none. */
static int
pod_pid(const char *pod) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.pid", dir, pod);
  return lt_pid_in(path, 10);
}

/* Whether pod's desired state is in node's stream, waiting up to
 * seconds for it. */
static int
desired_back(const char *node, const char *pod, int seconds) {
  for (int i = 0; i <= seconds * 10; i++, usleep(100 * 1000))
    if (lt_desired_there(conn, node, pod, 0))
      return 1;
  return 0;
}

static void
reconnect(void) {
  cr_assert_eq(lt_connect_as(srv.url, dir, "admin", 0, &conn), 0, "%s",
               bus_last_error());
}

Test(node_streams,
     broker_restart_sends_desired_states_again_runs_nothing_twice) {
  char script[1024], path[512], node[2][64], pod[2][32];
  int pids[2];
  for (int i = 0; i < 2; i++)
    cr_assert(wait_field("node", lt_edge_names[i], "status", "Ready", 30));
  snprintf(script, sizeof script,
           "echo $$ > %s/$LARK_POD.pid; echo run >> %s/long-runs; sleep 120",
           dir, dir);
  job("long", 2, script);
  for (int i = 0; i < 2; i++) {
    snprintf(pod[i], sizeof pod[i], "long-a-%d", i);
    cr_assert(wait_field("pod", pod[i], "phase", "Running", 30));
    lt_field(conn, "pod", lt_sub_of("pod"), pod[i], "node", node[i],
             sizeof node[i]);
    cr_assert(lt_desired_there(conn, node[i], pod[i], 0));
    cr_assert((pids[i] = pod_pid(pod[i])) > 0, "%s never started", pod[i]);
  }
  bus_conn_close(conn);
  conn = NULL;
  cr_assert_eq(lt_natsd_kill_restart(&srv), 0);
  reconnect();
  /* the scheduler, reconnected, finds the streams gone, makes them again
   * and sends each pod's desired state again */
  for (int i = 0; i < 2; i++)
    cr_expect(desired_back(node[i], pod[i], 30),
              "%s's desired state never came back to %s", pod[i], node[i]);
  snprintf(path, sizeof path, "%s/long-runs", dir);
  cr_expect_eq(lt_lines_of(path), 2, "a running pod was started again");
  for (int i = 0; i < 2; i++)
    cr_expect_eq(kill(pids[i], 0), 0, "%s no longer runs", pod[i]);
  /* the nodes take new work, once each */
  snprintf(script, sizeof script, "echo again >> %s/again", dir);
  job("after", 2, script);
  cr_expect(wait_field("job", "after", "phase", "Succeeded", 40));
  snprintf(path, sizeof path, "%s/again", dir);
  cr_expect_eq(lt_lines_of(path), 2, "each new pod ran once");
  /* and act on a change to what ran before the restart */
  job_verb("stop", "long");
  cr_expect(wait_field("job", "long", "phase", "Stopped", 30));
  for (int i = 0; i < 2; i++) {
    int w = 0;
    for (; w < 100 && kill(pids[i], 0) == 0; w++)
      usleep(100 * 1000);
    cr_expect_neq(kill(pids[i], 0), 0, "%s still runs after a stop", pod[i]);
  }
  snprintf(path, sizeof path, "%s/long-runs", dir);
  cr_expect_eq(lt_lines_of(path), 2, "a stopped pod was started again");
}

/* The stream's storage as the broker describes it ("file", "memory"). */
static void
storage_of(const char *stream, char *out, size_t cap) {
  char subject[128];
  void *reply = NULL;
  size_t len = 0;
  snprintf(subject, sizeof subject, "$JS.API.STREAM.INFO.%s", stream);
  cr_assert_eq(bus_conn_request(conn, subject, "", 0, 2000, &reply, &len), 0,
               "%s", bus_last_error());
  json_t *j = json_loadb(reply, len, 0, NULL);
  const char *s = json_string_value(
      json_object_get(json_object_get(j, "config"), "storage"));
  snprintf(out, cap, "%s", s ? s : "");
  json_decref(j);
  free(reply);
}

Test(node_streams, a_node_stream_on_file_is_made_anew_in_memory) {
  const char *node = "old-1";
  const char *cfg = "{\"name\":\"LARK_NODE_old-1\",\"subjects\":"
                    "[\"lark.node.old-1.>\"],\"storage\":\"file\","
                    "\"max_msgs_per_subject\":1}";
  void *reply = NULL;
  size_t len = 0;
  char storage[32];
  cr_assert_eq(bus_conn_request(conn, "$JS.API.STREAM.CREATE.LARK_NODE_old-1",
                                cfg, strlen(cfg), 2000, &reply, &len),
               0, "%s", bus_last_error());
  free(reply);
  storage_of("LARK_NODE_old-1", storage, sizeof storage);
  cr_assert_str_eq(storage, "file");
  int64_t born[2] = {0, 0};
  unsigned char made[2] = {0, 0};
  int created = 0;
  cr_assert_eq(
      bus_node_streams_born(conn, &node, 1, &born[0], &made[0], &created), 0,
      "%s", bus_last_error());
  cr_expect_eq(created, 1);
  cr_expect_eq(made[0], 1, "a file-stored node stream is made anew");
  storage_of("LARK_NODE_old-1", storage, sizeof storage);
  cr_expect_str_eq(storage, "memory");
  cr_assert_eq(
      bus_node_streams_born(conn, &node, 1, &born[1], &made[1], &created), 0);
  cr_expect_eq(created, 0, "ensure again is a no-op");
  cr_expect_eq(made[1], 0);
  cr_expect(born[0] > 0 && born[0] == born[1], "the same stream, born once");
}

/* ------------------------------------------------------------ pushes */

/* $JS.API.<verb>.<node's stream>.edge-<node> as admin with body: its
 * JSON answer (json_decref it), NULL when refused (logged). */
static json_t *
slice_try(const char *verb, const char *node, const char *body) {
  char subject[256], stream[BUS_NODE_STREAM_MAX];
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(bus_node_stream_name(node, stream, sizeof stream), 0);
  snprintf(subject, sizeof subject, "$JS.API.CONSUMER.%s.%s.edge-%s", verb,
           stream, node);
  cr_assert_eq(
      bus_conn_request(conn, subject, body, strlen(body), 5000, &reply, &len),
      0, "%s: %s", subject, bus_last_error());
  json_t *j = json_loadb(reply, len, 0, NULL);
  if (j && json_object_get(j, "error")) {
    cr_log_info("%s: %.*s", subject, (int)len, (const char *)reply);
    json_decref(j);
    j = NULL;
  }
  free(reply);
  return j;
}

/* The same, failing the test when refused. */
static json_t *
slice_api(const char *verb, const char *node, const char *body) {
  json_t *j = slice_try(verb, node, body);
  cr_assert(j, "CONSUMER.%s of %s refused", verb, node);
  return j;
}

/* Wait up to 30 s for node's slice consumer to exist. */
static void
slice_opened(const char *node) {
  json_t *j = NULL;
  for (int i = 0; i < 300 && !(j = slice_try("INFO", node, "")); i++)
    usleep(100 * 1000);
  cr_assert(j, "%s never opened its slice", node);
  json_decref(j);
}

/* Pause node's slice consumer for seconds (0: resume it). */
static void
pause_slice(const char *node, int seconds) {
  char body[96] = "{}";
  if (seconds) {
    time_t until = time(NULL) + seconds;
    strftime(body, sizeof body, "{\"pause_until\":\"%Y-%m-%dT%H:%M:%SZ\"}",
             gmtime(&until));
  }
  json_t *j = slice_api("PAUSE", node, body);
  cr_assert_eq(json_is_true(json_object_get(j, "paused")), seconds != 0,
               "the slice of %s is %s", node,
               seconds ? "not paused" : "paused");
  json_decref(j);
}

/* What node's slice consumer has yet to deliver or see acked. */
static long
slice_owed(const char *node) {
  json_t *j = slice_api("INFO", node, "");
  long n = (long)json_integer_value(json_object_get(j, "num_pending")) +
           (long)json_integer_value(json_object_get(j, "num_ack_pending"));
  json_decref(j);
  return n;
}

/*
 * A desired state reaches its node as a push before the node's stream
 * delivers it (libbus outbox.c, edge/slice.c): with both nodes' slice
 * consumers paused, a Job's pods still start, their desired states stored
 * and not delivered; resumed, the stored copies are delivered and acked
 * and start nothing again.
 */
Test(node_streams, a_push_starts_the_pod_and_its_stored_copy_runs_nothing) {
  char script[1024], path[512], node[2][64], pod[2][32];
  for (int i = 0; i < 2; i++) {
    cr_assert(wait_field("node", lt_edge_names[i], "status", "Ready", 30));
    slice_opened(lt_edge_names[i]);
    pause_slice(lt_edge_names[i], 120);
  }
  snprintf(script, sizeof script, "echo run >> %s/pushed-runs; sleep 120", dir);
  job("pushed", 2, script);
  for (int i = 0; i < 2; i++) {
    snprintf(pod[i], sizeof pod[i], "pushed-a-%d", i);
    cr_assert(wait_field("pod", pod[i], "phase", "Running", 30),
              "%s did not start from its push", pod[i]);
    lt_field(conn, "pod", lt_sub_of("pod"), pod[i], "node", node[i],
             sizeof node[i]);
    cr_assert(lt_desired_there(conn, node[i], pod[i], 0));
  }
  for (int i = 0; i < 2; i++) {
    cr_assert_gt(slice_owed(lt_edge_names[i]), 0,
                 "the stream of %s delivered while paused", lt_edge_names[i]);
    pause_slice(lt_edge_names[i], 0);
  }
  for (int i = 0; i < 2; i++) {
    int w = 0;
    while (slice_owed(lt_edge_names[i]) > 0 && w++ < 100)
      usleep(100 * 1000);
    cr_assert_eq(slice_owed(lt_edge_names[i]), 0,
                 "the stored copies never reached %s", lt_edge_names[i]);
  }
  usleep(500 * 1000);
  snprintf(path, sizeof path, "%s/pushed-runs", dir);
  cr_expect_eq(lt_lines_of(path), 2, "a stored copy started a pod again");
  job_verb("stop", "pushed");
  cr_expect(wait_field("job", "pushed", "phase", "Stopped", 30));
  cr_expect_eq(lt_lines_of(path), 2, "a pod ran twice");
}

/* ------------------------------------------- the service loop's repair */

/*
 * A view as lark-engine's or lark-devices': each sample.created on
 * lark.ev.sample.<pod> puts node n1 in `nodes` and the pod in the send
 * queue `q`, and decide sends each queued pod's desired state into n1's
 * stream once (bus_txn_sendq, note "o").
 */
static const char *const rtables[] = {"nodes", "q", NULL};

static int
r_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  unsigned char key[8 + 64];
  const char *pod = strrchr(ev->subject, '.') + 1;
  size_t n = strlen(pod) < 64 ? strlen(pod) : 64;
  bus_put_be64(key, ev->seq);
  memcpy(key + 8, pod, n);
  int rc = bus_txn_put(t, "nodes", "n1", 2, "", 0);
  return rc ? rc : bus_txn_put(t, "q", key, 8 + n, "", 0);
}

static int
r_send(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  bus_txn *t = ((void **)ud)[0];
  bus_sendq *q = ((void **)ud)[1];
  char pod[65], subject[128], src[96];
  memcpy(pod, (const char *)k + 8, kl - 8);
  pod[kl - 8] = 0;
  bus_sendq_sent(q, k, kl);
  bus_ev_pod_desired d = {.pod = bus_str_of(pod),
                          .has_version = 1,
                          .version = bus_get_be64(k),
                          .job = BUS_STR("j"),
                          .task = BUS_STR("j-a"),
                          .has_attempt = 1,
                          .desired = BUS_STR("Running"),
                          .has_runtime = 1,
                          .runtime = BUS_STR("raw")};
  bus_decider by = {.actor = "test", .cause = ""};
  snprintf(subject, sizeof subject, "lark.node.n1.pod.%s", pod);
  snprintf(src, sizeof src, "desired:%s:%llu", pod,
           (unsigned long long)bus_get_be64(k));
  return bus_txn_emit_decided(t, &by, subject, BUS_T_POD_DESIRED, &d, src, 0,
                              BUS_APPEND_NOCHECK);
}

static int
r_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)cause, (void)now, (void)ud;
  bus_sendq q = {0};
  void *w[2] = {t, &q};
  return bus_txn_sendq(t, "q", "o", &q, r_send, w);
}

typedef struct rsvc {
  bus_view *v;
  atomic_int stop, repairs;
  int rc;
} rsvc;

static int
r_repair(bus_conn *c, void *ud) {
  rsvc *r = ud;
  int made = 0, anew = 0;
  atomic_fetch_add(&r->repairs, 1);
  return bus_view_node_streams_repair(c, r->v, "nodes", "o", &made, &anew);
}

static void *
r_run(void *arg) {
  rsvc *r = arg;
  bus_service_opts o;
  bus_service_opts_init(&o);
  o.name = "rs";
  o.poll_ms = 100;
  o.stop_flag = &r->stop;
  o.repair = r_repair;
  o.repair_ud = r;
  r->rc = bus_service_run(conn, r->v, &o);
  return NULL;
}

static void
rsetup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "noderepair", 2000);
}

static void
rteardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(node_stream_repair, .init = rsetup, .fini = rteardown, .timeout = 60);

/* Whether lark.node.n1.pod.<pod> is in LARK_NODE_n1 within seconds. */
static int
in_stream(const char *pod, int seconds) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.node.n1.pod.%s", pod);
  for (int i = 0; i <= seconds * 10; i++, usleep(100 * 1000)) {
    msgpack_zone z;
    bus_event last;
    memset(&last, 0, sizeof last);
    msgpack_zone_init(&z, 1024);
    int rc = bus_last_event(conn, "LARK_NODE_n1", subject, &last, &z);
    msgpack_zone_destroy(&z);
    if (rc == 0)
      return 1;
  }
  return 0;
}

Test(node_stream_repair, reconnection_to_a_restarted_broker_sends_again) {
  char path[512], id[33];
  snprintf(path, sizeof path, "%s/view", dir);
  bus_view_def d = {
      .name = "rs", .tables = rtables, .apply = r_apply, .decide = r_decide};
  rsvc r = {.v = lt_must_open_view(&d, path, 1)};
  int made = 0;
  cr_assert_eq(bus_node_stream_ensure(conn, "n1", &made), 0, "%s",
               bus_last_error());
  pthread_t th;
  pthread_create(&th, NULL, r_run, &r);
  for (int i = 0; i < 2; i++) {
    bus_event ev;
    lt_sample_event(&ev, id, "sample.created", NULL);
    cr_assert_eq(bus_append(conn, i ? "lark.ev.sample.p2" : "lark.ev.sample.p1",
                            &ev, BUS_APPEND_NOCHECK, NULL, NULL),
                 0, "%s", bus_last_error());
  }
  cr_assert(in_stream("p1", 10) && in_stream("p2", 10));
  cr_expect_eq(atomic_load(&r.repairs), 0, "nothing to repair yet");
  cr_assert_eq(lt_natsd_kill_restart(&srv), 0);
  /* nothing else happens: the loop's reconnection alone brings them back */
  cr_expect(in_stream("p1", 20), "p1 never sent again");
  cr_expect(in_stream("p2", 20), "p2 never sent again");
  cr_expect_geq(atomic_load(&r.repairs), 1);
  uint64_t last = 0;
  cr_expect_eq(bus_stream_last_seq(conn, "LARK_NODE_n1", &last), 0);
  cr_expect_eq(last, 2, "each queued desired state sent again once");
  atomic_store(&r.stop, 1);
  pthread_join(th, NULL);
  cr_expect_eq(r.rc, 0, "service: %s", bus_last_error());
  bus_view_close(r.v);
}
