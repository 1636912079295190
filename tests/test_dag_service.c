/*
 * test_dag_service.c - lark-dag against a real broker, with the test
 * playing the scheduler's part (it appends job.phase events itself):
 * train -> eval runs in order, a failure skips dependents and fails the
 * Workflow, a cycle is refused with the cycle named, and a kill -9 of
 * lark-dag mid-run never submits a Job twice; the live view equals its
 * replay.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "cmd.h"
#include "dag.h"
#include "events.h"
#include "natsd.h"
#include "proc.h"
#include "replay.h"
#include "stream.h"
#include "workflow.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], logpath[512];
static pid_t dag_pid;

static pid_t
start_dag(void) {
  const char *extra[] = {"--log-level", "debug", NULL};
  return lt_must_start("lark-dag", srv.url, dir, "view", "dag.log", extra);
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "dagsvc", 1000);
  snprintf(logpath, sizeof logpath, "%s/dag.log", dir);
  dag_pid = start_dag();
}

/* Stop lark-dag cleanly: it exits 0, and its log holds no sanitizer
 * report. */
static void
stop_dag(void) {
  int st = lt_kill(dag_pid, SIGTERM);
  dag_pid = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lark-dag exit status %d",
            st);
  FILE *f = fopen(logpath, "r");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) {
    cr_expect(!strstr(line, "Sanitizer") && !strstr(line, "runtime error"),
              "%s", line);
  }
  if (f)
    fclose(f);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, &dag_pid, 1);
}

TestSuite(dag_service, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

/* {key, resource: Workflow name} with templates "a; b: a; c: a b" and one
 * task of `replicas` each. */
static void
pack_apply(msgpack_sbuffer *sb, const char *key, const char *name,
           const char *dagspec, int replicas) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "key", key);
  bus_pack_str(&pk, "resource");
  lt_pack_workflow(&pk, name, dagspec, replicas);
}

/* Request lark.cmd.alice.workflow.<verb>; the reply, kept in z. */
static msgpack_object
call(const char *verb, const msgpack_sbuffer *body, msgpack_zone *z) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.cmd.alice.workflow.%s", verb);
  msgpack_object o; /* lark-dag may still be starting: 50 tries */
  int rc = lt_request(conn, subject, body->data, body->size, 3000, 50, z, &o);
  cr_assert_eq(rc, 0, "request %s: %s", subject, bus_last_error());
  return o;
}

static msgpack_object
apply(const char *key, const char *name, const char *dagspec, int replicas,
      msgpack_zone *z) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_apply(&sb, key, name, dagspec, replicas);
  msgpack_object r = call("apply", &sb, z);
  msgpack_sbuffer_destroy(&sb);
  return r;
}

static msgpack_object
named(const char *verb, const char *key, const char *name, msgpack_zone *z) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "key", key);
  bus_pack_kv_str(&b.pk, "name", name);
  msgpack_object r = call(verb, &b.sb, z);
  bus_packbuf_destroy(&b);
  return r;
}

/* The last event on lark.ev.job.<job>: its type into type, seq returned
 * (0 when none). */
static uint64_t
job_last(const char *job, char *type, size_t cap) {
  char subject[300];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  return lt_last_on(conn, "LARK_EVENTS", subject, type, cap);
}

/* Wait until the Job was submitted; its seq. */
static uint64_t
wait_submitted(const char *job) {
  char type[64];
  for (int i = 0; i < 200; i++) {
    uint64_t seq = job_last(job, type, sizeof type);
    if (seq && !strcmp(type, "job.submitted"))
      return seq;
    usleep(50 * 1000);
  }
  cr_assert_fail("%s was never submitted", job);
  return 0;
}

