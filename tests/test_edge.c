/*
 * test_edge.c - lark-edge as a real process, with its node's own
 * credentials and permissions, beside a real lark-scheduler and broker:
 * Jobs run to Succeeded on two edge nodes (env, CUDA_VISIBLE_DEVICES and
 * a script's report through LARK_SOCKET checked from the pod's side),
 * failures and retries, stop (SIGTERM, then SIGKILL), a broker cut-off
 * and an agent restart that lose and double nothing.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy.h"
#include "files.h"
#include "bed.h"
#include "cmd.h"
#include "edgebed.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"
#include "stream.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[3]; /* edge-1, edge-2, lark-scheduler */

static const char *const agent_args[] = {
    "--capacity", "cpu=8,memory=16Gi,gpu=2",
    "--devices",  "rlinf.io/device=2",
    "--labels",   "pool=gpu",
    NULL};

static void
setup(void) {
  setenv("LARK_NODE_TIMEOUT_MS", "20000", 1);
  lt_two_edges_up(&srv, &conn, dir, sizeof dir, "edge", agent_args, procs);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 3);
}

TestSuite(edge, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

/* A Job of one task: replicas pods running sh -c script. */
#define job(name, replicas, gpus, retries, script)                             \
  lt_sh_job(conn, name, replicas, gpus, retries, NULL, script)

/* kind/name's field key as its service describes it; and waiting for it */
#define field(kind, name, key, out, cap)                                       \
  lt_field(conn, kind, lt_sub_of(kind), name, key, out, cap)
#define wait_field(kind, name, key, want, seconds)                             \
  lt_field_becomes(conn, kind, lt_sub_of(kind), name, key, want, seconds)

#define job_verb(verb, name) lt_job_verb(conn, verb, name)

/* Whether process pid is gone (1), waited for up to 10 s. */
static int
gone(pid_t pid) {
  for (int w = 0; w < 100 && kill(pid, 0) == 0; w++)
    usleep(100 * 1000);
  return kill(pid, 0) < 0;
}

/* The last lines an edge printed, into the test's log. */
static void
show_log(const char *node) {
  char path[600], line[512];
  snprintf(path, sizeof path, "%s/%s.log", dir, node);
  FILE *f = fopen(path, "r");
  if (!f) {
    cr_log_error("%s: no log at %s", node, path);
    return;
  }
  char tail[8][512];
  int n = 0;
  while (fgets(line, sizeof line, f))
    snprintf(tail[n++ % 8], sizeof tail[0], "%s", line);
  fclose(f);
  for (int i = n > 8 ? n - 8 : 0; i < n; i++)
    cr_log_error("%s: %s", node, tail[i % 8]);
}

static int
nodes_ready(void) {
  for (int i = 0; i < 2; i++)
    if (!wait_field("node", lt_edge_names[i], "status", "Ready", 30)) {
      show_log(lt_edge_names[i]);
      return 0;
    }
  return 1;
}

/* Where history() writes. */
typedef struct text_out {
  char *out;
  size_t cap, len;
} text_out;

static void
add_type_phase(const bus_event *ev, void *arg) {
  text_out *k = arg;
  char phase[32] = "";
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  k->len += (size_t)snprintf(
      k->out + k->len, k->len < k->cap ? k->cap - k->len : 0, "%s%s%s%s",
      k->len ? " " : "", ev->type, phase[0] ? ":" : "", phase);
}

/* Every event on subject in stream, as "type:phase" joined by spaces. */
static void
history(const char *stream, const char *subject, char *out, size_t cap) {
  text_out k = {out, cap, 0};
  out[0] = 0;
  cr_assert_eq(
      lt_read_stream(conn, stream, subject, 2000, 0, add_type_phase, &k), 0,
      "%s", bus_last_error());
}

static char *
slurp(const char *path) {
  static char buf[65536];
  return lt_read_file(path, buf, sizeof buf);
}

/* ------------------------------------------------------------- tests */

Test(edge, job_succeeds_on_two_edges_with_env_and_socket_reports) {
  char script[1024];
  snprintf(script, sizeof script,
           "env > %s/$LARK_POD.env; echo hello from $LARK_POD; "
           "printf '{\"kind\":\"metric\",\"values\":{\"step\":7,"
           "\"reward\":0.5}}\\n' | socat - UNIX-CONNECT:$LARK_SOCKET "
           "> %s/$LARK_POD.reply",
           dir, dir);
  cr_assert(nodes_ready());
  job("train", 2, 2, 0, script);
  cr_assert(wait_field("job", "train", "phase", "Succeeded", 40));
  char n0[64], n1[64];
  field("pod", "train-a-0", "node", n0, sizeof n0);
  field("pod", "train-a-1", "node", n1, sizeof n1);
  cr_expect_str_neq(n0, n1, "two 2-GPU pods on two 2-GPU nodes");
  char path[512];
  snprintf(path, sizeof path, "%s/train-a-0.env", dir);
  char *env = slurp(path);
  cr_assert_not_null(env, "the pod never wrote its environment");
  cr_expect(strstr(env, "LARK_JOB=train\n"), "%s", env);
  cr_expect(strstr(env, "LARK_POD=train-a-0\n"));
  cr_expect(strstr(env, "LARK_TASK=train-a\n"));
  cr_expect(strstr(env, "CUDA_VISIBLE_DEVICES=0,1\n"), "%s", env);
  cr_expect(strstr(env, "LARK_SOCKET="));
  cr_expect(strstr(env, "RLARK_TOTAL_NODES="));
  cr_expect(!strstr(env, "LARK_CREDS"), "no credentials in a pod");
  snprintf(path, sizeof path, "%s/train-a-1.reply", dir);
  char *reply = slurp(path);
  cr_expect(reply && !strcmp(reply, "ok\n"), "socket said %s",
            reply ? reply : "nothing");
  char h[4096];
  for (int i = 0; i < 50; i++, usleep(100 * 1000)) {
    history("LARK_RUNS", "lark.run.train", h, sizeof h);
    if (!strcmp(h, "run.reported run.reported"))
      break;
  }
  cr_expect_str_eq(h, "run.reported run.reported");
  history("LARK_EVENTS", "lark.ev.pod.train-a-0", h, sizeof h);
  cr_expect_str_eq(h, "pod.phase:Running pod.phase:Succeeded");
}

/* A pod's lines in the ingress (nobody reads them here: they stay) and
 * the stored time of its last batch; and of its phase event Succeeded. */
typedef struct lines_of {
  const char *pod;
  long n;
  char last[64];
  int64_t last_ns, ended_ns;
} lines_of;

static void
add_lines(const bus_event *ev, void *arg) {
  lines_of *k = arg;
  const bus_ev_log_batch *d =
      strcmp(ev->type, "log.batch") ? NULL : bus_as_log_batch(ev);
  if (!d || d->pod.len != strlen(k->pod) ||
      memcmp(d->pod.ptr, k->pod, d->pod.len) || !d->lines.n)
    return;
  const bus_str *t = &d->lines.v[d->lines.n - 1].text;
  snprintf(k->last, sizeof k->last, "%.*s", (int)t->len, t->ptr);
  k->n += d->lines.n;
  k->last_ns = ev->stored_ns;
}

/* Each log.batch LARK_INGRESS holds (a work queue: read through an
 * unacked consumer, gone after). */
static void
ingress_logs(lt_event_fn fn, void *arg) {
  bus_consumer_opts o;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_INGRESS";
  o.name = "test-logs";
  o.filter = "lark.in.*.logs.>";
  bus_consumer *k = NULL;
  bus_batch *b = NULL;
  cr_assert_eq(bus_consumer_open(conn, &o, &k), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_new(&b), 0);
  while (bus_consumer_fetch(k, 256, 500, b) == 0 && bus_batch_len(b))
    for (size_t i = 0; i < bus_batch_len(b); i++)
      if (bus_batch_event(b, i))
        fn(bus_batch_event(b, i), arg);
  bus_batch_free(b);
  bus_consumer_close(k);
}

static void
find_end(const bus_event *ev, void *arg) {
  lines_of *k = arg;
  char phase[32] = "";
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  if (!k->ended_ns && !strcmp(phase, "Succeeded"))
    k->ended_ns = ev->stored_ns;
}

Test(edge, a_pods_last_lines_travel_ahead_of_its_end) {
  cr_assert(nodes_ready());
  job("lines", 1, 0, 0,
      "i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done; "
      "printf 'the end, with no newline'");
  cr_assert(wait_field("job", "lines", "phase", "Succeeded", 40));
  lines_of k = {.pod = "lines-a-0"};
  cr_assert_eq(lt_read_stream(conn, "LARK_EVENTS", "lark.ev.pod.lines-a-0",
                              2000, 1, find_end, &k),
               0, "%s", bus_last_error());
  cr_assert_gt(k.ended_ns, 0, "no pod.phase Succeeded");
  ingress_logs(add_lines, &k);
  cr_expect_eq(k.n, 301, "%ld lines in the ingress", k.n);
  cr_expect_str_eq(k.last, "the end, with no newline");
  /* the node sent its last lines, then its end: both stored before the
   * scheduler's phase event (not a flush timer after it) */
  cr_expect_lt(k.last_ns, k.ended_ns,
               "the last lines were stored %lld ms after the phase",
               (long long)(k.last_ns - k.ended_ns) / 1000000);
}

Test(edge, failing_pod_is_retried_then_fails_its_job) {
  char script[512];
  snprintf(script, sizeof script, "echo run >> %s/runs; exit 3", dir);
  cr_assert(nodes_ready());
  job("bad", 1, 0, 1, script);
  cr_assert(wait_field("job", "bad", "phase", "Failed", 40));
  char att[16];
  field("pod", "bad-a-0", "attempt", att, sizeof att);
  cr_expect_str_eq(att, "1");
  snprintf(script, sizeof script, "%s/runs", dir);
  cr_expect_eq(lt_lines_of(script), 2, "one run per attempt");
}

Test(edge, stop_kills_the_pods_term_then_kill) {
  char script[512], path[512];
  snprintf(script, sizeof script,
           "echo $$ > %s/$LARK_POD.pid; trap '' TERM; "
           "while true; do sleep 0.2; done",
           dir);
  cr_assert(nodes_ready());
  job("long", 2, 0, 0, script);
  cr_assert(wait_field("job", "long", "phase", "Running", 40));
  int pids[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/long-a-%d.pid", dir, i);
    pids[i] = lt_pid_in(path, 10);
    cr_assert(pids[i] > 0, "pod %d never started", i);
  }
  job_verb("stop", "long");
  cr_expect(wait_field("job", "long", "phase", "Stopped", 20));
  for (int i = 0; i < 2; i++)
    cr_expect(gone(pids[i]), "pod %d still runs after a stop", i);
}

Test(edge, broker_cut_off_loses_and_doubles_nothing) {
  char script[512], h[4096];
  snprintf(script, sizeof script, "echo run >> %s/runs; sleep 3; echo done",
           dir);
  cr_assert(nodes_ready());
  job("cut", 1, 0, 0, script);
  cr_assert(wait_field("pod", "cut-a-0", "phase", "Running", 30));
  bus_conn_close(conn);
  conn = NULL;
  cr_assert_eq(lt_natsd_kill_restart(&srv), 0); /* pod ends meanwhile */
  cr_assert_eq(lt_connect_as(srv.url, dir, "admin", 0, &conn), 0, "%s",
               bus_last_error());
  cr_assert(wait_field("job", "cut", "phase", "Succeeded", 40));
  history("LARK_EVENTS", "lark.ev.pod.cut-a-0", h, sizeof h);
  cr_expect_str_eq(h, "pod.phase:Running pod.phase:Succeeded");
  /* The broker kept the edges' slice consumers in memory and forgot
   * them: each edge opens its own again, is handed every pod's current
   * state once more, and takes new work without running old work twice. */
  snprintf(script, sizeof script, "echo again >> %s/again", dir);
  job("after", 2, 0, 0, script);
  cr_expect(wait_field("job", "after", "phase", "Succeeded", 40));
  snprintf(script, sizeof script, "%s/again", dir);
  cr_expect_eq(lt_lines_of(script), 2, "each new pod ran once");
  snprintf(script, sizeof script, "%s/runs", dir);
  cr_expect_eq(lt_lines_of(script), 1, "the pod ran once");
}

Test(edge, restarted_edge_readopts_its_pods) {
  char script[512], h[4096];
  snprintf(script, sizeof script, "echo run >> %s/runs; sleep 3", dir);
  cr_assert(nodes_ready());
  job("adopt", 2, 0, 0, script);
  cr_assert(wait_field("job", "adopt", "phase", "Running", 30));
  cr_assert(wait_field("pod", "adopt-a-0", "phase", "Running", 30));
  cr_assert(wait_field("pod", "adopt-a-1", "phase", "Running", 30));
  for (int i = 0; i < 2; i++) {
    lt_kill(procs[i], SIGKILL);
    procs[i] = lt_edge_start(srv.url, dir, i, agent_args);
  }
  cr_assert(wait_field("job", "adopt", "phase", "Succeeded", 40));
  for (int i = 0; i < 2; i++) {
    char subject[64];
    snprintf(subject, sizeof subject, "lark.ev.pod.adopt-a-%d", i);
    history("LARK_EVENTS", subject, h, sizeof h);
    cr_expect_str_eq(h, "pod.phase:Running pod.phase:Succeeded");
  }
  snprintf(script, sizeof script, "%s/runs", dir);
  cr_expect_eq(lt_lines_of(script), 2, "each pod ran once");
}

Test(edge, deleted_job_is_stopped_forgotten_and_purged) {
  char script[1024], path[512], nodes[2][64];
  snprintf(script, sizeof script,
           "echo $$ > %s/$LARK_POD.pid; echo run >> %s/gone-runs; sleep 60",
           dir, dir);
  cr_assert(nodes_ready());
  job("gone", 2, 0, 0, script);
  int pids[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    char pod[32];
    snprintf(pod, sizeof pod, "gone-a-%d", i);
    cr_assert(wait_field("pod", pod, "phase", "Running", 30));
    field("pod", pod, "node", nodes[i], sizeof nodes[i]);
    cr_assert(lt_desired_there(conn, nodes[i], pod, 0));
    snprintf(path, sizeof path, "%s/%s.pid", dir, pod);
    pids[i] = lt_pid_in(path, 10);
    cr_assert(pids[i] > 0, "pod %d never started", i);
  }
  job_verb("delete", "gone");
  /* each node stops its pod, forgets it, and the scheduler purges the
   * pod's subject: the node streams keep only pods that still matter */
  for (int i = 0; i < 2; i++) {
    char pod[32];
    snprintf(pod, sizeof pod, "gone-a-%d", i);
    cr_expect(!lt_desired_there(conn, nodes[i], pod, 20),
              "%s still in %s's stream", pod, nodes[i]);
    cr_expect(gone(pids[i]), "%s still runs", pod);
  }
  /* restarted edges are handed nothing of them again */
  for (int i = 0; i < 2; i++) {
    lt_kill(procs[i], SIGKILL);
    procs[i] = lt_edge_start(srv.url, dir, i, agent_args);
  }
  cr_assert(nodes_ready());
  sleep(2);
  snprintf(path, sizeof path, "%s/gone-runs", dir);
  cr_expect_eq(lt_lines_of(path), 2, "a forgotten pod started again");
}
