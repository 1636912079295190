/*
 * test_logs.c - lark-logs and `larkctl logs` against a real broker, with
 * the real binaries: batches a node sends on lark.in.<node>.logs.<pod> are
 * republished on lark.log.<job>.<task>.<pod> only when the pod is bound to
 * that node (bindings come from job.placed events appended here as the
 * scheduler would); larkctl merges a Job's pods in time order with
 * prefixes, keeps --tail lines, prints JSON, and -f ends when the Job
 * succeeds; lark-logs killed with SIGKILL loses and doubles nothing, and
 * its view equals its replay.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "json.h"
#include "logs.h"
#include "natsd.h"
#include "proc.h"
#include "replay.h"
#include "stream.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], logpath[512];
static uint64_t placement_ver;
static pid_t logs_pid;

static pid_t
start_logs(void) {
  return lt_must_start("lark-logs", srv.url, dir, "view", "lark-logs.log",
                       NULL);
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "logs", 60000);
  snprintf(logpath, sizeof logpath, "%s/lark-logs.log", dir);
  placement_ver = 0;
  logs_pid = start_logs();
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, &logs_pid, 1);
}

TestSuite(logs, .init = setup, .fini = teardown, .timeout = 180);

static void
append(const char *subject, const char *type, const msgpack_sbuffer *sb,
       uint64_t prev, int flags, uint64_t *seq) {
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "test",
                  .cause = "",
                  .prev = prev,
                  .data_mp = sb->data,
                  .data_mp_len = sb->size};
  int rc = bus_append(conn, subject, &ev, flags, seq, NULL);
  cr_assert_eq(rc, 0, "append %s on %s: %s", type, subject, bus_last_error());
}

/* job.placed for job: pods "<job>-w-<i>" of task "<job>-w" on nodes[i]. */
static void
place(const char *job, int n, const char *const *nodes) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  char task[128], pod[160];
  snprintf(task, sizeof task, "%s-w", job);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "pool", "default");
  bus_pack_kv_str(&b.pk, "job", job);
  bus_pack_str(&b.pk, "bindings");
  msgpack_pack_array(&b.pk, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    snprintf(pod, sizeof pod, "%s-%d", task, i);
    msgpack_pack_map(&b.pk, 4);
    bus_pack_kv_str(&b.pk, "pod", pod);
    bus_pack_kv_str(&b.pk, "task", task);
    bus_pack_kv_str(&b.pk, "node", nodes[i]);
    bus_pack_kv_uint(&b.pk, "attempt", 0);
  }
  append("lark.ev.placement.default", "job.placed", &b.sb, placement_ver,
         BUS_APPEND_CHECK, &placement_ver);
  bus_packbuf_destroy(&b);
}

static void
job_phase(const char *job, const char *phase) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "phase", phase);
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  uint64_t last = lt_last_on(conn, "LARK_EVENTS", subject, NULL, 0);
  append(subject, "job.phase", &b.sb, last, BUS_APPEND_CHECK, NULL);
  bus_packbuf_destroy(&b);
}

/* A node's batch: lines "<prefix><k>" at ts[k]. */
static void
send_batch(const char *node, const char *pod, const char *body_pod, int n,
           const int64_t *ts, const char *prefix) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "pod", body_pod ? body_pod : pod);
  bus_pack_kv_uint(&b.pk, "attempt", 0);
  bus_pack_str(&b.pk, "lines");
  msgpack_pack_array(&b.pk, (uint32_t)n);
  for (int k = 0; k < n; k++) {
    char text[64];
    snprintf(text, sizeof text, "%s%d", prefix, k);
    msgpack_pack_map(&b.pk, 3);
    bus_pack_kv_int(&b.pk, "ts", ts ? ts[k] : bus_wall_ns());
    bus_pack_kv_str(&b.pk, "stream", k % 2 ? "stderr" : "stdout");
    bus_pack_kv_str(&b.pk, "text", text);
  }
  char subject[256];
  snprintf(subject, sizeof subject, "lark.in.%s.logs.%s", node, pod);
  append(subject, "log.batch", &b.sb, 0, BUS_APPEND_NOCHECK, NULL);
  bus_packbuf_destroy(&b);
}

