/*
 * test_devices_service.c - lark-devices and lark-scheduler as real
 * processes against a real broker, the test playing the node (its
 * registration, reports and pods' requests on the ingress) and, where the
 * scheduler has no Job to place, the placement log: an operator's command
 * becomes robot.commanded and a robot.desired on the node's own stream;
 * reports become robot.* and camera.* events; a held robot is refused
 * without force and taken with it (the force recorded); the holder's pod
 * asks through its node and its Job's end stops the robot; a request from
 * a pod that does not hold the robot and a report from another node land
 * nothing; NotReady shows Unknown; kill -9 mid-stream applies nothing
 * twice; a Job the scheduler places on the robot holds it until its pod
 * ends; a real lark-edge registers its device file; and the view replays
 * to the same digest.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd.h"
#include "cmd_check.h"
#include "events.h"
#include "files.h"
#include "json.h"
#include "proc.h"
#include "schedplay.h"
#include "stream.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[3];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "devsvc", 60000);
  memset(procs, 0, sizeof procs);
  procs[0] = lt_must_start_named("lark-scheduler", srv.url, dir, "scheduler");
  procs[1] = lt_must_start_named("lark-devices", srv.url, dir, "devices");
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 3);
}

TestSuite(devices_service, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ the node */

/* What node sends on lark.in.<node>.<what>: type with the JSON data. */
static void
node_says(const char *node, const char *what, const char *type,
          const char *json) {
  char subject[256], id[33];
  json_t *j = json_loads(json, 0, NULL);
  cr_assert_not_null(j, "%s", json);
  bus_packbuf b;
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, j);
  json_decref(j);
  snprintf(subject, sizeof subject, "lark.in.%s.%s", node, what);
  bus_event ev;
  lt_event(&ev, id, type, node, 1, 0, &b.sb);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  bus_packbuf_destroy(&b);
}

/* node with a robot arm-1 and a camera wrist, or (bare) no device. */
static void
register_node(const char *node, int bare) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Node\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cluster\":\"c1\","
           "\"runtimes\":[\"raw\"],\"capacity\":{\"cpu\":8,\"memory\":"
           "16384},\"devices\":[%s]}}",
           node,
           bare ? ""
                : "{\"name\":\"arm-1\",\"kind\":\"ros\",\"modes\":"
                  "[\"idle\",\"pick\"]},{\"name\":\"wrist\",\"kind\":"
                  "\"camera\",\"source\":\"pattern\",\"width\":64,"
                  "\"height\":48}");
  node_says(node, "sched.node", "node.registered", json);
}

static void
robot_report(const char *node, const char *robot, const char *event) {
  char what[128], json[256];
  snprintf(what, sizeof what, "dev.robot.%s", robot);
  snprintf(json, sizeof json,
           "{\"robot\":\"%s\",\"event\":\"%s\",\"mode\":\"pick\"}", robot,
           event);
  node_says(node, what, "robot.report", json);
}

static void
robot_request(const char *node, const char *robot, const char *pod,
              const char *op, const char *request) {
  char what[128], json[512];
  snprintf(what, sizeof what, "dev.request.%s", robot);
  snprintf(json, sizeof json,
           "{\"robot\":\"%s\",\"op\":\"%s\",\"pod\":\"%s\",\"request\":"
           "\"%s\"}",
           robot, op, pod, request);
  node_says(node, what, "robot.request", json);
}

/* type (its data the generated struct) appended on subject as the
 * scheduler writes it: on top of the subject's last event. */
static void
as_scheduler(const char *subject, bus_type type, const void *data) {
  lt_as_scheduler(conn, conn, subject, type, data);
}

/* The placement log: pod holds dev on node (placed), or no more. */
static void
placement(bus_type type, const char *job, const char *pod, const char *node,
          const char *dev) {
  bus_str devs[1] = {bus_str_of(dev)};
  bus_binding b = {.pod = bus_str_of(pod),
                   .task = BUS_STR("t"),
                   .node = bus_str_of(node),
                   .has_devices = 1,
                   .devices = {devs, 1}};
  bus_ev_job_placed p = {
      .pool = BUS_STR("lab"), .job = bus_str_of(job), .bindings = {&b, 1}};
  bus_ev_job_unplaced u = {.pool = BUS_STR("lab"), .job = bus_str_of(job)};
  as_scheduler("lark.ev.placement.lab", type,
               type == BUS_T_JOB_PLACED ? (const void *)&p : &u);
}

/* ------------------------------------------------------------ reading */

