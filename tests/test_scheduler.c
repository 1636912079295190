/*
 * test_scheduler.c - lark-scheduler as a real process against a real
 * broker: Jobs placed as gangs, dispatched to their nodes, run to
 * Succeeded or Failed from nodes' reports (played here on the ingress),
 * retries, stop and resume, a Job waiting for capacity, refused reports,
 * kill -9 mid-work, and two schedulers at once never double booking.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "cmd_check.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"
#include "service.h"
#include "bed.h"
#include "replay.h"
#include "schedplay.h"
#include "stream.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t sched[2];

static pid_t
start_scheduler(const char *name) {
  return lt_must_start_named("lark-scheduler", srv.url, dir, name);
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "sched", 1000);
  setenv("LARK_NODE_TIMEOUT_MS", "1500", 1);
  sched[0] = start_scheduler("scheduler");
  sched[1] = 0;
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, sched, 2);
}

TestSuite(scheduler, .init = setup, .fini = teardown, .timeout = 120);

/* commands as admin, failing the test when refused */
#define command(kind, verb, json, z) lt_must_command(conn, kind, verb, json, z)

/* ------------------------------------------------------------ helpers */

static void
node(const char *name, int gpus) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"c1\",\"labels\":{\"pool\":\"gpu\"},"
           "\"runtimes\":[\"raw\"],\"capacity\":{\"cpu\":8,\"memory\":16384,"
           "\"gpu\":%d}}}}",
           name, gpus);
  lt_must_apply(conn, "node", json);
}

static void
job(const char *name, int replicas, int gpus, int retries) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"tasks\":[{\"name\":\"a\",\"role\":\"Actor\",\"replicas\":%d,"
           "\"maxRetries\":%d,\"resources\":{\"cpu\":1,\"memory\":128,"
           "\"gpu\":%d},\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]"
           "}}}",
           name, replicas, retries, gpus);
  lt_must_apply(conn, "job", json);
}

/* The value of field of the object kind/name, as the scheduler says; and
 * waiting (up to 15 s) for it to be want. */
#define field(kind, name, key, out, cap)                                       \
  lt_field(conn, kind, lt_sub_of(kind), name, key, out, cap)
#define wait_field(kind, name, key, want)                                      \
  lt_field_becomes(conn, kind, lt_sub_of(kind), name, key, want, 15)

/* What a node sends through its ingress, as lark-edge does. */
#define edge_says(node_name, type, what, data)                                 \
  lt_ingress(conn, node_name, type, what, data)

/* The node pod was placed on, waited for up to 10 s, into bound; the
 * other of gpu-1 and gpu-2 returned. */
static const char *
placed(const char *pod, char *bound, size_t cap) {
  bound[0] = 0;
  for (int i = 0; i < 100 && !bound[0]; i++, usleep(100 * 1000))
    field("pod", pod, "node", bound, cap);
  cr_assert(bound[0], "%s was never placed", pod);
  return strcmp(bound, "gpu-1") ? "gpu-1" : "gpu-2";
}

/* What a node says of a pod on its own ingress subject: {pod}, and with
 * a phase {phase, attempt, exitCode} too. */
static void
pod_says(const char *node_name, const char *type, const char *pod,
         const char *phase, int attempt, int exit_code) {
  char what[256];
  snprintf(what, sizeof what, "pod.%s", pod);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, phase ? 4 : 1);
  bus_pack_kv_str(&b.pk, "pod", pod);
  if (phase) {
    bus_pack_kv_str(&b.pk, "phase", phase);
    bus_pack_kv_uint(&b.pk, "attempt", (uint32_t)attempt);
    bus_pack_kv_int(&b.pk, "exitCode", exit_code);
  }
  edge_says(node_name, type, what, &b.sb);
  bus_packbuf_destroy(&b);
}

/* A node reports a pod's phase. */
static void
report(const char *node_name, const char *pod, const char *phase, int attempt,
       int exit_code) {
  pod_says(node_name, "pod.report", pod, phase, attempt, exit_code);
}