/* What count_logs() gathers: how many, and the last one's fields. */
typedef struct logs_seen {
  size_t n;
  char last[256];
} logs_seen;

static void
note_log(const bus_event *ev, void *arg) {
  logs_seen *k = arg;
  char job[64] = "", task[64] = "", node[64] = "", pod[64] = "";
  bus_obj_str(&ev->data, "job", job, sizeof job);
  bus_obj_str(&ev->data, "task", task, sizeof task);
  bus_obj_str(&ev->data, "node", node, sizeof node);
  bus_obj_str(&ev->data, "pod", pod, sizeof pod);
  snprintf(k->last, sizeof k->last, "%s %s %s %s", job, task, pod, node);
  k->n++;
}

/* Messages in LARK_LOGS under filter, and the last one's data. */
static size_t
count_logs(const char *filter, char *last_json, size_t cap) {
  logs_seen k = {0, ""};
  cr_assert_eq(lt_read_stream(conn, "LARK_LOGS", filter, 5000, 1, note_log, &k),
               0, "%s", bus_last_error());
  if (last_json)
    snprintf(last_json, cap, "%s", k.last);
  return k.n;
}

static void
wait_logs(const char *filter, size_t want) {
  size_t n = 0;
  for (int i = 0; i < 300; i++) {
    if ((n = count_logs(filter, NULL, 0)) >= want)
      break;
    usleep(100 * 1000);
  }
  cr_assert_eq(n, want, "%s: %zu messages, want %zu", filter, n, want);
}

