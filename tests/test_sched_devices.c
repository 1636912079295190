/*
 * test_sched_devices.c - named devices in placement, without a broker:
 * robots and cameras read from a Node's spec.devices, a request by name,
 * a class request taking free named devices first (name order) then
 * anonymous units, a device never given to two pods, holds given back on
 * release and on a gang that does not fit, a robot's subnet making its
 * holder run raw+netns, colocate, the Job's device keys checked, and the
 * devices of job.placed's bindings read back and booked by another model.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "placement.h"
#include "test_sched_util.h"

#define NODE "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Node\", "
#define JOB "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\", "
#define RAW "\"runtime\": {\"raw\": {\"entrypoint\": [\"python\"]}}"

TS_PLACEMENT_SUITE(sched_devices);

/* A node with bare class units and named devices (a leading '!' marks a
 * robot with a subnet). */
static sched_node *
dev_node(const char *name, unsigned bare, unsigned runtimes,
         const char *const *named) {
  sched_node *n = ts_node(&nodes, name, 64, 65536, 0, NULL);
  cr_assert(n);
  n->runtimes = runtimes;
  if (bare)
    cr_assert_eq(sched_node_set_device(n, SCHED_DEVICE_CLASS, bare), 0);
  for (; named && *named; named++)
    cr_assert_eq(
        sched_node_add_named(n, *named + (**named == '!'), **named == '!'), 0);
  return n;
}

/* The used count of device name on n. */
static uint32_t
used(const sched_node *n, const char *name) {
  for (int i = 0; i < n->capacity.ndevices; i++)
    if (!strcmp(n->capacity.devices[i].name, name))
      return n->dev_used[i];
  cr_assert_fail("no device %s on %s", name, n->name);
  return 0;
}

/* The devices of binding i, joined with ','. */
static const char *
held(size_t i, char *buf, size_t cap) {
  buf[0] = 0;
  for (int d = 0; d < p.bindings[i].ndevices; d++)
    snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", d ? "," : "",
             p.bindings[i].devices[d]);
  return buf;
}

static sched_template *
asks(const char *task, unsigned replicas, const char *key, unsigned count) {
  sched_template *t = ts_task(&job, task, SCHED_ENV, replicas, 1, 1, 0);
  cr_assert(t);
  cr_assert_eq(sched_resources_set_device(&t->req, key, count), 0);
  return t;
}

Test(sched_devices, node_reads_robots_and_cameras) {
  msgpack_unpacked up;
  sched_node node;
  bus_field_err e[4];
  int n;
  cr_assert_eq(
      ts_msgpack(NODE "\"metadata\": {\"name\": \"edge-1\"}, \"spec\": {"
                      "\"cluster\": \"c\", \"capacity\": {\"devices\":"
                      " {\"rlinf.io/device\": 1}}, \"devices\": ["
                      " {\"name\": \"arm-1\", \"kind\": \"ros2\", \"subnet\":"
                      "  {\"parent\": \"eth1\", \"cidr\": \"10.5.0.0/24\","
                      "   \"range\": \"10.5.0.10-10.5.0.20\"}},"
                      " {\"name\": \"wrist\", \"kind\": \"camera\"}]}}",
                 &up),
      0);
  cr_assert_eq(sched_node_from_msgpack(&up.data, &node, e, 4, &n), 0, "%s: %s",
               e[0].path, e[0].reason);
  cr_assert_eq(node.nnamed, 2);
  cr_assert_eq(sched_resources_device(&node.capacity, SCHED_DEVICE_CLASS), 3,
               "1 bare + 2 named");
  cr_assert_eq(sched_resources_device(&node.capacity, "robot/arm-1"), 1);
  cr_assert_eq(sched_resources_device(&node.capacity, "camera/wrist"), 1);
  /* name order: camera/wrist before robot/arm-1 */
  cr_assert_str_eq(node.capacity.devices[1].name, "camera/wrist");
  cr_assert_eq(node.capacity.devices[2].flags,
               SCHED_DEV_NAMED | SCHED_DEV_SUBNET);
  sched_node_clear(&node);
  msgpack_unpacked_destroy(&up);

  /* a device twice, and a bare count under a named key */
  cr_assert_eq(ts_msgpack(NODE "\"metadata\": {\"name\": \"e\"}, \"spec\": {"
                               "\"cluster\": \"c\", \"capacity\": {\"devices\":"
                               " {\"robot/x\": 2}}, \"devices\": ["
                               " {\"name\": \"a\", \"kind\": \"ros\"},"
                               " {\"name\": \"a\", \"kind\": \"camera\"}]}}",
                          &up),
               0);
  cr_assert_neq(sched_node_from_msgpack(&up.data, &node, e, 4, &n), 0);
  cr_assert_eq(n, 2, "got %d", n);
  cr_assert_str_eq(e[0].path, "spec.capacity.devices");
  cr_assert(strstr(e[0].reason, "declared in spec.devices"), "%s", e[0].reason);
  cr_assert_str_eq(e[1].path, "spec.devices[1].name");
  cr_assert(strstr(e[1].reason, "declared twice"), "%s", e[1].reason);
  sched_node_clear(&node);
  msgpack_unpacked_destroy(&up);
}