/* A node says it forgot a pod (lark-edge, after a Deleted pod ended). */
static void
forgotten(const char *node_name, const char *pod) {
  pod_says(node_name, "pod.forgotten", pod, NULL, 0, 0);
}

/* ------------------------------------------------------------- tests */

Test(scheduler, job_runs_to_succeeded_and_pods_are_dispatched) {
  node("gpu-1", 2);
  job("train", 2, 1, 0);
  cr_assert(wait_field("pod", "train-a-0", "node", "gpu-1"));
  cr_assert(wait_field("pod", "train-a-1", "node", "gpu-1"));
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event desired;
  memset(&desired, 0, sizeof desired);
  int rc = -1;
  for (int i = 0; i < 50 && rc; i++, usleep(100 * 1000))
    rc = bus_last_event(conn, "LARK_NODE_gpu-1",
                        "lark.node.gpu-1.pod.train-a-1", &desired, &z);
  cr_assert_eq(rc, 0, "no desired state for train-a-1: %s", bus_last_error());
  cr_expect_str_eq(desired.type, "pod.desired");
  char buf[64];
  cr_expect_str_eq(bus_obj_str(&desired.data, "desired", buf, sizeof buf),
                   "Running");
  msgpack_zone_destroy(&z);
  /* each pod describes the Why of the placement that bound it */
  for (int i = 0; i < 2; i++) {
    char pod[32];
    snprintf(pod, sizeof pod, "train-a-%d", i);
    lt_field(conn, "pod", "why", pod, "strategy", buf, sizeof buf);
    cr_expect_str_eq(buf, "spread", "%s's why", pod);
    lt_field(conn, "pod", "why", pod, "capacity", buf, sizeof buf);
    cr_expect_str_eq(buf, "1", "%s's why: the nodes with room", pod);
  }

  job("other", 1, 0, 0); /* its pod's key is as long as train's */
  cr_assert(wait_field("pod", "other-a-0", "node", "gpu-1"));
  lt_field(conn, "pod", "why", "other-a-0", "strategy", buf, sizeof buf);
  cr_expect_str_eq(buf, "spread", "other-a-0's why, kept apart from train's");
  report("gpu-1", "train-a-0", "Running", 0, 0);
  cr_expect(wait_field("job", "train", "phase", "Running"));
  report("gpu-1", "train-a-0", "Succeeded", 0, 0);
  report("gpu-1", "train-a-1", "Succeeded", 0, 0);
  cr_expect(wait_field("job", "train", "phase", "Succeeded"));
  cr_expect(wait_field("task", "train-a", "phase", "Succeeded"));
  cr_expect(wait_field("node", "gpu-1", "pods", "1"), "train's capacity freed");
  uint64_t sent = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_NODE_gpu-1", &sent), 0);
  cr_expect_eq(sent, 3, "each desired state is sent once (3, not %llu)",
               (unsigned long long)sent);
}

Test(scheduler, report_from_the_wrong_node_is_refused) {
  node("gpu-1", 1);
  node("gpu-2", 1);
  job("j", 1, 1, 0);
  char bound[64];
  const char *other = placed("j-a-0", bound, sizeof bound);
  report(other, "j-a-0", "Failed", 0, 1);
  report(bound, "j-a-0", "Running", 0, 0);
  cr_expect(wait_field("pod", "j-a-0", "phase", "Running"));
  char phase[64];
  field("job", "j", "phase", phase, sizeof phase);
  cr_expect_str_neq(phase, "Failed", "a foreign report was applied");
}

/*
 * A burst of reports, as a Job's pods all start and end together: each
 * pod's Running and Succeeded sent back to back, with a stranger's
 * report of each third pod from another node between them. The ingress
 * stores a run of reports together; each lands once, each pod's in the
 * order sent (the Job succeeds, which it would not if a pod's Running
 * came last), no stranger's, and the view replays to the same digest.
 */
