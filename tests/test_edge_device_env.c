/*
 * test_edge_device_env.c - a real lark-edge with a device file, beside a
 * real broker; the test writes desired states to the node's stream as the
 * scheduler would and reads the node's ingress. The node registers its
 * robots and cameras (names, kinds, modes' names, ROS settings, subnet,
 * camera sizes; never a launch line or a user); a pod that holds named
 * devices (pod.desired.boundDevices) sees exactly the device variables
 * of edge/README.md ("Devices") and a pod that holds none sees none of
 * them, even when the agent's own environment has some; a bad device
 * file stops lark-edge with exit 2 and the line; `--device-share` takes
 * a node's share.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "edge.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *reports;
static char dir[256], devfile[512];
static pid_t edge_pid;

static const char devices_yaml[] =
    "robots:\n"
    "  - name: arm-1\n"
    "    kind: ros2\n"
    "    launch: [sleep, '1000']\n"
    "    modes:\n"
    "      impedance: [x]\n"
    "      joint: [y]\n"
    "    rosDomainId: 7\n"
    "    user: nobody\n"
    "    subnet: {parent: eth1, cidr: 192.168.50.0/24,\n"
    "             range: 192.168.50.100-192.168.50.120,\n"
    "             gateway: 192.168.50.1}\n"
    "  - name: base\n"
    "    kind: ros\n"
    "    launch: [sleep, '1000']\n"
    "    rosMasterUri: http://localhost:11311\n"
    "cameras:\n"
    "  - {name: wrist, source: pattern, width: 640, height: 480, fps: 30}\n";

static void
setup(void) {
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "edgedev", "n1", &reports);
  snprintf(devfile, sizeof devfile, "%s/devices.yaml", dir);
  cr_assert_eq(lt_write_file(devfile, "%s", devices_yaml), 0);
  /* the agent's own environment: none of this may reach a pod */
  setenv("RLINF_EMBODIED_DEVICES", "rlinf.io/device=1", 1);
  setenv("RLINF_EMBODIED_ROS_ENABLED", "true", 1);
  setenv("ROS_DOMAIN_ID", "3", 1);
  const char *extra[] = {"--device-file", devfile, NULL};
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, extra);
  unsetenv("RLINF_EMBODIED_DEVICES");
  unsetenv("RLINF_EMBODIED_ROS_ENABLED");
  unsetenv("ROS_DOMAIN_ID");
}

static void
teardown(void) {
  lt_node_bed_down(&srv, conn, reports, dir, &edge_pid, 1);
}

TestSuite(edge_device_env, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

/* pod runs `sh -c script` holding the bound devices (NULL-ended). */
static void
desire(const char *pod, const char *script, const char *const *bound) {
  lt_pod_running(conn, "n1", pod, script, bound);
}

/* o as compact JSON (strings unescaped: the test's own) appended to buf. */
static void
json_of(const msgpack_object *o, char *buf, size_t cap) {
  size_t n = strlen(buf);
  const msgpack_object_kv *kv = o->via.map.ptr;
  switch (o->type) {
  case MSGPACK_OBJECT_STR:
    snprintf(buf + n, cap - n, "\"%.*s\"", (int)o->via.str.size,
             o->via.str.ptr);
    return;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    snprintf(buf + n, cap - n, "%llu", (unsigned long long)o->via.u64);
    return;
  case MSGPACK_OBJECT_ARRAY:
    snprintf(buf + n, cap - n, "[");
    for (uint32_t i = 0; i < o->via.array.size; i++) {
      if (i)
        snprintf(buf + strlen(buf), cap - strlen(buf), ",");
      json_of(&o->via.array.ptr[i], buf, cap);
    }
    snprintf(buf + strlen(buf), cap - strlen(buf), "]");
    return;
  case MSGPACK_OBJECT_MAP:
    snprintf(buf + n, cap - n, "{");
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      if (i)
        snprintf(buf + strlen(buf), cap - strlen(buf), ",");
      json_of(&kv[i].key, buf, cap);
      snprintf(buf + strlen(buf), cap - strlen(buf), ":");
      json_of(&kv[i].val, buf, cap);
    }
    snprintf(buf + strlen(buf), cap - strlen(buf), "}");
    return;
  default:
    snprintf(buf + n, cap - n, "?");
  }
}