/* The scheduler's part: job.phase on the Job's subject, chained on prev. */
static uint64_t
set_phase(const char *job, uint64_t prev, const char *phase) {
  char subject[300], id[33];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  msgpack_sbuffer sb;
  lt_pack_field(&sb, "phase", phase);
  bus_event ev;
  lt_event(&ev, id, "job.phase", "lark-scheduler", 1, prev, &sb);
  uint64_t seq = 0;
  int rc = bus_append(conn, subject, &ev, BUS_APPEND_CHECK, &seq, NULL);
  cr_assert_eq(rc, 0, "job.phase %s: %s", job, bus_last_error());
  msgpack_sbuffer_destroy(&sb);
  return seq;
}

static void
run_job(const char *job, const char *final) {
  uint64_t v = wait_submitted(job);
  v = set_phase(job, v, "Running");
  set_phase(job, v, final);
}

/* The Workflow's phase from lark-dag's describe (into out). */
static const char *
wf_phase(const char *name, char *out, size_t cap, msgpack_object *desc,
         msgpack_zone *z) {
  msgpack_sbuffer sb;
  lt_pack_field(&sb, "name", name);
  msgpack_object r = call("describe", &sb, z);
  msgpack_sbuffer_destroy(&sb);
  const msgpack_object *res = bus_obj_get(&r, "result");
  out[0] = 0;
  if (res) {
    bus_obj_str(res, "phase", out, cap);
    if (desc)
      *desc = *res;
  }
  return out;
}

static void
wait_phase(const char *name, const char *want) {
  char phase[32] = "";
  for (int i = 0; i < 200; i++) {
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    wf_phase(name, phase, sizeof phase, NULL, &z);
    msgpack_zone_destroy(&z);
    if (!strcmp(phase, want))
      return;
    usleep(50 * 1000);
  }
  cr_assert_fail("workflow %s is %s, not %s", name, phase, want);
}

/* How many events of type are on subjects under filter, in the stream. */
static int
count_events(const char *filter, const char *type, const char *subject) {
  long n = lt_count_events(conn, "LARK_EVENTS", filter, type, subject);
  cr_assert_geq(n, 0, "%s", bus_last_error());
  return (int)n;
}

static void
wait_caught_up(void) {
  uint64_t last = 0;
  bus_status st = {0};
  for (int i = 0; i < 300; i++) {
    bus_stream_last_seq(conn, "LARK_EVENTS", &last);
    if (bus_status_query(conn, "dag", 500, &st) == 0 && st.seq >= last &&
        st.outbox == 0)
      return;
    usleep(100 * 1000);
  }
  cr_assert_fail("lark-dag did not catch up to %llu (at %llu)",
                 (unsigned long long)last, (unsigned long long)st.seq);
}

static void
verify_replay(void) {
  wait_caught_up();
  lt_expect_replay(conn, "dag", 1, 1);
}

static const char *
err_code(const msgpack_object *r, char *buf, size_t cap) {
  buf[0] = 0;
  bus_obj_str(bus_obj_get(r, "error"), "code", buf, cap);
  return buf;
}

/* Run larkctl with up to 6 arguments into out; its exit code. */
static char out[1 << 16], errout[8192];