/* The problems of a Job whose one task asks for devices (JSON map). */
static int
job_device_errors(const char *devices, bus_field_err *e, int max) {
  char json[1024];
  msgpack_unpacked up;
  sched_job j;
  int n = -1;
  snprintf(json, sizeof json,
           JOB "\"metadata\": {\"name\": \"k\"}, \"spec\": {\"tasks\": ["
               "{\"name\": \"t\", \"role\": \"Env\", \"resources\":"
               " {\"devices\": %s}, " RAW "}]}}",
           devices);
  cr_assert_eq(ts_msgpack(json, &up), 0);
  int rc = sched_job_from_msgpack(&up.data, &j, e, max, &n);
  cr_assert_eq(rc != 0, n != 0, "rc %d with %d problems", rc, n);
  sched_job_clear(&j);
  msgpack_unpacked_destroy(&up);
  return n;
}

Test(sched_devices, job_device_keys) {
  bus_field_err e[4];
  cr_assert_eq(job_device_errors("{\"robot/arm-1\": 1, \"camera/wrist\": 1,"
                                 " \"rlinf.io/device\": 3, \"x.io/fpga\": 2}",
                                 e, 4),
               0, "%s", e[0].reason);
  cr_assert_eq(job_device_errors("{\"robot/Arm_1\": 1}", e, 4), 1);
  cr_assert_str_eq(e[0].path, "spec.tasks[0].resources.devices");
  cr_assert(strstr(e[0].reason, "robot/Arm_1: a named device is robot/<name>"),
            "%s", e[0].reason);
  cr_assert_eq(job_device_errors("{\"camera/\": 1}", e, 4), 1);
  cr_assert_eq(job_device_errors("{\"robot/arm-1\": 2}", e, 4), 1);
  cr_assert(strstr(e[0].reason, "one device"), "%s", e[0].reason);
}

Test(sched_devices, named_request_one_pod_at_a_time) {
  char buf[256];
  static const char *const a_dev[] = {"camera/wrist", "robot/arm-1", NULL};
  static const char *const b_dev[] = {"robot/arm-2", NULL};
  sched_node *a = dev_node("a", 0, SCHED_RT_RAW, a_dev);
  dev_node("b", 0, SCHED_RT_RAW, b_dev);
  asks("t", 1, "robot/arm-1", 1);
  place_ok();
  cr_assert_str_eq(p.bindings[0].node, "a");
  cr_assert_str_eq(held(0, buf, sizeof buf), "robot/arm-1");
  cr_assert_eq(p.bindings[0].runtime, SCHED_RT_RAW);
  cr_assert_eq(used(a, "robot/arm-1"), 1);
  cr_assert_eq(used(a, SCHED_DEVICE_CLASS), 1, "and one unit of the class");
  /* the same Job again (a second one): the robot is held */
  sched_placement first = p;
  sched_placement_init(&p);
  place_nofit();
  cr_assert(strstr(p.reason, "1 lack a device asked for") &&
                strstr(p.reason, "1 lack free devices"),
            "%s", p.reason);
  cr_assert_eq(used(a, "robot/arm-1"), 1);
  /* released: it fits again */
  sched_release(&nodes, &job, &first);
  sched_placement_clear(&first);
  cr_assert_eq(used(a, "robot/arm-1"), 0);
  cr_assert_eq(used(a, SCHED_DEVICE_CLASS), 0);
  place_ok();
  /* two replicas asking for the one robot never fit, and book nothing */
  sched_release(&nodes, &job, &p);
  job.tasks[0].replicas = 2;
  place_nofit();
  cr_assert(strstr(p.reason, "1 of 2 pods fit before"), "%s", p.reason);
  cr_assert_eq(used(a, "robot/arm-1"), 0, "the gang's hold is given back");
  cr_assert_eq(used(a, SCHED_DEVICE_CLASS), 0);
}