/* What the node sent: its registration as JSON, the pods that ended. */
static char registered[8192];
static char ended[16][128]; /* pods reported Succeeded or Failed */
static int nended;

/* An event the node sent: kept when it is one the tests read. */
static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  char phase[32] = "";
  if (!strcmp(ev->type, "node.registered"))
    json_of(&ev->data, (registered[0] = 0, registered), sizeof registered);
  if (strcmp(ev->type, "pod.report") || nended == 16)
    return;
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  if (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))
    bus_obj_str(&ev->data, "pod", ended[nended++], sizeof ended[0]);
}

static void
drain(int timeout_ms) {
  lt_drain(reports, 64, timeout_ms, take, NULL);
}

static int
has_ended(const char *pod, int seconds) {
  for (int w = 0; w < seconds * 4; w++) {
    for (int i = 0; i < nended; i++)
      if (!strcmp(ended[i], pod))
        return 1;
    drain(250);
  }
  return 0;
}

/* The device family of pod's environment, one sorted line each. */
static const char *
device_env(const char *pod, const char *const *bound) {
  static char buf[4096];
  char out[600], script[1024];
  snprintf(out, sizeof out, "%s/%s.env", dir, pod);
  snprintf(script, sizeof script,
           "env | grep -E '^(RLINF_EMBODIED_|ROS_MASTER_URI=|ROS_DOMAIN_ID=|"
           "LARK_DEVICES=)' | sort > %s",
           out);
  desire(pod, script, bound);
  cr_assert(has_ended(pod, 30), "%s did not end", pod);
  return lt_read_file(out, buf, sizeof buf);
}

/* -------------------------------------------------------------- tests */