static int
ctl(const char *a0, const char *a1, const char *a2, const char *a3,
    const char *a4, const char *a5) {
  char larkctl[512];
  lt_bin("larkctl", larkctl, sizeof larkctl);
  char *argv[8] = {larkctl};
  const char *args[] = {a0, a1, a2, a3, a4, a5};
  int n = 1;
  for (int i = 0; i < 6 && args[i]; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  setenv("LARK_URL", srv.url, 1);
  setenv("LARK_JS_WAIT_MS", "500", 1);
  return lt_run(argv, out, sizeof out, errout, sizeof errout);
}

/* -------------------------------------------------------------- tests */

Test(dag_service, train_then_eval_runs_in_order) {
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  char s[256];
  msgpack_object r = apply("k1", "rl", "eval: train; train", 1, &z);
  cr_assert(bus_obj_get(&r, "ok"), "apply: %s", err_code(&r, s, sizeof s));
  uint64_t v = set_phase("rl-train", wait_submitted("rl-train"), "Running");
  wait_phase("rl", "Running");
  usleep(300 * 1000);
  char type[64], mid[64];
  cr_expect_eq(job_last("rl-eval", type, sizeof type), 0,
               "eval waits for train");
  int64_t at = bus_wall_ns();
  snprintf(mid, sizeof mid, "%lld.%09lld", (long long)(at / 1000000000),
           (long long)(at % 1000000000));
  usleep(300 * 1000);
  set_phase("rl-train", v, "Succeeded");
  run_job("rl-eval", "Succeeded");
  wait_phase("rl", "Succeeded");
  cr_expect_eq(count_events("lark.ev.job.>", "job.submitted", NULL), 2);

  /* the same again is unchanged; the same key again lands once */
  r = apply("k2", "rl", "eval: train; train", 1, &z);
  cr_expect(bus_obj_get(&r, "ok"));
  const msgpack_object *u = bus_obj_get(&r, "unchanged");
  cr_expect(u && u->type == MSGPACK_OBJECT_BOOLEAN && u->via.boolean);
  /* a changed spec is refused with the differences */
  r = apply("k3", "rl", "eval: train; train", 4, &z);
  cr_expect_str_eq(err_code(&r, s, sizeof s), "EXISTS");
  const msgpack_object *d = bus_obj_get(bus_obj_get(&r, "error"), "details");
  cr_assert(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size == 2);
  cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "path", s, sizeof s),
                   "spec.jobTemplates[0].spec.tasks[0].replicas");
  cr_expect_eq(count_events("lark.ev.workflow.>", "workflow.submitted", NULL),
               1);

  /* larkctl reads the view: live, and as it was */
  cr_assert_eq(ctl("get", "workflows", NULL, NULL, NULL, NULL), 0, "%s",
               errout);
  cr_expect(strstr(out, "JOBS") && strstr(out, "Succeeded") &&
                strstr(out, "2/2"),
            "%s", out);
  cr_assert_eq(ctl("describe", "wf", "rl", "-o", "json", NULL), 0, "%s",
               errout);
  cr_expect(strstr(out, "\"template\":\"eval\""), "%s", out);
  cr_assert_eq(ctl("get", "workflows", "--at", mid, "-o", "json"), 0, "%s",
               errout);
  cr_expect(strstr(out, "\"phase\":\"Running\"") &&
                strstr(out, "\"progress\":\"0/2\""),
            "%s", out);
  cr_expect_eq(ctl("describe", "workflow", "nope", NULL, NULL, NULL), 1);
  verify_replay();
  stop_dag();
  msgpack_zone_destroy(&z);
}

Test(dag_service, failure_skips_dependents_and_fails_the_workflow) {
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  char s[256];
  msgpack_object r = apply("f1", "fw", "a; b: a; c: b; side", 1, &z);
  cr_assert(bus_obj_get(&r, "ok"), "apply: %s", err_code(&r, s, sizeof s));
  run_job("fw-a", "Failed");
  run_job("fw-side", "Succeeded");
  wait_phase("fw", "Failed");
  msgpack_object desc;
  wf_phase("fw", s, sizeof s, &desc, &z);
  cr_expect_str_eq(bus_obj_str(&desc, "reason", s, sizeof s),
                   "failed: a; skipped: b, c");
  const msgpack_object *jobs = bus_obj_get(&desc, "jobs");
  cr_assert(jobs && jobs->via.array.size == 4);
  int skipped = 0;
  for (uint32_t i = 0; i < jobs->via.array.size; i++)
    skipped += !strcmp(
        bus_obj_str(&jobs->via.array.ptr[i], "phase", s, sizeof s), "Skipped");
  cr_expect_eq(skipped, 2);
  char type[64];
  cr_expect_eq(job_last("fw-b", type, sizeof type), 0, "b never submitted");
  cr_expect_eq(count_events("lark.ev.workflow.fw", "workflow.phase", NULL) > 0,
               1);

  /* stop stops the failed Job; resume retries it */
  r = named("stop", "f2", "fw", &z);
  cr_expect(bus_obj_get(&r, "ok"));
  wait_phase("fw", "Stopped");
  for (int i = 0; i < 100 && strcmp(type, "job.stopped"); i++) {
    job_last("fw-a", type, sizeof type);
    usleep(50 * 1000);
  }
  cr_expect_str_eq(type, "job.stopped");
  r = named("resume", "f3", "fw", &z);
  cr_expect(bus_obj_get(&r, "ok"));
  for (int i = 0; i < 100 && strcmp(type, "job.resumed"); i++) {
    job_last("fw-a", type, sizeof type);
    usleep(50 * 1000);
  }
  cr_expect_str_eq(type, "job.resumed");
  verify_replay();
  stop_dag();
  msgpack_zone_destroy(&z);
}