static int
larkctl(char *out, size_t cap, const char *const *args) {
  char bin[512], *argv[16];
  lt_bin("larkctl", bin, sizeof bin);
  int n = 0;
  argv[n++] = bin;
  argv[n++] = (char *)"--url";
  argv[n++] = srv.url;
  argv[n++] = (char *)"logs";
  for (int i = 0; args[i] && n < 15; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  char err[4096];
  int rc = lt_run(argv, out, cap, err, sizeof err);
  if (rc)
    fprintf(stderr, "larkctl: %s", err);
  return rc;
}

static int
file_has(const char *path, const char *needle) {
  static char buf[1 << 16];
  return lt_read_file(path, buf, sizeof buf) && strstr(buf, needle) != NULL;
}

Test(logs, republished_only_from_the_bound_node) {
  const char *nodes[] = {"n1", "n2"};
  place("train", 2, nodes);
  send_batch("n1", "train-w-0", NULL, 3, NULL, "a");
  send_batch("n1", "train-w-1", NULL, 3, NULL, "wrong-node");
  send_batch("n1", "ghost-w-0", NULL, 3, NULL, "unknown-pod");
  send_batch("n1", "train-w-0", "train-w-1", 3, NULL, "other-body");
  send_batch("n2", "train-w-1", NULL, 2, NULL, "b");
  wait_logs("lark.log.>", 2); /* the last one passed: all were handled */
  char last[256];
  cr_expect_eq(
      count_logs("lark.log.train.train-w.train-w-0", last, sizeof last), 1);
  cr_expect_str_eq(last, "train train-w train-w-0 n1");
  cr_expect_eq(
      count_logs("lark.log.train.train-w.train-w-1", last, sizeof last), 1);
  cr_expect_str_eq(last, "train train-w train-w-1 n2");
  usleep(300 * 1000);
  cr_expect_eq(count_logs("lark.log.>", NULL, 0), 2, "nothing refused leaks");
  cr_expect(file_has(logpath, "refused"), "refusals are logged");
  cr_expect(file_has(logpath, "pod train-w-1 is not bound to node n1"));
}

/* $JS.API.CONSUMER.<verb>.LARK_EVENTS.logs (lark-logs' view) with body:
 * 1 when the broker answered without an error. */
static int
view_consumer(const char *verb, const char *body) {
  char subject[128];
  snprintf(subject, sizeof subject, "$JS.API.CONSUMER.%s.LARK_EVENTS.logs",
           verb);
  json_t *j = lt_request_json(conn, subject, body);
  int ok = j && !json_object_get(j, "error");
  json_decref(j);
  return ok;
}

/* A batch that comes while the view is behind its binding is kept, not
 * refused: with lark-logs' view consumer paused past the ingress's 5 s
 * wait for the view, the batch is redelivered and lands once the view
 * has the binding. */
Test(logs, a_batch_ahead_of_its_binding_waits_for_the_view) {
  const char *nodes[] = {"n1"};
  int up = 0;
  for (int i = 0; i < 300 && !(up = view_consumer("INFO", "")); i++)
    usleep(100 * 1000);
  cr_assert(up, "lark-logs never opened its view's consumer");
  char body[96];
  time_t until = time(NULL) + 9;
  strftime(body, sizeof body, "{\"pause_until\":\"%Y-%m-%dT%H:%M:%SZ\"}",
           gmtime(&until));
  cr_assert(view_consumer("PAUSE", body), "the view's consumer not paused");
  place("early", 1, nodes);
  send_batch("n1", "early-w-0", NULL, 2, NULL, "e");
  wait_logs("lark.log.early.>", 1);
  cr_expect(!file_has(logpath, "refused"), "refused while the view lagged");
  cr_expect(file_has(logpath, "the view is behind LARK_EVENTS"),
            "the batch was not kept for the view");
}

Test(logs, larkctl_merges_by_time_with_prefixes) {
  const char *nodes[] = {"n1", "n2"};
  place("mix", 2, nodes);
  int64_t t0 = bus_wall_ns() - 10 * INT64_C(1000000000);
  int64_t a[3] = {t0 + 1, t0 + 3, t0 + 5}, b[3] = {t0 + 2, t0 + 4, t0 + 6};
  send_batch("n2", "mix-w-1", NULL, 3, b, "b");
  send_batch("n1", "mix-w-0", NULL, 3, a, "a");
  wait_logs("lark.log.mix.>", 2);
  char out[8192];
  const char *all[] = {"job", "mix", NULL};
  cr_assert_eq(larkctl(out, sizeof out, all), 0);
  cr_expect_str_eq(out, "[mix-w-0] a0\n[mix-w-1] b0\n[mix-w-0] a1\n"
                        "[mix-w-1] b1\n[mix-w-0] a2\n[mix-w-1] b2\n");
  const char *tail[] = {"job", "mix", "--tail", "2", NULL};
  cr_assert_eq(larkctl(out, sizeof out, tail), 0);
  cr_expect_str_eq(out, "[mix-w-0] a2\n[mix-w-1] b2\n");
  const char *pod[] = {"pod", "mix-w-1", NULL};
  cr_assert_eq(larkctl(out, sizeof out, pod), 0);
  cr_expect_str_eq(out, "b0\nb1\nb2\n");
  const char *task[] = {"task", "mix-w", "--tail", "1", NULL};
  cr_assert_eq(larkctl(out, sizeof out, task), 0);
  cr_expect_str_eq(out, "[mix-w-1] b2\n");

  const char *js[] = {"job", "mix", "-o", "json", "--tail", "1", NULL};
  cr_assert_eq(larkctl(out, sizeof out, js), 0);
  json_error_t jerr;
  json_t *o = json_loads(out, 0, &jerr);
  cr_assert_not_null(o, "%s: %s", out, jerr.text);
  cr_expect_str_eq(json_string_value(json_object_get(o, "pod")), "mix-w-1");
  cr_expect_str_eq(json_string_value(json_object_get(o, "text")), "b2");
  cr_expect_str_eq(json_string_value(json_object_get(o, "stream")), "stdout");
  cr_expect_str_eq(json_string_value(json_object_get(o, "node")), "n2");
  cr_expect_eq(json_integer_value(json_object_get(o, "ts")), b[2]);
  json_decref(o);

  const char *bad[] = {"job", "Bad.Name", NULL};
  cr_expect_eq(larkctl(out, sizeof out, bad), 1);
  const char *usage[] = {"deployment", "x", NULL};
  cr_expect_eq(larkctl(out, sizeof out, usage), 2);
  const char *none[] = {"job", "nothing-here", NULL};
  cr_expect_eq(larkctl(out, sizeof out, none), 0);
  cr_expect_str_eq(out, "");
}

static int
wait_exit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 10; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    usleep(100 * 1000);
  }
  return -1;
}