Test(scheduler, a_burst_of_reports_lands_once_each_in_order) {
  enum { PODS = 24 };
  char bound[PODS][64], pod[PODS][32];
  const char *other[PODS];
  for (int i = 1; i <= 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "gpu-%d", i);
    node(name, 0);
  }
  job("burst", PODS, 0, 0);
  for (int i = 0; i < PODS; i++) {
    snprintf(pod[i], sizeof pod[i], "burst-a-%d", i);
    bound[i][0] = 0;
    for (int k = 0; k < 100 && !bound[i][0]; k++, usleep(100 * 1000))
      field("pod", pod[i], "node", bound[i], sizeof bound[i]);
    cr_assert(bound[i][0], "%s was never placed", pod[i]);
    other[i] = strcmp(bound[i], "gpu-1") ? "gpu-1" : "gpu-2";
  }
  for (int i = 0; i < PODS; i++) {
    report(bound[i], pod[i], "Running", 0, 0);
    if (i % 3 == 0)
      report(other[i], pod[i], "Failed", 0, 1);
    report(bound[i], pod[i], "Succeeded", 0, 0);
  }
  cr_assert(wait_field("job", "burst", "phase", "Succeeded"));
  cr_expect_eq(
      lt_count_events(conn, "LARK_EVENTS", "lark.ev.pod.>", "pod.phase", NULL),
      2 * PODS, "each report once, no stranger's");
  lt_expect_replay(conn, "scheduler", 20, 0);
}

Test(scheduler, forgotten_pods_are_purged_only_once_deleted_there) {
  node("gpu-1", 2);
  node("gpu-2", 2);
  job("f", 1, 1, 0);
  char bound[64];
  const char *other = placed("f-a-0", bound, sizeof bound);
  for (int i = 0; i < 50 && !lt_desired_there(conn, bound, "f-a-0", 0); i++)
    usleep(100 * 1000);
  cr_assert(lt_desired_there(conn, bound, "f-a-0", 0), "never dispatched");
  report(bound, "f-a-0", "Running", 0, 0);
  cr_assert(wait_field("pod", "f-a-0", "phase", "Running"));
  /* a running pod's desired state stays, whoever says it was forgotten */
  forgotten(bound, "f-a-0");
  forgotten(other, "f-a-0");
  sleep(1);
  cr_expect(lt_desired_there(conn, bound, "f-a-0", 0), "purged while running");
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  command("job", "delete", "{\"name\":\"f\"}", &z);
  msgpack_zone_destroy(&z);
  cr_assert(wait_field("pod", "f-a-0", "desired", "Deleted"));
  /* another node's word still purges nothing */
  forgotten(other, "f-a-0");
  sleep(1);
  cr_expect(lt_desired_there(conn, bound, "f-a-0", 0), "purged by another");
  forgotten(bound, "f-a-0");
  cr_expect(!lt_desired_there(conn, bound, "f-a-0", 10), "never purged");
}

Test(scheduler, failed_pod_is_retried_then_fails_its_job) {
  node("gpu-1", 1);
  job("r", 1, 1, 1);
  cr_assert(wait_field("pod", "r-a-0", "node", "gpu-1"));
  report("gpu-1", "r-a-0", "Failed", 0, 3);
  cr_assert(wait_field("pod", "r-a-0", "attempt", "1"), "retried");
  cr_assert(wait_field("pod", "r-a-0", "node", "gpu-1"), "placed again");
  report("gpu-1", "r-a-0", "Failed", 1, 3);
  cr_expect(wait_field("job", "r", "phase", "Failed"));
  cr_expect(wait_field("task", "r-a", "phase", "Failed"));
}

Test(scheduler, gang_waits_for_capacity_in_submission_order) {
  node("gpu-1", 2);
  job("first", 2, 1, 0);
  cr_assert(wait_field("pod", "first-a-1", "node", "gpu-1"));
  job("big", 2, 1, 0); /* needs both GPUs: waits, all or nothing */
  sleep(1);
  char n0[64], n1[64], reason[256];
  field("pod", "big-a-0", "node", n0, sizeof n0);
  field("pod", "big-a-1", "node", n1, sizeof n1);
  cr_expect_str_eq(n0, "", "a gang was half placed");
  cr_expect_str_eq(n1, "");
  field("job", "big", "reason", reason, sizeof reason);
  cr_expect(reason[0], "a waiting Job says why");
  report("gpu-1", "first-a-0", "Succeeded", 0, 0);
  report("gpu-1", "first-a-1", "Succeeded", 0, 0);
  cr_expect(wait_field("pod", "big-a-0", "node", "gpu-1"));
  cr_expect(wait_field("pod", "big-a-1", "node", "gpu-1"));
}