Test(sched_devices, class_takes_named_first_in_name_order) {
  char buf[256];
  static const char *const dev[] = {"robot/b-arm", "camera/a-cam", NULL};
  sched_node *n = dev_node("a", 1, SCHED_RT_RAW, dev);
  asks("t", 3, SCHED_DEVICE_CLASS, 1);
  place_ok();
  cr_assert_str_eq(held(0, buf, sizeof buf), "camera/a-cam");
  cr_assert_str_eq(held(1, buf, sizeof buf), "robot/b-arm");
  cr_assert_eq(p.bindings[2].ndevices, 0, "then an anonymous unit");
  cr_assert_eq(used(n, SCHED_DEVICE_CLASS), 3);
  sched_release(&nodes, &job, &p);
  cr_assert_eq(used(n, SCHED_DEVICE_CLASS), 0);
  cr_assert_eq(used(n, "camera/a-cam") + used(n, "robot/b-arm"), 0);
  job.tasks[0].replicas = 4;
  place_nofit();
  cr_assert(strstr(p.reason, "1 lack free devices"), "%s", p.reason);
  /* one pod taking 2: both named */
  job.tasks[0].replicas = 1;
  job.tasks[0].req.devices[0].count = 2;
  place_ok();
  cr_assert_str_eq(held(0, buf, sizeof buf), "camera/a-cam,robot/b-arm");
}

Test(sched_devices, named_and_class_in_one_request) {
  char buf[256];
  static const char *const dev[] = {"robot/arm-1", "camera/wrist", NULL};
  sched_node *n = dev_node("a", 0, SCHED_RT_RAW, dev);
  sched_template *t = asks("t", 1, "robot/arm-1", 1);
  sched_resources_set_device(&t->req, SCHED_DEVICE_CLASS, 1);
  place_ok();
  cr_assert_str_eq(held(0, buf, sizeof buf), "camera/wrist,robot/arm-1");
  cr_assert_eq(used(n, SCHED_DEVICE_CLASS), 2);
  /* a class unit more than the node has left */
  sched_release(&nodes, &job, &p);
  t->req.devices[1].count = 2;
  place_nofit();
  cr_assert_eq(used(n, SCHED_DEVICE_CLASS), 0);
}

Test(sched_devices, subnet_robot_needs_raw_netns) {
  char buf[256];
  static const char *const dev[] = {"!robot/arm-1", "camera/wrist", NULL};
  sched_node *plain = dev_node("a", 0, SCHED_RT_RAW, dev);
  asks("t", 1, "robot/arm-1", 1);
  place_nofit();
  cr_assert(strstr(p.reason, "1 lack runtime raw+netns, which a robot's "
                             "subnet needs"),
            "%s", p.reason);
  /* a class request on that node passes the robot by */
  job.tasks[0].req.devices[0].count = 0;
  sched_resources_set_device(&job.tasks[0].req, SCHED_DEVICE_CLASS, 1);
  place_ok();
  cr_assert_str_eq(held(0, buf, sizeof buf), "camera/wrist");
  cr_assert_eq(p.bindings[0].runtime, SCHED_RT_RAW);
  sched_release(&nodes, &job, &p);
  job.tasks[0].req.devices[1].count = 2;
  place_nofit();
  cr_assert_eq(used(plain, SCHED_DEVICE_CLASS), 0);
  /* a node that offers raw+netns: the pod runs there, in its namespace */
  dev_node("b", 0, SCHED_RT_ALL, dev);
  job.tasks[0].req.devices[0].count = 1;
  job.tasks[0].req.devices[1].count = 0;
  place_ok();
  cr_assert_str_eq(p.bindings[0].node, "b");
  cr_assert_str_eq(held(0, buf, sizeof buf), "robot/arm-1");
  cr_assert_eq(p.bindings[0].runtime, SCHED_RT_RAW_NETNS);
}