Test(edge_device_env, the_node_registers_its_devices_without_launch_lines) {
  for (int w = 0; w < 40 && !registered[0]; w++)
    drain(250);
  cr_assert(registered[0], "no node.registered");
  const char *want[] = {
      "\"devices\":[{\"name\":\"arm-1\",\"kind\":\"ros2\","
      "\"modes\":[\"impedance\",\"joint\"],\"rosDomainId\":7,"
      "\"subnet\":{\"parent\":\"eth1\",\"cidr\":\"192.168.50.0/24\","
      "\"range\":\"192.168.50.100-192.168.50.120\","
      "\"gateway\":\"192.168.50.1\"}},",
      "{\"name\":\"base\",\"kind\":\"ros\",\"modes\":[\"default\"],"
      "\"rosMasterUri\":\"http://localhost:11311\"},",
      "{\"name\":\"wrist\",\"kind\":\"camera\",\"source\":\"pattern\","
      "\"width\":640,\"height\":480,\"fps\":30}]",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_expect(strstr(registered, want[i]), "no\n%s\nin\n%s", want[i],
              registered);
  cr_expect_null(strstr(registered, "sleep"), "a launch line: %s", registered);
  cr_expect_null(strstr(registered, "nobody"), "a user: %s", registered);
}

Test(edge_device_env, a_pod_sees_exactly_the_variables_of_what_it_holds) {
  char want[2048];
  const char *arm_cam[] = {"robot/arm-1", "camera/wrist", NULL};
  snprintf(want, sizeof want,
           "LARK_DEVICES=robot/arm-1,camera/wrist\n"
           "RLINF_EMBODIED_CAMERA_ENABLED=true\n"
           "RLINF_EMBODIED_CAMERA_SOCKET_PATH=%s/n1/run/camera-ctrl.sock\n"
           "RLINF_EMBODIED_ROS2_ENABLED=true\n"
           "RLINF_EMBODIED_ROS2_SOCKET_PATH=%s/n1/run/ros2-ctrl.sock\n"
           "ROS_DOMAIN_ID=7\n",
           dir, dir);
  cr_expect_str_eq(device_env("p-arm-cam", arm_cam), want);

  const char *base[] = {"robot/base", NULL};
  snprintf(want, sizeof want,
           "LARK_DEVICES=robot/base\n"
           "RLINF_EMBODIED_ROS_ENABLED=true\n"
           "RLINF_EMBODIED_ROS_SOCKET_PATH=%s/n1/run/ros-ctrl.sock\n"
           "ROS_MASTER_URI=http://localhost:11311\n",
           dir);
  cr_expect_str_eq(device_env("p-base", base), want);

  /* two robots: both sockets, neither robot's ROS setting */
  const char *both[] = {"robot/base", "robot/arm-1", NULL};
  snprintf(want, sizeof want,
           "LARK_DEVICES=robot/base,robot/arm-1\n"
           "RLINF_EMBODIED_ROS2_ENABLED=true\n"
           "RLINF_EMBODIED_ROS2_SOCKET_PATH=%s/n1/run/ros2-ctrl.sock\n"
           "RLINF_EMBODIED_ROS_ENABLED=true\n"
           "RLINF_EMBODIED_ROS_SOCKET_PATH=%s/n1/run/ros-ctrl.sock\n",
           dir, dir);
  cr_expect_str_eq(device_env("p-both", both), want);

  const char *cam[] = {"camera/wrist", NULL};
  snprintf(want, sizeof want,
           "LARK_DEVICES=camera/wrist\n"
           "RLINF_EMBODIED_CAMERA_ENABLED=true\n"
           "RLINF_EMBODIED_CAMERA_SOCKET_PATH=%s/n1/run/camera-ctrl.sock\n",
           dir);
  cr_expect_str_eq(device_env("p-cam", cam), want);
}

Test(edge_device_env, a_pod_holding_nothing_sees_none_of_them) {
  cr_expect_str_eq(device_env("p-none", NULL), "");
  /* a name the node does not have gives nothing either */
  const char *unknown[] = {"robot/arm-9", "camera/arm-1", NULL};
  cr_expect_str_eq(device_env("p-unknown", unknown), "");
}

/* lark-edge --node n9 --device-file FILE [more], run to its end: its exit
 * code, and what it printed on stderr in err. */
static int
edge_n9(const char *file, const char *flag, const char *value, char *err,
        size_t cap) {
  char bin[512], out[4096], data[512];
  lt_bin("lark-edge", bin, sizeof bin);
  snprintf(data, sizeof data, "%s/bad", dir);
  return lt_runl(out, sizeof out, err, cap, bin, "--url", srv.url, "--data",
                 data, "--node", "n9", "--device-file", file, flag, value,
                 (char *)NULL);
}

Test(edge_device_env, a_bad_device_file_stops_the_agent_naming_the_line) {
  char err[4096], bad[512];
  snprintf(bad, sizeof bad, "%s/bad.yaml", dir);
  lt_write_file(bad, "robots:\n  - name: arm-1\n    launch: [x]\n"
                     "    kind: ros3\n");
  cr_expect_eq(edge_n9(bad, NULL, NULL, err, sizeof err), 2);
  cr_expect(strstr(err, "bad.yaml: line 4: robot arm-1: kind must be ros or "
                        "ros2"),
            "%s", err);
  cr_expect_eq(edge_n9("/nonexistent.yaml", NULL, NULL, err, sizeof err), 2);
  cr_expect(strstr(err, "/nonexistent.yaml: No such file"), "%s", err);
  cr_expect_eq(edge_n9(devfile, "--device-share", "3/2", err, sizeof err), 2);
  cr_expect(strstr(err, "--device-share 3/2"), "%s", err);
}