/* Send robot.<verb> as admin: 0, or the error code's name in code. */
static int
robot(const char *verb, const char *json, char *code, size_t cap,
      uint64_t *seq) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r;
  int rc = lt_command(conn, "robot", verb, json_loads(json, 0, NULL), &z, &r);
  cr_assert_eq(rc, 0, "robot.%s: %s", verb, bus_last_error());
  const msgpack_object *err = bus_obj_get(&r, "error");
  code[0] = 0;
  if (err)
    bus_obj_str(err, "code", code, cap);
  if (seq)
    *seq = (uint64_t)bus_obj_int(&r, "seq", 0);
  msgpack_zone_destroy(&z);
  return err ? -1 : 0;
}

/* Wait (10 s) until device node/name's row has key want. */
static int
row_becomes(const char *node, const char *name, const char *key,
            const char *want) {
  return lt_device_becomes(conn, node, name, key, want, 10);
}

/* The last message on subject of stream: its type and a field, waited
 * for (10 s) until it is type (and key is want, when given). */
static int
last_becomes(const char *stream, const char *subject, const char *type,
             const char *key, const char *want, char *val, size_t cap) {
  char t[64] = "";
  for (int i = 0; i < 100; i++, lt_sleep_ms(100)) {
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    bus_event ev;
    memset(&ev, 0, sizeof ev);
    int rc = bus_last_event(conn, stream, subject, &ev, &z);
    val[0] = 0;
    if (!rc) {
      snprintf(t, sizeof t, "%s", ev.type);
      const msgpack_object *v = key ? bus_obj_get(&ev.data, key) : NULL;
      if (v && v->type == MSGPACK_OBJECT_STR)
        snprintf(val, cap, "%.*s", (int)v->via.str.size, v->via.str.ptr);
      else if (v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        snprintf(val, cap, "%llu", (unsigned long long)v->via.u64);
      else if (v && v->type == MSGPACK_OBJECT_BOOLEAN)
        snprintf(val, cap, "%s", v->via.boolean ? "true" : "false");
    }
    msgpack_zone_destroy(&z);
    if (!rc && !strcmp(t, type) && (!want || !strcmp(val, want)))
      return 1;
  }
  cr_log_error("%s: last is %s (%s=%s), not %s", subject, t, key ? key : "",
               val, type);
  return 0;
}

#define DEV_SUBJECT "lark.ev.device.n1.arm-1"
#define NODE_SUBJECT "lark.node.n1.robot.arm-1"

static void
node_up(void) {
  register_node("n1", 0);
  cr_assert(row_becomes("n1", "arm-1", "kind", "ros"));
}

/* node's readiness, as the scheduler decides it. */
static void
readiness(const char *node, bus_type type) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", node);
  bus_ev_node_ready r = {0};
  bus_ev_node_notready nr = {0};
  as_scheduler(subject, type,
               type == BUS_T_NODE_READY ? (const void *)&r : &nr);
}

static long
count(const char *type, const char *subject) {
  return lt_count_events(conn, "LARK_EVENTS", "lark.ev.device.>", type,
                         subject);
}

/* ---------------------------------------------------------------- tests */

Test(devices_service, command_reaches_the_node_and_reports_come_back) {
  char code[64], v[256], want[32];
  uint64_t seq = 0;
  node_up();
  cr_assert_eq(robot("start",
                     "{\"node\":\"n1\",\"robot\":\"arm-1\","
                     "\"mode\":\"pick\"}",
                     code, sizeof code, &seq),
               0, "%s", code);
  cr_assert_gt(seq, 0);
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded", "op",
                         "start", v, sizeof v));
  snprintf(want, sizeof want, "%llu", (unsigned long long)seq);
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "version", want, v, sizeof v));
  last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired", "desired",
               "Running", v, sizeof v);
  last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired", "mode", "pick", v,
               sizeof v);
  robot_report("n1", "arm-1", "started");
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.started", "node",
                         "n1", v, sizeof v));
  cr_expect(row_becomes("n1", "arm-1", "state", "Running"));
  node_says("n1", "dev.camera.wrist", "camera.report",
            "{\"camera\":\"wrist\",\"event\":\"opened\",\"width\":64}");
  cr_expect(last_becomes("LARK_EVENTS", "lark.ev.device.n1.wrist",
                         "camera.opened", "camera", "wrist", v, sizeof v));
  cr_expect(row_becomes("n1", "wrist", "state", "Open"));
  /* refusals, with their codes */
  robot("start", "{\"node\":\"n1\",\"robot\":\"arm-1\",\"mode\":\"fly\"}", code,
        sizeof code, NULL);
  cr_expect_str_eq(code, "FIELD");
  robot("stop", "{\"node\":\"n1\",\"robot\":\"ghost\"}", code, sizeof code,
        NULL);
  cr_expect_str_eq(code, "NOT_FOUND");
  robot("stop", "{\"node\":\"n1\",\"robot\":\"wrist\"}", code, sizeof code,
        NULL);
  cr_expect_str_eq(code, "NOT_FOUND", "a camera is not a robot");
  robot("mode", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code, sizeof code,
        NULL);
  cr_expect_str_eq(code, "MISSING");
  robot("stop", "{\"node\":\"N 1\",\"robot\":\"arm-1\"}", code, sizeof code,
        NULL);
  cr_expect_str_eq(code, "NAME");
  /* its node NotReady: the state is not known */
  readiness("n1", BUS_T_NODE_NOTREADY);
  cr_expect(row_becomes("n1", "arm-1", "state", "Unknown"));
  readiness("n1", BUS_T_NODE_READY);
  cr_expect(row_becomes("n1", "arm-1", "state", "Running"));
  lt_expect_replay(conn, "devices", 25, 0);
}