Test(scheduler, stop_and_resume) {
  node("gpu-1", 1);
  job("s", 1, 1, 0);
  cr_assert(wait_field("pod", "s-a-0", "node", "gpu-1"));
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r = command("job", "stop", "{\"name\":\"s\"}", &z);
  lt_expect_ok(&r);
  cr_expect(wait_field("job", "s", "phase", "Stopped"));
  cr_expect(wait_field("pod", "s-a-0", "desired", "Stopped"));
  cr_expect(wait_field("node", "gpu-1", "pods", "0"));
  r = command("job", "resume", "{\"name\":\"s\"}", &z);
  lt_expect_ok(&r);
  cr_expect(wait_field("pod", "s-a-0", "attempt", "1"));
  cr_expect(wait_field("pod", "s-a-0", "node", "gpu-1"));
  r = command("job", "apply",
              "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":"
              "\"Job\",\"metadata\":{\"name\":\"s\"},\"spec\":{\"tasks\":[{"
              "\"name\":\"b\",\"role\":\"Actor\",\"runtime\":{\"raw\":{"
              "\"entrypoint\":[\"true\"]}}}]}}}",
              &z);
  const msgpack_object *e = bus_obj_get(&r, "error");
  cr_assert_not_null(e, "a changed spec must be refused");
  char code[32];
  cr_expect_str_eq(bus_obj_str(e, "code", code, sizeof code), "EXISTS");
  msgpack_zone_destroy(&z);
}

Test(scheduler, kill9_midway_and_replay_verify) {
  node("gpu-1", 4);
  node("gpu-2", 4);
  for (int i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", i);
    job(name, 1, 1, 0);
    if (i == 2) {
      lt_kill(sched[0], SIGKILL);
      sched[0] = start_scheduler("scheduler");
    }
  }
  for (int i = 0; i < 6; i++) {
    char pod[16], bound[64];
    snprintf(pod, sizeof pod, "k%d-a-0", i);
    cr_assert(wait_field("pod", pod, "attempt", "0"));
    for (int w = 0;
         w < 100 && !(field("pod", pod, "node", bound, 64), bound[0]); w++)
      usleep(100 * 1000);
    cr_expect(bound[0], "%s was never placed", pod);
  }
  char a[16], b[16];
  field("node", "gpu-1", "pods", a, sizeof a);
  field("node", "gpu-2", "pods", b, sizeof b);
  cr_expect_eq(atoi(a) + atoi(b), 6, "every pod booked exactly once");
  lt_expect_replay(conn, "scheduler", 20, 0);
}

Test(scheduler, two_schedulers_never_double_book) {
  sched[1] = start_scheduler("scheduler-b");
  node("gpu-1", 2);
  for (int i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "d%d", i);
    job(name, 1, 1, 0);
  }
  sleep(2);
  int bound = 0;
  for (int i = 0; i < 6; i++) {
    char pod[16], n[64];
    snprintf(pod, sizeof pod, "d%d-a-0", i);
    field("pod", pod, "node", n, sizeof n);
    bound += n[0] != 0;
  }
  cr_expect_eq(bound, 2, "2 GPUs, %d single-GPU pods bound", bound);
  /* the placement log itself: a replay books at most the capacity */
  lt_expect_replay(conn, "scheduler", 1, 0);
}

static void
edge_register(const char *name) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Node\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cluster\":\"c1\","
           "\"runtimes\":[\"raw\"],\"capacity\":{\"cpu\":8,"
           "\"memory\":16384,\"gpu\":1}}}",
           name);
  json_t *j = json_loads(json, 0, NULL);
  bus_packbuf b;
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, j);
  json_decref(j);
  edge_says(name, "node.registered", "node", &b.sb);
  bus_packbuf_destroy(&b);
}