Test(logs, follow_ends_when_the_job_succeeds) {
  const char *nodes[] = {"n1"};
  place("fol", 1, nodes);
  send_batch("n1", "fol-w-0", NULL, 2, NULL, "early");
  wait_logs("lark.log.fol.>", 1);
  char bin[512], out[600];
  lt_bin("larkctl", bin, sizeof bin);
  snprintf(out, sizeof out, "%s/follow.out", dir);
  char *argv[] = {bin,           (char *)"--url", srv.url,      (char *)"logs",
                  (char *)"job", (char *)"fol",   (char *)"-f", NULL};
  pid_t pid = lt_spawn(argv, out);
  cr_assert(pid > 0);
  for (int i = 0; i < 100 && !file_has(out, "early1"); i++)
    usleep(100 * 1000);
  cr_expect(file_has(out, "[fol-w-0] early1"));
  send_batch("n1", "fol-w-0", NULL, 2, NULL, "live");
  for (int i = 0; i < 100 && !file_has(out, "live1"); i++)
    usleep(100 * 1000);
  cr_expect(file_has(out, "[fol-w-0] live1"), "followed live");
  cr_expect_eq(wait_exit(pid, 1), -1, "still following while Running");
  job_phase("fol", "Running");
  job_phase("fol", "Succeeded");
  int rc = wait_exit(pid, 20);
  if (rc < 0)
    lt_kill(pid, SIGKILL);
  cr_expect_eq(rc, 0, "-f ends with the Job");
}

Test(logs, a_read_waits_for_the_lines_on_their_way) {
  const char *nodes[] = {"n1"};
  place("way", 1, nodes);
  send_batch("n1", "way-w-0", NULL, 2, NULL, "first");
  wait_logs("lark.log.way.>", 1);
  /* lark-logs falls behind (paused): the node's last lines wait in the
   * ingress when the reader asks; they are taken within its wait */
  cr_assert_eq(kill(logs_pid, SIGSTOP), 0);
  send_batch("n1", "way-w-0", NULL, 2, NULL, "last");
  char bin[512], out[600];
  lt_bin("larkctl", bin, sizeof bin);
  snprintf(out, sizeof out, "%s/way.out", dir);
  char *argv[] = {bin,           (char *)"--url", srv.url, (char *)"logs",
                  (char *)"job", (char *)"way",   NULL};
  pid_t pid = lt_spawn(argv, out);
  cr_assert(pid > 0);
  usleep(1000 * 1000);
  kill(logs_pid, SIGCONT);
  int rc = wait_exit(pid, 20);
  if (rc < 0)
    lt_kill(pid, SIGKILL);
  cr_expect_eq(rc, 0);
  char buf[4096];
  cr_assert_not_null(lt_read_file(out, buf, sizeof buf));
  cr_expect_str_eq(buf, "[way-w-0] first0\n[way-w-0] first1\n"
                        "[way-w-0] last0\n[way-w-0] last1\n");
}

Test(logs, kill9_loses_and_doubles_nothing) {
  const char *nodes[] = {"n1", "n2", "n3"};
  place("crash", 3, nodes);
  for (int i = 0; i < 300; i++) {
    char pod[32], prefix[32];
    snprintf(pod, sizeof pod, "crash-w-%d", i % 3);
    snprintf(prefix, sizeof prefix, "m%d-", i);
    send_batch(nodes[i % 3], pod, NULL, 10, NULL, prefix);
    if (i == 100 || i == 200) {
      lt_kill(logs_pid, SIGKILL);
      logs_pid = start_logs();
    }
  }
  wait_logs("lark.log.crash.>", 300);
  sleep(6); /* past the ingress ack wait: redeliveries would show now */
  cr_expect_eq(count_logs("lark.log.crash.>", NULL, 0), 300);
  char out[1 << 16];
  const char *all[] = {"job", "crash", "--tail", "3000", NULL};
  cr_assert_eq(larkctl(out, sizeof out, all), 0);
  size_t lines = 0;
  for (char *p = out; (p = strchr(p, '\n')); p++)
    lines++;
  cr_expect_eq(lines, 3000);

  bus_status live;
  for (int i = 0; i < 100; i++) { /* the restarted service answers status */
    if (bus_status_query(conn, "logs", 500, &live) == 0 &&
        live.seq >= placement_ver)
      break;
    usleep(100 * 1000);
  }
  lt_expect_replay(conn, "logs", 1, 1);
}
