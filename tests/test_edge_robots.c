/*
 * test_edge_robots.c - lark-edge's robot controller as a real process
 * beside a real broker. The test plays lark-devices: it writes each
 * robot.desired to the node's stream and reads the node's robot.report
 * and robot.request from its ingress. A stand-in launch script plays the
 * robot: it appends its pid and argv to a file, then sleeps (or, as
 * "crashy", exits 3 at once).
 *
 * Start, mode switch, reset and stop; a crash restarted with backoff (1 s,
 * then 2 s) and stopped while waiting; the agent killed (-9) mid-run and
 * started again: the launch is re-adopted, never started twice; pods
 * driving a robot through the controller socket with the Python
 * RobotClient: the holder is answered once the node applied the decision,
 * a pod that does not hold it and a process that is no pod are refused.
 *
 * Longer than 600 lines on purpose: every case shares the node bed, the
 * stand-in robot and the readers of its argv file defined here, and the
 * cases read as one story of a robot's life on a node.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "root.h"
#include "store.h"

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *ingress;
static char dir[256];
static pid_t edge_pid;
static uint64_t version = 100;

static void
setup(void) {
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "robots", "n1", &ingress);
}

/* Every launch a script recorded (its pid first on each line): killed
 * with its group, since robots outlive their agent. */
static void
kill_launches(const char *file) {
  char path[512];
  if (file[0] == '/')
    snprintf(path, sizeof path, "%s", file);
  else
    snprintf(path, sizeof path, "%s/%s", dir, file);
  lt_kill_groups(path);
}

static void
teardown(void) {
  if (edge_pid > 0)
    lt_kill(edge_pid, SIGTERM);
  kill_launches("arm-1.runs");
  kill_launches("crashy.runs");
  char low[128];
  snprintf(low, sizeof low, "/tmp/lark-low-%d.runs", (int)getpid());
  kill_launches(low);
  unlink(low);
  lt_node_bed_down(&srv, conn, ingress, dir, NULL, 0);
}