Test(sched_devices, colocate_counts_the_whole_job) {
  static const char *const one[] = {"robot/arm-1", NULL};
  static const char *const two[] = {"robot/arm-1", "robot/arm-2", NULL};
  dev_node("a", 0, SCHED_RT_RAW, one);
  dev_node("b", 0, SCHED_RT_RAW, two);
  job.strategy = SCHED_COLOCATE;
  asks("t", 2, SCHED_DEVICE_CLASS, 1);
  asks("u", 1, "robot/arm-1", 1);
  place_ok(); /* three units: on two nodes, each robot/arm-1 to one pod */
  cr_assert_str_eq(p.bindings[0].node, "a");
  cr_assert_str_eq(p.bindings[0].devices[0], "robot/arm-1",
                   "a has no other unit");
  cr_assert_str_eq(p.bindings[1].node, "b");
  cr_assert_str_eq(p.bindings[1].devices[0], "robot/arm-2");
  cr_assert_str_eq(p.bindings[2].node, "b");
  cr_assert_str_eq(p.bindings[2].devices[0], "robot/arm-1");
  sched_release(&nodes, &job, &p);
  job.tasks[0].replicas = 1;
  place_ok();
  cr_assert_str_eq(p.bindings[0].node, p.bindings[1].node);
  cr_assert_str_eq(p.bindings[0].node, "b", "a has one unit, not two");
  cr_assert_str_eq(p.bindings[0].devices[0], "robot/arm-2",
                   "the class passes by what the Job names");
}

Test(sched_devices, placed_devices_round_trip) {
  static const char *const dev[] = {"robot/arm-1", "camera/wrist", NULL};
  bus_packbuf pb;
  msgpack_unpacked up;
  dev_node("a", 2, SCHED_RT_RAW, dev);
  asks("t", 1, "robot/arm-1", 1);
  asks("u", 2, SCHED_DEVICE_CLASS, 1);
  place_ok();
  ts_placed(&p, 1, &pb, &up);

  sched_nodes keep = nodes; /* another model books the same event */
  sched_placement q;
  sched_nodes_init(&nodes);
  sched_placement_init(&q);
  sched_node *o = dev_node("a", 2, SCHED_RT_RAW, dev);
  cr_assert_eq(sched_placement_from_msgpack(&up.data, &job, &q), 0, "%s",
               bus_last_error());
  cr_assert_eq(q.n, 3);
  cr_assert_eq(q.bindings[1].ndevices, 1);
  cr_assert_str_eq(q.bindings[1].devices[0], "camera/wrist");
  cr_assert_eq(sched_book(&nodes, &job, &q), 0, "%s", bus_last_error());
  const sched_node *live = sched_nodes_find(&keep, "a");
  for (int i = 0; i < o->capacity.ndevices; i++)
    cr_assert_eq(o->dev_used[i], live->dev_used[i], "%s",
                 o->capacity.devices[i].name);
  /* booked twice: the robot is held, nothing booked */
  cr_assert_eq(sched_book(&nodes, &job, &q), BUS_ECONFLICT);
  cr_assert_eq(used(o, SCHED_DEVICE_CLASS), 3);
  sched_release(&nodes, &job, &q);
  for (int i = 0; i < o->capacity.ndevices; i++)
    cr_assert_eq(o->dev_used[i], 0);
  /* a binding naming a device the request does not: refused */
  free(q.bindings[0].devices[0]);
  q.bindings[0].devices[0] = strdup("camera/wrist");
  cr_assert_eq(sched_book(&nodes, &job, &q), BUS_ECONFLICT);
  for (int i = 0; i < o->capacity.ndevices; i++)
    cr_assert_eq(o->dev_used[i], 0, "nothing booked");
  sched_placement_clear(&q);
  sched_nodes_clear(&nodes);
  nodes = keep;
  msgpack_unpacked_destroy(&up);
  bus_packbuf_destroy(&pb);
}