static void
edge_beat(const char *name) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_sbuffer_write(&sb, "\x80", 1);
  edge_says(name, "node.heartbeat", "node", &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* Wait (up to 5 s) for the last desired state of pod in node_name's
 * stream to be Stopped; its desired state and attempt into out, attempt. */
static void
last_desired(const char *node_name, const char *pod, char *out, size_t cap,
             uint64_t *attempt) {
  char stream[128], subject[256];
  snprintf(stream, sizeof stream, "LARK_NODE_%s", node_name);
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node_name, pod);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event d;
  int rc = -1;
  out[0] = 0;
  *attempt = 99;
  for (int i = 0; i < 50 && strcmp(out, "Stopped"); i++, usleep(100 * 1000))
    if (!(rc = bus_last_event(conn, stream, subject, &d, &z))) {
      bus_obj_str(&d.data, "desired", out, cap);
      const msgpack_object *a = bus_obj_get(&d.data, "attempt");
      if (a && a->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        *attempt = a->via.u64;
    }
  cr_assert_eq(rc, 0, "no desired state for %s: %s", pod, bus_last_error());
  cr_expect_str_eq(d.type, "pod.desired");
  msgpack_zone_destroy(&z);
}

/* Expect node_name told to stop pod's attempt 0; why is the message when
 * it is not. */
static void
expect_stopped(const char *node_name, const char *pod, const char *why) {
  char desired[64];
  uint64_t attempt;
  last_desired(node_name, pod, desired, sizeof desired, &attempt);
  cr_expect_str_eq(desired, "Stopped", "%s", why);
  cr_expect_eq(attempt, 0, "the stop is for attempt 0");
}

/* An edge node registered and sending heartbeats: Ready. */
static void
edge_ready(const char *name) {
  edge_register(name);
  edge_beat(name);
  cr_assert(wait_field("node", name, "status", "Ready"));
}

Test(scheduler, silent_node_goes_notready_and_its_pod_runs_elsewhere) {
  edge_ready("edge-a");
  job("lost", 1, 1, 1); /* one retry allowed */
  cr_assert(wait_field("pod", "lost-a-0", "node", "edge-a"));
  node("gpu-9", 1); /* registered by hand: no heartbeats expected */
  /* edge-a falls silent: NotReady after 1.5 s, its pod fails, retries */
  cr_expect(wait_field("node", "edge-a", "status", "NotReady"));
  cr_expect(wait_field("pod", "lost-a-0", "node", "gpu-9"));
  cr_expect(wait_field("pod", "lost-a-0", "attempt", "1"));
  char n[64];
  /* the lost attempt, placed again elsewhere, is stopped where it ran */
  expect_stopped("edge-a", "lost-a-0",
                 "the lost attempt is not stopped on edge-a");
  field("node", "edge-a", "pods", n, sizeof n);
  cr_expect_str_eq(n, "0", "the lost node's capacity is freed");
  edge_beat("edge-a"); /* back: Ready again */
  cr_expect(wait_field("node", "edge-a", "status", "Ready"));
  field("node", "gpu-9", "status", n, sizeof n);
  cr_expect_str_eq(n, "Ready", "a node registered by hand stays Ready");
}

/*
 * A pod with no retry left on a node that falls silent: Failed (NodeLost)
 * and its Job with it, and the node is told to stop it - a node cut off
 * runs its pods on, and on its return must not keep one no one sees.
 */
Test(scheduler, lost_pod_with_no_retry_left_is_stopped_on_its_node) {
  edge_ready("edge-n");
  job("once", 1, 0, 0);
  cr_assert(wait_field("pod", "once-a-0", "node", "edge-n"));
  report("edge-n", "once-a-0", "Running", 0, 0);
  cr_assert(wait_field("pod", "once-a-0", "phase", "Running"));
  cr_assert(wait_field("node", "edge-n", "status", "NotReady"));
  cr_assert(wait_field("pod", "once-a-0", "phase", "Failed"));
  cr_expect(wait_field("job", "once", "phase", "Failed"));
  char buf[128];
  field("pod", "once-a-0", "reason", buf, sizeof buf);
  cr_expect(strstr(buf, "NodeLost"), "reason: %s", buf);
  expect_stopped("edge-n", "once-a-0",
                 "the lost pod is not stopped on its node");
  field("pod", "once-a-0", "phase", buf, sizeof buf);
  cr_expect_str_eq(buf, "Failed");
  lt_expect_replay(conn, "scheduler", 25, 0);
}

/*
 * A Job taken back off its nodes (job.unplaced, as decide writes it when
 * its Domain runs out of addresses) tells each node to stop the attempt
 * it was sent: the pod moves on to its next attempt, waiting for a node
 * (the only one is cordoned here), and the stop must still name the old
 * attempt and reach the node it ran on.
 */
Test(scheduler, an_unplaced_jobs_pods_are_stopped_on_their_nodes) {
  edge_ready("edge-u");
  job("unp", 1, 0, 0);
  cr_assert(wait_field("pod", "unp-a-0", "node", "edge-u"));
  char buf[128];
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  command("node", "cordon", "{\"name\":\"edge-u\"}", &z);
  msgpack_zone_destroy(&z);
  cr_assert(wait_field("node", "edge-u", "cordoned", "true"));
  bus_ev_job_unplaced u = {.pool = BUS_STR("default"),
                           .job = BUS_STR("unp"),
                           .has_reason = 1,
                           .reason = BUS_STR("its domain has no address")};
  lt_as_scheduler(conn, conn, "lark.ev.placement.default", BUS_T_JOB_UNPLACED,
                  &u);
  cr_assert(wait_field("pod", "unp-a-0", "attempt", "1"));
  field("pod", "unp-a-0", "node", buf, sizeof buf);
  cr_expect_str_eq(buf, "", "unplaced, the pod waits for a node");
  expect_stopped("edge-u", "unp-a-0",
                 "the unplaced pod is not stopped on edge-u");
  field("node", "edge-u", "pods", buf, sizeof buf);
  cr_expect_str_eq(buf, "0", "the unplaced pod's capacity is freed");
  lt_expect_replay(conn, "scheduler", 25, 0);
}

/*
 * A node falls silent with one pod of its Job ended and two running: the
 * two fail for the lost node and wait for attempt 1. The node's queued
 * report of attempt 0 (Succeeded) comes after it was given up on and
 * changes nothing; each retried pod is placed, one job.placed at a time
 * (the Job's other pod has ended), and the Job succeeds with them.
 */
Test(scheduler, late_report_of_a_lost_attempt_and_every_retry_is_placed) {
  edge_ready("edge-l");
  job("late", 3, 0, 1);
  const char *pods[] = {"late-a-0", "late-a-1", "late-a-2"};
  for (int i = 0; i < 3; i++)
    cr_assert(wait_field("pod", pods[i], "node", "edge-l"));
  report("edge-l", "late-a-0", "Succeeded", 0, 0);
  report("edge-l", "late-a-1", "Running", 0, 0);
  report("edge-l", "late-a-2", "Running", 0, 0);
  cr_assert(wait_field("pod", "late-a-0", "phase", "Succeeded"));
  cr_assert(wait_field("pod", "late-a-2", "phase", "Running"));
  node("gpu-9", 1); /* registered by hand: stays Ready */
  cr_assert(wait_field("node", "edge-l", "status", "NotReady"));
  cr_assert(wait_field("pod", "late-a-1", "attempt", "1"));
  /* delivered late: attempt 0, after the node was given up on */
  report("edge-l", "late-a-1", "Succeeded", 0, 0);
  report("edge-l", "late-a-2", "Succeeded", 0, 0);
  for (int i = 1; i < 3; i++) {
    cr_assert(wait_field("pod", pods[i], "node", "gpu-9"), "%s retried",
              pods[i]);
    cr_assert(wait_field("pod", pods[i], "attempt", "1"));
  }
  char phase[64];
  field("job", "late", "phase", phase, sizeof phase);
  cr_expect_str_neq(phase, "Succeeded", "a lost attempt's report counted");
  for (int i = 1; i < 3; i++) {
    report("gpu-9", pods[i], "Running", 1, 0);
    report("gpu-9", pods[i], "Succeeded", 1, 0);
  }
  cr_expect(wait_field("job", "late", "phase", "Succeeded"));
  cr_expect(wait_field("task", "late-a", "phase", "Succeeded"));
  lt_expect_replay(conn, "scheduler", 1, 0);
}

static pid_t
start_dag(void) {
  return lt_must_start("lark-dag", srv.url, dir, "dag", "dag.log", NULL);
}

/* The workflow's phase, as lark-dag says. */
static void
workflow_phase(const char *name, char *out, size_t cap) {
  char json[128];
  snprintf(json, sizeof json, "{\"name\":\"%s\"}", name);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = command("workflow", "describe", json, &z);
  out[0] = 0;
  bus_obj_str(bus_obj_get(&r, "result"), "phase", out, cap);
  msgpack_zone_destroy(&z);
}

/* Run the pod of a one-pod Job to the end, as its node would. */
static void
run_pod(const char *pod, const char *phase, int code) {
  char node_name[64];
  placed(pod, node_name, sizeof node_name);
  report(node_name, pod, "Running", 0, 0);
  report(node_name, pod, phase, 0, code);
}

Test(scheduler, workflow_runs_through_dag_and_scheduler) {
  sched[1] = start_dag();
  node("gpu-1", 2);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r =
      command("workflow", "apply",
              "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":"
              "\"Workflow\",\"metadata\":{\"name\":\"wf\"},\"spec\":{"
              "\"jobTemplates\":["
              "{\"name\":\"eval\",\"dependencies\":[\"train\"],\"spec\":{"
              "\"tasks\":[{\"name\":\"e\",\"role\":\"Rollout\",\"runtime\":"
              "{\"raw\":{\"entrypoint\":[\"true\"]}}}]}},"
              "{\"name\":\"train\",\"spec\":{\"tasks\":[{\"name\":\"t\","
              "\"role\":\"Actor\",\"runtime\":{\"raw\":{\"entrypoint\":"
              "[\"true\"]}}}]}}]}}}",
              &z);
  lt_expect_ok(&r);
  msgpack_zone_destroy(&z);
  run_pod("wf-train-t-0", "Succeeded", 0); /* train first */
  cr_expect(wait_field("job", "wf-train", "phase", "Succeeded"));
  run_pod("wf-eval-e-0", "Succeeded", 0); /* then eval, submitted by dag */
  cr_expect(wait_field("job", "wf-eval", "phase", "Succeeded"));
  char phase[32] = "";
  for (int i = 0; i < 100 && strcmp(phase, "Succeeded"); i++) {
    workflow_phase("wf", phase, sizeof phase);
    usleep(100 * 1000);
  }
  cr_expect_str_eq(phase, "Succeeded");
}

/* A run report's body as lark-edge sends it: {kind: metric, values: {}},
 * or with step >= 0 {kind: metric, values: {step}}. */
static void
metric(bus_packbuf *b, int step) {
  bus_packbuf_init(b);
  msgpack_pack_map(&b->pk, 2);
  bus_pack_kv_str(&b->pk, "kind", "metric");
  bus_pack_str(&b->pk, "values");
  msgpack_pack_map(&b->pk, step >= 0);
  if (step >= 0)
    bus_pack_kv_int(&b->pk, "step", step);
}

/* A broker that cannot store now (here LARK_RUNS is gone, which the
 * broker answers as it answers a cluster electing a leader: no
 * responders) has refused nothing: the pod's report waits in the
 * ingress, and lands, before the reports after it, once it can. */
Test(scheduler, a_report_the_broker_cannot_store_yet_is_kept) {
  node("gpu-1", 1);
  job("keep", 1, 0, 0);
  cr_assert(wait_field("pod", "keep-a-0", "node", "gpu-1"));
  cr_assert_eq(bus_stream_delete(conn, "LARK_RUNS"), 0, "%s", bus_last_error());
  bus_packbuf b;
  metric(&b, -1);
  edge_says("gpu-1", "run.reported", "run.keep-a-0", &b.sb);
  bus_packbuf_destroy(&b);
  report("gpu-1", "keep-a-0", "Succeeded", 0, 0);
  usleep(1500 * 1000); /* the scheduler has tried, and tries again */
  char phase[64] = "";
  field("job", "keep", "phase", phase, sizeof phase);
  cr_expect_str_neq(phase, "Succeeded", "a report overtook the one before");
  cr_assert_eq(lt_streams(conn, 1000), 0, "%s", bus_last_error());
  uint64_t runs = 0;
  for (int i = 0; i < 100 && runs == 0; i++, usleep(100 * 1000))
    cr_assert_eq(bus_stream_last_seq(conn, "LARK_RUNS", &runs), 0);
  cr_expect_eq(runs, 1, "the pod's report was dropped");
  cr_expect(wait_field("job", "keep", "phase", "Succeeded"));
}

/* A pod's run report through node_name's ingress, as lark-edge sends it:
 * {kind: metric, values: {step}}, with the given id. */
static void
run_says(const char *node_name, const char *pod, int step, const char *id) {
  char subject[256];
  snprintf(subject, sizeof subject, "lark.in.%s.sched.run.%s", node_name, pod);
  bus_packbuf b;
  metric(&b, step);
  bus_event ev;
  char fresh_id[33];
  lt_event(&ev, fresh_id, "run.reported", node_name, 1, 0, &b.sb);
  ev.id = id;
  cr_assert_eq(bus_append_async(conn, subject, &ev, BUS_APPEND_NOCHECK), 0,
               "%s", bus_last_error());
  bus_packbuf_destroy(&b);
}

/* What runs_in_order() checks against: the actor, and how many came. */
typedef struct in_order {
  const char *actor;
  size_t seen;
} in_order;

static void
next_in_order(const bus_event *ev, void *arg) {
  in_order *k = arg;
  const msgpack_object *values = bus_obj_get(&ev->data, "values");
  cr_expect_eq(bus_obj_int(values, "step", -1), (int64_t)k->seen,
               "report %zu out of order", k->seen);
  cr_expect_str_eq(ev->actor, k->actor);
  k->seen++;
}

/* Every run report of job in LARK_RUNS, checked to be steps 0..n-1 in
 * order, each once, with the pod as actor; returns how many there are. */
static size_t
runs_in_order(const char *job, const char *actor, int n) {
  in_order k = {actor, 0};
  cr_assert_eq(lt_read_runs(conn, job, 2000, 1, next_in_order, &k), 0, "%s",
               bus_last_error());
  cr_expect_eq(k.seen, (size_t)n, "%zu reports stored, not %d", k.seen, n);
  return k.seen;
}

Test(scheduler, run_reports_land_once_in_order_and_strangers_are_refused) {
  node("gpu-1", 0);
  node("gpu-2", 0);
  job("rl", 1, 0, 0);
  char on[64], id10[33] = "";
  const char *other = placed("rl-a-0", on, sizeof on);
  /* the scheduler paused: what follows is fetched in full batches */
  cr_assert_eq(kill(sched[0], SIGSTOP), 0);
  enum { N = 700 };
  for (int step = 0; step < N; step++) {
    char id[33];
    bus_event_new_id(id);
    if (step == 10)
      memcpy(id10, id, sizeof id);
    run_says(on, "rl-a-0", step, id);
    if (step == 200) { /* another node cannot speak for the pod */
      bus_event_new_id(id);
      run_says(other, "rl-a-0", 9999, id);
    }
    if (step == 300) /* the node sends an earlier report again */
      run_says(on, "rl-a-0", 10, id10);
    if (step == 400) /* and a phase between the reports */
      report(on, "rl-a-0", "Running", 0, 0);
  }
  cr_assert_eq(bus_append_flush(conn, 10000, NULL), 0, "%s", bus_last_error());
  cr_assert_eq(kill(sched[0], SIGCONT), 0);
  uint64_t last = 0;
  for (int i = 0; i < 200 && last < N; i++, usleep(100 * 1000))
    cr_assert_eq(bus_stream_last_seq(conn, "LARK_RUNS", &last), 0);
  cr_expect(wait_field("job", "rl", "phase", "Running"));
  usleep(500 * 1000); /* room for a stray one to land */
  runs_in_order("rl", "pod:rl-a-0", N);
}