TestSuite(edge_robots, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

/* The stand-in robots and the device file naming them; user: the
 * third robot's user ("" none). */
static void
devices(const char *user) {
  char path[512], file[600];
  snprintf(path, sizeof path, "%s/robot.sh", dir);
  cr_assert_eq(lt_write_file(path,
                             "#!/bin/sh\n"
                             "echo $$ $ROS_DOMAIN_ID$ROS_MASTER_URI $(id -u) "
                             "\"$@\" >> %s/$1.runs\n"
                             "exec sleep 600\n",
                             dir),
               0);
  chmod(path, 0755);
  snprintf(path, sizeof path, "%s/crashy.sh", dir);
  cr_assert_eq(lt_write_file(path,
                             "#!/bin/sh\necho $$ >> %s/crashy.runs\n"
                             "exit 3\n",
                             dir),
               0);
  chmod(path, 0755);
  snprintf(file, sizeof file, "%s/devices.yaml", dir);
  cr_assert_eq(
      lt_write_file(file,
                    "robots:\n"
                    "  - name: arm-1\n"
                    "    kind: ros2\n"
                    "    launch: [%s/robot.sh, arm-1]\n"
                    "    modes:\n"
                    "      impedance: [control_mode:=impedance]\n"
                    "      joint: [control_mode:=joint]\n"
                    "    rosDomainId: 7\n"
                    "  - name: crashy\n"
                    "    kind: ros\n"
                    "    launch: [%s/crashy.sh]\n"
                    "    rosMasterUri: http://localhost:11311\n"
                    "  - name: low\n"
                    "    kind: ros\n"
                    "    launch:\n"
                    "      - /bin/sh\n"
                    "      - -c\n"
                    "      - echo $$ $(id -u) >> /tmp/lark-low-%d.runs; "
                    "exec sleep 600\n"
                    "%s%s%s",
                    dir, dir, (int)getpid(), user[0] ? "    user: " : "", user,
                    user[0] ? "\n" : ""),
      0);
}

static pid_t
start_edge(void) {
  char file[600];
  snprintf(file, sizeof file, "%s/devices.yaml", dir);
  const char *extra[] = {"--device-file", file, NULL};
  return lt_must_start_edge(srv.url, dir, "n1", 0, extra);
}

/* robot.desired as lark-devices writes it; request may be NULL. */
static void
desire(const char *robot, const char *want, const char *mode, uint64_t resets,
       const char *request) {
  bus_ev_robot_desired d = {.robot = bus_str_of(robot),
                            .has_version = 1,
                            .version = ++version,
                            .desired = bus_str_of(want),
                            .has_mode = mode != NULL,
                            .mode = bus_str_of(mode ? mode : ""),
                            .has_resets = 1,
                            .resets = resets,
                            .has_request = request != NULL,
                            .request = bus_str_of(request ? request : "")};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_robot_desired_pack(&sb, &d), 0, "%s", bus_last_error());
  char id[33], subject[256];
  bus_event ev;
  lt_event(&ev, id, "robot.desired", "lark-devices", bus_wall_ns(), 0, &sb);
  snprintf(subject, sizeof subject, "lark.node.n1.robot.%s", robot);
  cr_assert_eq(bus_append(conn, subject, &ev, 0, NULL, NULL), 0, "%s",
               bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

/* What came through the node's ingress. */
typedef struct seen_ev {
  char type[32], robot[64], event[32], mode[64], reason[256];
  char op[16], pod[128], request[130];
  int64_t code, sig, restarts, ts;
  int answered;
} seen_ev;

static seen_ev seen[512];
static int nseen;

/* An event the node sent: kept when it is one the tests read. */
static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  if (strncmp(ev->type, "robot.", 6) || nseen == 512)
    return;
  seen_ev *s = &seen[nseen++];
  memset(s, 0, sizeof *s);
  snprintf(s->type, sizeof s->type, "%s", ev->type);
  bus_obj_str(&ev->data, "robot", s->robot, sizeof s->robot);
  bus_obj_str(&ev->data, "event", s->event, sizeof s->event);
  bus_obj_str(&ev->data, "mode", s->mode, sizeof s->mode);
  bus_obj_str(&ev->data, "reason", s->reason, sizeof s->reason);
  bus_obj_str(&ev->data, "op", s->op, sizeof s->op);
  bus_obj_str(&ev->data, "pod", s->pod, sizeof s->pod);
  bus_obj_str(&ev->data, "request", s->request, sizeof s->request);
  s->code = bus_obj_int(&ev->data, "exitCode", -100);
  s->sig = bus_obj_int(&ev->data, "signal", 0);
  s->restarts = bus_obj_int(&ev->data, "restarts", -1);
  s->ts = ev->ts;
}

static void
drain(int timeout_ms) {
  lt_drain(ingress, 128, timeout_ms, take, NULL);
}

/* The nth (from 1) report of event for robot, waiting up to seconds. */
static const seen_ev *
wait_report(const char *robot, const char *event, int nth, int seconds) {
  for (int w = 0; w <= seconds * 4; w++) {
    int k = 0;
    for (int i = 0; i < nseen; i++)
      if (!strcmp(seen[i].type, "robot.report") &&
          !strcmp(seen[i].robot, robot) && !strcmp(seen[i].event, event) &&
          ++k == nth)
        return &seen[i];
    drain(250);
  }
  cr_log_error("no report %d of %s for %s", nth, event, robot);
  return NULL;
}

/* Every event reported for robot, joined by spaces. */
static const char *
events(const char *robot) {
  static char out[2048];
  out[0] = 0;
  drain(300);
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i].type, "robot.report") &&
        !strcmp(seen[i].robot, robot)) {
      size_t n = strlen(out);
      snprintf(out + n, sizeof out - n, "%s%s", n ? " " : "", seen[i].event);
    }
  return out;
}