Test(dag_service, cycle_is_refused_with_the_cycle_named) {
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  char s[256];
  msgpack_object r = apply("c1", "cyc", "a: c; b: a; c: b", 1, &z);
  cr_expect_str_eq(err_code(&r, s, sizeof s), "INVAL");
  const msgpack_object *d = bus_obj_get(bus_obj_get(&r, "error"), "details");
  cr_assert(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size == 1);
  cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "reason", s, sizeof s),
                   "cycle: a -> b -> c -> a");
  r = apply("c2", "cyc", "a: a", 1, &z);
  d = bus_obj_get(bus_obj_get(&r, "error"), "details");
  cr_assert(d && d->via.array.size == 1);
  cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "reason", s, sizeof s),
                   "cycle: a -> a");
  r = apply("c3", "cyc", "a: nope", 1, &z);
  cr_expect_str_eq(err_code(&r, s, sizeof s), "INVAL");
  r = named("stop", "c4", "nothere", &z);
  cr_expect_str_eq(err_code(&r, s, sizeof s), "NOT_FOUND");
  cr_expect_eq(count_events("lark.ev.>", "workflow.submitted", NULL), 0);
  stop_dag();
  msgpack_zone_destroy(&z);
}

#define WIDE 12

Test(dag_service, kill9_mid_run_never_submits_a_job_twice) {
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  char s[256], spec[2048] = "root", job[64], type[64];
  /* root -> t0..t11 -> last */
  for (int i = 0; i < WIDE; i++) {
    size_t len = strlen(spec);
    snprintf(spec + len, sizeof spec - len, "; t%d: root", i);
  }
  size_t len = strlen(spec);
  snprintf(spec + len, sizeof spec - len, "; last:");
  for (int i = 0; i < WIDE; i++) {
    len = strlen(spec);
    snprintf(spec + len, sizeof spec - len, " t%d", i);
  }
  msgpack_object r = apply("w1", "big", spec, 1, &z);
  cr_assert(bus_obj_get(&r, "ok"), "apply: %s", err_code(&r, s, sizeof s));
  run_job("big-root", "Succeeded");
  for (int i = 0; i < WIDE; i++) {
    snprintf(job, sizeof job, "big-t%d", i);
    uint64_t v = wait_submitted(job);
    if (i == 3 || i == 8) { /* kill while the fan-in is being decided */
      lt_kill(dag_pid, SIGKILL);
      dag_pid = start_dag();
    }
    v = set_phase(job, v, "Running");
    set_phase(job, v, "Succeeded");
  }
  lt_kill(dag_pid, SIGKILL);
  dag_pid = start_dag();
  run_job("big-last", "Succeeded");
  wait_phase("big", "Succeeded");
  cr_expect_eq(job_last("big-last", type, sizeof type) > 0, 1);
  cr_expect_eq(count_events("lark.ev.job.>", "job.submitted", NULL), WIDE + 2,
               "every Job submitted exactly once");
  cr_expect_eq(
      count_events("lark.ev.job.>", "job.submitted", "lark.ev.job.big-last"),
      1);
  verify_replay();
  stop_dag();
  msgpack_zone_destroy(&z);
}