Test(devices_service, a_held_robot_follows_its_holder) {
  char code[64], v[256];
  node_up();
  register_node("n2", 1);
  placement(BUS_T_JOB_PLACED, "j", "j-a-0", "n1", "robot/arm-1");
  cr_assert(row_becomes("n1", "arm-1", "holder", "j-a-0"));
  cr_expect_eq(robot("start", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code,
                     sizeof code, NULL),
               -1);
  cr_expect_str_eq(code, "CONFLICT");
  cr_assert_eq(robot("start",
                     "{\"node\":\"n1\",\"robot\":\"arm-1\",\"force\":true}",
                     code, sizeof code, NULL),
               0, "%s", code);
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded", "force",
                         "true", v, sizeof v));
  last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded", "holder", "j-a-0",
               v, sizeof v);
  cr_expect_str_eq(v, "j-a-0", "the holder overridden is recorded");
  /* the holder asks through its node */
  robot_request("n1", "arm-1", "j-a-0", "reset", "req-1");
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded", "pod",
                         "j-a-0", v, sizeof v));
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "request", "req-1", v, sizeof v));
  long commanded = count("robot.commanded", DEV_SUBJECT);
  /* a pod that does not hold it, and another node, land nothing */
  robot_request("n1", "arm-1", "other-a-0", "stop", "req-2");
  robot_report("n2", "arm-1", "exited");
  robot_report("n1", "arm-1", "started"); /* after both, in order */
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.started", "node",
                         "n1", v, sizeof v));
  cr_expect_eq(count("robot.commanded", DEV_SUBJECT), commanded);
  cr_expect_eq(count("robot.exited", NULL), 0);
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "request", "req-1", v, sizeof v));
  /* the holder's Job ends: the robot stops */
  placement(BUS_T_JOB_UNPLACED, "j", "j-a-0", "n1", "robot/arm-1");
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded",
                         "reason", "holder pod j-a-0 ended", v, sizeof v));
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "desired", "Stopped", v, sizeof v));
  cr_expect(row_becomes("n1", "arm-1", "holder", ""));
  cr_expect(row_becomes("n1", "arm-1", "desired", "Stopped"));
  /* a request now, from the pod that held it, lands nothing */
  robot_request("n1", "arm-1", "j-a-0", "start", "req-3");
  robot_report("n1", "arm-1", "stopped");
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.stopped", "node",
                         "n1", v, sizeof v));
  cr_expect(row_becomes("n1", "arm-1", "desired", "Stopped"));
  lt_expect_replay(conn, "devices", 25, 0);
}

Test(devices_service, kill_9_mid_stream_applies_nothing_twice) {
  char code[64], v[256], want[32];
  node_up();
  uint64_t seq = 0;
  for (int i = 0; i < 60; i++) {
    robot_report("n1", "arm-1", i % 2 ? "exited" : "started");
    if (i % 6 == 0 && procs[1]) /* commands while it runs */
      robot(i % 12 ? "stop" : "start", "{\"node\":\"n1\",\"robot\":\"arm-1\"}",
            code, sizeof code, &seq);
    if (i == 30) {
      lt_kill(procs[1], SIGKILL);
      procs[1] = 0;
    }
    if (i == 40)
      procs[1] = lt_must_start_named("lark-devices", srv.url, dir, "devices");
  }
  robot("start", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code, sizeof code,
        &seq);
  cr_assert_str_eq(code, "");
  snprintf(want, sizeof want, "%llu", (unsigned long long)seq);
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "version", want, v, sizeof v));
  /* 30 s: a report fetched by the killed process comes again after the
   * ingress's ack wait (5 s), and again if that delivery was missed */
  long started = 0, exited = 0;
  for (int i = 0; i < 300 && started + exited < 60; i++, lt_sleep_ms(100)) {
    started = count("robot.started", DEV_SUBJECT);
    exited = count("robot.exited", DEV_SUBJECT);
  }
  cr_expect_eq(started, 30, "every report once: %ld started, %ld exited",
               started, exited);
  cr_expect_eq(exited, 30, "every report once: %ld started, %ld exited",
               started, exited);
  cr_expect_eq(count("robot.commanded", DEV_SUBJECT), 10);
  lt_expect_replay(conn, "devices", 25, 0);
}