/* Line n (from 1) of dir/<robot>.runs, waiting up to 10 s; NULL if none. */
static const char *
run_line(const char *robot, int n) {
  static char buf[8192], line[512];
  char path[512];
  snprintf(path, sizeof path, "%s/%s.runs", dir, robot);
  for (int w = 0; w < 100; w++, usleep(100 * 1000)) {
    char *s = lt_read_file(path, buf, sizeof buf);
    for (int k = 1; s && *s; k++) {
      char *nl = strchr(s, '\n');
      if (!nl)
        break;
      if (k == n) {
        snprintf(line, sizeof line, "%.*s", (int)(nl - s), s);
        return line;
      }
      s = nl + 1;
    }
  }
  return NULL;
}

static int
runs(const char *robot) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.runs", dir, robot);
  return lt_lines_of(path);
}

static int
alive(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *s = lt_read_file(path, buf, sizeof buf);
  char *p = s ? strrchr(s, ')') : NULL;
  return p && p[2] != 'Z';
}

static int
gone(pid_t pid) {
  for (int w = 0; w < 100 && alive(pid); w++)
    usleep(100 * 1000);
  return !alive(pid);
}

/* ------------------------------------------------------------- tests */

Test(edge_robots, start_switch_reset_and_stop) {
  devices("");
  edge_pid = start_edge();
  desire("arm-1", "Running", NULL, 0, NULL);
  const seen_ev *e = wait_report("arm-1", "started", 1, 30);
  cr_assert_not_null(e);
  cr_expect_str_eq(e->mode, "impedance", "the first mode is the default");
  const char *l = run_line("arm-1", 1);
  cr_assert_not_null(l);
  pid_t first = atoi(l);
  char want[256];
  snprintf(want, sizeof want, " 7 %d arm-1 control_mode:=impedance",
           (int)geteuid());
  cr_expect(strstr(l, want), "launch + mode argv, ROS_DOMAIN_ID: %s", l);
  cr_expect(alive(first));

  desire("arm-1", "Running", "joint", 0, NULL);
  e = wait_report("arm-1", "switched", 1, 30);
  cr_assert_not_null(e);
  cr_expect_str_eq(e->mode, "joint");
  cr_expect(gone(first), "the old launch is stopped before the new one");
  l = run_line("arm-1", 2);
  cr_assert_not_null(l);
  pid_t second = atoi(l);
  cr_expect(strstr(l, "arm-1 control_mode:=joint"), "%s", l);
  cr_expect(alive(second));

  desire("arm-1", "Running", "joint", 1, NULL); /* a reset */
  e = wait_report("arm-1", "started", 2, 30);
  cr_assert_not_null(e);
  cr_expect_str_eq(e->reason, "reset");
  cr_expect(gone(second));
  l = run_line("arm-1", 3);
  cr_assert_not_null(l);
  pid_t third = atoi(l);
  cr_expect(strstr(l, "control_mode:=joint"), "%s", l);

  desire("arm-1", "Stopped", "joint", 1, NULL);
  e = wait_report("arm-1", "stopped", 1, 30);
  cr_assert_not_null(e);
  cr_expect_eq(e->sig, SIGTERM, "stopped by SIGTERM to its group");
  cr_expect(gone(third));
  cr_expect_str_eq(events("arm-1"), "started switched started stopped");
  cr_expect_eq(runs("arm-1"), 3);
}

Test(edge_robots, a_crash_restarts_with_backoff_until_stopped) {
  devices("");
  edge_pid = start_edge();
  desire("crashy", "Running", NULL, 0, NULL);
  const seen_ev *x1 = wait_report("crashy", "exited", 1, 30);
  const seen_ev *r1 = wait_report("crashy", "restarted", 1, 30);
  cr_assert(x1 && r1);
  cr_expect_eq(x1->code, 3);
  cr_expect_eq(r1->restarts, 1);
  const seen_ev *x2 = wait_report("crashy", "exited", 2, 30);
  const seen_ev *r2 = wait_report("crashy", "restarted", 2, 30);
  cr_assert(x2 && r2);
  cr_expect_eq(r2->restarts, 2);
  int64_t gap1 = (r1->ts - x1->ts) / 1000000,
          gap2 = (r2->ts - x2->ts) / 1000000;
  cr_expect(gap1 >= 900 && gap1 < 1900, "first backoff 1 s: %lld ms",
            (long long)gap1);
  cr_expect(gap2 >= 1900 && gap2 < 3500, "second backoff 2 s: %lld ms",
            (long long)gap2);
  cr_assert_not_null(wait_report("crashy", "exited", 3, 30));
  desire("crashy", "Stopped", NULL, 0, NULL);
  cr_assert_not_null(wait_report("crashy", "stopped", 1, 30));
  int n = runs("crashy");
  sleep(5); /* the next backoff (4 s) would have passed */
  cr_expect_eq(runs("crashy"), n, "no launch after the stop");
  cr_expect(!strncmp(events("crashy"),
                     "started exited restarted exited restarted exited", 48),
            "%s", events("crashy"));
}

/* arm-1 started in mode, then its agent killed (-9): the launch's pid. */
static pid_t
started_then_agent_killed(const char *mode) {
  devices("");
  edge_pid = start_edge();
  desire("arm-1", "Running", mode, 0, NULL);
  cr_assert_not_null(wait_report("arm-1", "started", 1, 30));
  const char *l = run_line("arm-1", 1);
  cr_assert_not_null(l);
  lt_kill(edge_pid, SIGKILL);
  edge_pid = 0;
  return atoi(l);
}

Test(edge_robots, a_restarted_agent_readopts_and_never_starts_twice) {
  pid_t pid = started_then_agent_killed("joint");
  cr_expect(alive(pid), "the robot outlives its agent");
  edge_pid = start_edge();
  sleep(3);
  cr_expect_eq(runs("arm-1"), 1, "not started again");
  cr_expect(alive(pid));
  cr_expect_str_eq(events("arm-1"), "started");
  /* the adopted launch is the one stopped */
  desire("arm-1", "Stopped", NULL, 0, NULL);
  cr_assert_not_null(wait_report("arm-1", "stopped", 1, 30));
  cr_expect(gone(pid));
  cr_expect_eq(runs("arm-1"), 1);
}

Test(edge_robots, a_launch_that_died_under_no_agent_is_reported_and_restarted) {
  pid_t pid = started_then_agent_killed(NULL);
  kill(pid, SIGKILL);
  cr_expect(gone(pid));
  edge_pid = start_edge();
  const seen_ev *x = wait_report("arm-1", "exited", 1, 30);
  cr_assert_not_null(x);
  cr_expect_eq(x->sig, SIGKILL, "read from the shim's status file");
  cr_assert_not_null(wait_report("arm-1", "restarted", 1, 30));
  cr_assert_not_null(run_line("arm-1", 2));
  cr_expect_eq(runs("arm-1"), 2);
}

/* What an agent killed between a spawn and its record leaves: a shim of
 * arm-1's launch 1 in mode joint, in its own session, with no record. */
static void
unrecorded_launch(void) {
  char bin[512], status[512], script[512];
  lt_bin("lark-edge", bin, sizeof bin);
  snprintf(status, sizeof status, "%s/n1/robots/arm-1/exit-1", dir);
  snprintf(script, sizeof script, "%s/robot.sh", dir);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    execl(bin, bin, "pod-shim", status, "--", script, "arm-1",
          "control_mode:=joint", (char *)NULL);
    _exit(127);
  }
  cr_assert_gt(pid, 0);
}

/* The node's store holding robot.desired Running in mode joint for arm-1,
 * as the agent stored it before it launched. */
static void
stored_running(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/n1", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/n1/store", dir);
  edge_store *st = NULL;
  cr_assert_eq(edge_store_open(&st, path), 0, "%s", bus_last_error());
  bus_ev_robot_desired d = {.robot = BUS_STR("arm-1"),
                            .desired = BUS_STR("Running"),
                            .has_mode = 1,
                            .mode = BUS_STR("joint")};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_robot_desired_pack(&sb, &d), 0);
  cr_assert_eq(
      edge_store_robot_desired_put(st, "arm-1", 1, sb.data, sb.size, NULL), 0,
      "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
  edge_store_close(st);
}