/* The scheduler places a Job that asks for robot/arm-1 by name: its pod
 * holds it (job.placed's Binding.devices), drives it through its node,
 * and its end stops it. */
Test(devices_service, a_job_placed_on_the_robot_holds_it) {
  char code[64], v[256];
  node_up();
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  lt_must_command(
      conn, "job", "apply",
      "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":"
      "\"Job\",\"metadata\":{\"name\":\"rj\"},\"spec\":{\"tasks\":[{"
      "\"name\":\"a\",\"role\":\"Actor\",\"replicas\":1,\"resources\":"
      "{\"cpu\":1,\"memory\":64,\"devices\":{\"robot/arm-1\":1}},"
      "\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]}}}",
      &z);
  msgpack_zone_destroy(&z);
  cr_assert(row_becomes("n1", "arm-1", "holder", "rj-a-0"));
  robot("start", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code, sizeof code,
        NULL);
  cr_expect_str_eq(code, "CONFLICT");
  robot_request("n1", "arm-1", "rj-a-0", "start", "req-9");
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "request", "req-9", v, sizeof v));
  last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired", "holder",
               "rj-a-0", v, sizeof v);
  cr_expect_str_eq(v, "rj-a-0");
  node_says("n1", "sched.pod.rj-a-0", "pod.report",
            "{\"pod\":\"rj-a-0\",\"phase\":\"Succeeded\",\"attempt\":0,"
            "\"exitCode\":0}");
  cr_expect(last_becomes("LARK_EVENTS", DEV_SUBJECT, "robot.commanded",
                         "reason", "holder pod rj-a-0 ended", v, sizeof v));
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "desired", "Stopped", v, sizeof v));
  cr_expect(row_becomes("n1", "arm-1", "holder", ""));
  lt_expect_replay(conn, "devices", 25, 0);
}

/* The node's stream gone (deleted by hand, or lost with a broker): the
 * robot's desired state makes it again, and lands. */
Test(devices_service, a_missing_node_stream_is_made_again) {
  char code[64], v[256];
  node_up();
  cr_assert_eq(bus_stream_delete(conn, "LARK_NODE_n1"), 0, "%s",
               bus_last_error());
  cr_assert_eq(robot("start", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code,
                     sizeof code, NULL),
               0, "%s", code);
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "desired", "Running", v, sizeof v));
  /* and what was decided after it is not held up */
  cr_assert_eq(robot("stop", "{\"node\":\"n1\",\"robot\":\"arm-1\"}", code,
                     sizeof code, NULL),
               0, "%s", code);
  cr_expect(last_becomes("LARK_NODE_n1", NODE_SUBJECT, "robot.desired",
                         "desired", "Stopped", v, sizeof v));
}

/* A real lark-edge with a device file registers its robots (modes in the
 * file's order) and cameras; their rows are what the file said. */
Test(devices_service, a_real_edge_registers_its_device_file) {
  char path[512], code[64], v[256];
  snprintf(path, sizeof path, "%s/devices.yaml", dir);
  cr_assert_eq(lt_write_file(path,
                             "robots:\n"
                             "  - name: arm-x\n"
                             "    kind: ros2\n"
                             "    launch: [sh, -c, 'exec sleep 1000', robot]\n"
                             "    modes:\n"
                             "      slow: ['--slow']\n"
                             "      fast: ['--fast']\n"
                             "    rosDomainId: 7\n"
                             "cameras:\n"
                             "  - name: top\n"
                             "    source: pattern\n"
                             "    width: 32\n"
                             "    height: 24\n"),
               0);
  const char *extra[] = {"--device-file", path, NULL};
  procs[2] = lt_must_start_edge(srv.url, dir, "n3", 0, extra);
  cr_assert(row_becomes("n3", "arm-x", "kind", "ros2"));
  cr_expect(row_becomes("n3", "arm-x", "mode", "slow"), "the first mode");
  cr_expect(row_becomes("n3", "top", "width", "32"));
  cr_expect(row_becomes("n3", "top", "source", "pattern"));
  cr_assert_eq(robot("mode",
                     "{\"node\":\"n3\",\"robot\":\"arm-x\",\"mode\":"
                     "\"fast\"}",
                     code, sizeof code, NULL),
               0, "%s", code);
  cr_expect(last_becomes("LARK_NODE_n3", "lark.node.n3.robot.arm-x",
                         "robot.desired", "mode", "fast", v, sizeof v));
}