Test(edge_robots, a_launch_spawned_but_not_recorded_is_adopted_not_doubled) {
  devices("");
  stored_running();
  unrecorded_launch();
  const char *l = run_line("arm-1", 1);
  cr_assert_not_null(l);
  pid_t pid = atoi(l);
  edge_pid = start_edge();
  const seen_ev *e = wait_report("arm-1", "started", 1, 30);
  cr_assert_not_null(e);
  cr_expect_str_eq(e->mode, "joint");
  cr_expect_str_eq(e->reason, "found running without its record");
  sleep(2);
  cr_expect_eq(runs("arm-1"), 1, "not started again");
  cr_expect(alive(pid));
  desire("arm-1", "Stopped", NULL, 0, NULL);
  cr_assert_not_null(wait_report("arm-1", "stopped", 1, 30));
  cr_expect(gone(pid));
  cr_expect_str_eq(events("arm-1"), "started stopped");
}

Test(edge_robots, the_launch_runs_as_the_devices_user) {
  lt_need_root("switching to user nobody");
  devices("nobody");
  char path[128], buf[256];
  snprintf(path, sizeof path, "/tmp/lark-low-%d.runs", (int)getpid());
  unlink(path);
  edge_pid = start_edge();
  desire("low", "Running", NULL, 0, NULL);
  cr_assert_not_null(wait_report("low", "started", 1, 30));
  char *s = NULL;
  for (int w = 0; w < 100 && !(s = lt_read_file(path, buf, sizeof buf)); w++)
    usleep(100 * 1000);
  cr_assert_not_null(s, "the launch never ran");
  pid_t pid = atoi(s);
  cr_expect(strstr(s, " 65534"), "runs as nobody: %s", s);
  desire("low", "Stopped", NULL, 0, NULL);
  cr_assert_not_null(wait_report("low", "stopped", 1, 30));
  cr_expect(gone(pid));
  unlink(path);
}

/* ----------------------------------------------------- the socket */

/* Play lark-devices: each robot.request not yet answered becomes the
 * robot.desired it asks for, carrying its id. */
static void
decide_requests(void) {
  for (int i = 0; i < nseen; i++) {
    seen_ev *s = &seen[i];
    if (strcmp(s->type, "robot.request") || s->answered)
      continue;
    s->answered = 1;
    int stopping = !strcmp(s->op, "stop");
    static uint64_t resets;
    resets += !strcmp(s->op, "reset");
    desire(s->robot, stopping ? "Stopped" : "Running",
           s->mode[0] ? s->mode : NULL, resets, s->request);
  }
}

static json_t *
wait_json(const char *path, int seconds) {
  for (int w = 0; w < seconds * 4; w++) {
    json_t *o = json_load_file(path, 0, NULL);
    if (o)
      return o;
    drain(250);
    decide_requests();
  }
  return NULL;
}

/* The Python RobotClient in a pod holding bound, on the socket its
 * environment names (RLINF_EMBODIED_ROS*_SOCKET_PATH) or, when ros2, on
 * the ros2 socket named: ops run in order, each answer (or refusal) as
 * JSON into dir/<name>.json. */
static void
python_pod(const char *name, const char *bound, int ros2, const char *ops) {
  char script[4096], path[512] = "";
  if (ros2)
    snprintf(path, sizeof path, "'%s/n1/run/ros2-ctrl.sock'", dir);
  snprintf(script, sizeof script,
           "python3 -c \"\n"
           "import sys, json\n"
           "sys.path.insert(0, '%s/libbus/python')\n"
           "from larkbus import RobotClient, LarkError\n"
           "c = RobotClient(%s)\n"
           "out = []\n"
           "for op in [%s]:\n"
           "    try:\n"
           "        out.append(op(c))\n"
           "    except LarkError as e:\n"
           "        out.append({'error': str(e)})\n"
           "json.dump(out, open('%s/%s.tmp', 'w'))\n"
           "\" && mv %s/%s.tmp %s/%s.json",
           getenv("LARK_SOURCE_DIR"), path, ops, dir, name, dir, name, dir,
           name);
  const char *held[] = {bound, NULL};
  lt_pod_running(conn, "n1", name, script, held);
}

#define OP(i) json_array_get(out, i)
#define STR(o, k) json_string_value(json_object_get(o, k))

Test(edge_robots, the_holder_drives_its_robot_through_the_socket) {
  devices("");
  edge_pid = start_edge();
  python_pod("holder", "robot/arm-1", 0,
             "lambda c: c.list(), lambda c: c.modes('arm-1'), "
             "lambda c: c.start('arm-1', mode='joint'), "
             "lambda c: c.switch('arm-1', 'impedance'), "
             "lambda c: c.reset('arm-1'), lambda c: c.stop('arm-1'), "
             "lambda c: c.switch('arm-1', 'nope'), "
             "lambda c: c.status('crashy')");
  char path[512];
  snprintf(path, sizeof path, "%s/holder.json", dir);
  json_t *out = wait_json(path, 60);
  cr_assert_not_null(out, "the pod never finished");
  char *text = json_dumps(out, JSON_COMPACT);
  cr_log_info("%s", text);
  json_t *list = OP(0);
  cr_expect_eq(json_array_size(list), 1, "only the ros2 robots: %s", text);
  cr_expect_str_eq(STR(json_array_get(list, 0), "name"), "arm-1");
  cr_expect_str_eq(STR(json_array_get(list, 0), "kind"), "ros2");
  cr_expect_eq(json_array_size(OP(1)), 2);
  cr_expect_str_eq(STR(OP(2), "state"), "Running", "%s", text);
  cr_expect_str_eq(STR(OP(2), "mode"), "joint");
  cr_expect_gt(json_integer_value(json_object_get(OP(2), "pid")), 0);
  cr_expect_str_eq(STR(OP(3), "state"), "Running");
  cr_expect_str_eq(STR(OP(3), "mode"), "impedance");
  cr_expect_str_eq(STR(OP(4), "state"), "Running");
  cr_expect_str_eq(STR(OP(5), "state"), "Stopped");
  cr_expect_str_eq(STR(OP(6), "error"), "robot arm-1 has no mode nope");
  cr_expect(strstr(STR(OP(7), "error"), "no robot crashy"), "%s", text);
  free(text);
  json_decref(out);
  /* the requests went through the log, stamped with the pod */
  const char *want[] = {"start", "mode", "reset", "stop"};
  int k = 0;
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i].type, "robot.request")) {
      cr_expect_str_eq(seen[i].pod, "holder");
      cr_expect_str_eq(seen[i].robot, "arm-1");
      if (k < 4)
        cr_expect_str_eq(seen[i].op, want[k]);
      k++;
    }
  cr_expect_eq(k, 4);
  cr_expect_str_eq(events("arm-1"), "started switched started stopped");
}

Test(edge_robots,
     a_pod_that_does_not_hold_the_robot_and_a_stranger_are_refused) {
  devices("");
  edge_pid = start_edge();
  python_pod("other", "robot/crashy", 1,
             "lambda c: c.start('arm-1'), lambda c: c.status('arm-1')");
  char path[512];
  snprintf(path, sizeof path, "%s/other.json", dir);
  json_t *out = wait_json(path, 60);
  cr_assert_not_null(out, "the pod never finished");
  cr_expect_str_eq(STR(OP(0), "error"), "pod other does not hold robot arm-1");
  cr_expect_str_eq(STR(OP(1), "state"), "Stopped");
  json_decref(out);
  for (int i = 0; i < nseen; i++)
    cr_expect_str_neq(seen[i].type, "robot.request", "refused at once");
  /* this test's own process is no pod */
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  char sock[512];
  snprintf(sock, sizeof sock, "%s/n1/run/ros-ctrl.sock", dir);
  cr_assert_lt(strlen(sock), sizeof sa.sun_path);
  memcpy(sa.sun_path, sock, strlen(sock) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "%s",
               sa.sun_path);
  const char *req = "{\"op\":\"list\"}\n";
  cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  char buf[512] = "";
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  cr_expect(n > 0 && strstr(buf, "not a pod of this node"), "%s", buf);
}
