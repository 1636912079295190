/*
 * test_scheduler_devices.c - lark-scheduler with robots and cameras, as a
 * real process against a real broker: nodes registering named devices, a
 * Job asking for one by name is bound to it (Binding.devices, the pod's
 * describe, pod.desired's boundDevices), a second one waits while it is
 * held and is placed once the holder ends, a stopped Job gives its hold
 * back, a robot with a subnet makes its pod raw+netns, a bad device key is
 * refused, and the view replays to the same digest.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd_check.h"
#include "events.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"

LT_SCHED_SUITE(scheduler_devices, "scheddev");

#define wait_field(kind, name, key, want)                                      \
  lt_field_becomes(conn, kind, lt_sub_of(kind), name, key, want, 15)

/* A node offering runtimes (a JSON list) with devices (a JSON list). */
static void
node(const char *name, const char *runtimes, const char *devices) {
  char json[2048];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"c1\",\"runtimes\":%s,\"capacity\":{\"cpu\":8,"
           "\"memory\":16384},\"devices\":%s}}}",
           name, runtimes, devices);
  lt_must_apply(conn, "node", json);
}

/* A Job of one pod asking for devices (a JSON map); the reply. */
static msgpack_object
job(const char *name, const char *devices, msgpack_zone *z) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"tasks\":[{\"name\":\"a\",\"role\":\"Env\",\"resources\":{"
           "\"cpu\":1,\"memory\":128,\"devices\":%s},\"runtime\":{\"raw\":{"
           "\"entrypoint\":[\"true\"]}}}]}}}",
           name, devices);
  return lt_must_command(conn, "job", "apply", json, z);
}

static void
must_job(const char *name, const char *devices) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r = job(name, devices, &z);
  lt_expect_ok(&r);
  msgpack_zone_destroy(&z);
}

/* The strings of list l joined with ',' into out. */
static const char *
joined(const msgpack_object *l, char *out, size_t cap) {
  out[0] = 0;
  for (uint32_t i = 0;
       l && l->type == MSGPACK_OBJECT_ARRAY && i < l->via.array.size; i++) {
    const msgpack_object *s = &l->via.array.ptr[i];
    if (s->type == MSGPACK_OBJECT_STR)
      snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", i ? "," : "",
               (int)s->via.str.size, s->via.str.ptr);
  }
  return out;
}

/* The devices pod holds, as its describe says. */
static const char *
pod_devices(const char *pod, char *out, size_t cap) {
  msgpack_zone z;
  msgpack_object r;
  msgpack_zone_init(&z, 4096);
  out[0] = 0;
  if (lt_command(conn, "pod", "describe", json_pack("{s:s}", "name", pod), &z,
                 &r) == 0)
    joined(bus_obj_get(bus_obj_get(&r, "result"), "devices"), out, cap);
  msgpack_zone_destroy(&z);
  return out;
}

/* The last pod.desired of pod on node, waited for until its runtime and
 * boundDevices are as wanted (up to 10 s). */
static void
expect_desired(const char *node_name, const char *pod, const char *runtime,
               const char *bound) {
  char stream[96], subject[160], rt[32] = "", got[256] = "";
  snprintf(stream, sizeof stream, "LARK_NODE_%s", node_name);
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node_name, pod);
  for (int i = 0; i < 100; i++, usleep(100 * 1000)) {
    msgpack_zone z;
    bus_event ev;
    msgpack_zone_init(&z, 4096);
    memset(&ev, 0, sizeof ev);
    if (bus_last_event(conn, stream, subject, &ev, &z) == 0) {
      bus_obj_str(&ev.data, "runtime", rt, sizeof rt);
      joined(bus_obj_get(&ev.data, "boundDevices"), got, sizeof got);
    }
    msgpack_zone_destroy(&z);
    if (!strcmp(rt, runtime) && !strcmp(got, bound))
      return;
  }
  cr_assert_fail("%s's desired state: runtime %s, boundDevices [%s]; wanted "
                 "%s, [%s]",
                 pod, rt, got, runtime, bound);
}

/* The node says the pod reached phase. */
static void
report(const char *node_name, const char *pod, const char *phase) {
  char what[128];
  bus_packbuf b;
  snprintf(what, sizeof what, "pod.%s", pod);
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 4);
  bus_pack_kv_str(&b.pk, "pod", pod);
  bus_pack_kv_str(&b.pk, "phase", phase);
  bus_pack_kv_uint(&b.pk, "attempt", 0);
  bus_pack_kv_int(&b.pk, "exitCode", 0);
  lt_ingress(conn, node_name, "pod.report", what, &b.sb);
  bus_packbuf_destroy(&b);
}

#define ARM1 "{\"name\":\"arm-1\",\"kind\":\"ros2\",\"modes\":[\"joint\"]}"
#define WRIST "{\"name\":\"wrist\",\"kind\":\"camera\",\"source\":\"pattern\"}"
#define ARM9                                                                   \
  "{\"name\":\"arm-9\",\"kind\":\"ros\",\"subnet\":{\"parent\":\"eth1\","      \
  "\"cidr\":\"10.9.0.0/24\",\"range\":\"10.9.0.10-10.9.0.20\"}}"

Test(scheduler_devices, named_devices_bound_held_released_and_replayed) {
  char buf[256];
  node("edge-1", "[\"raw\"]", "[" ARM1 "," WRIST "]");
  node("edge-2", "[\"raw\",\"raw+netns\"]", "[" ARM9 "]");

  must_job("grab", "{\"robot/arm-1\":1}");
  cr_assert(wait_field("pod", "grab-a-0", "node", "edge-1"));
  cr_expect_str_eq(pod_devices("grab-a-0", buf, sizeof buf), "robot/arm-1");
  expect_desired("edge-1", "grab-a-0", "raw", "robot/arm-1");

  /* the robot is held: a second Job asking for it waits */
  must_job("grab2", "{\"robot/arm-1\":1}");
  cr_expect(wait_field("job", "grab2", "reason", "~lack free devices"));

  /* a robot with a subnet: its pod runs in its own namespace */
  must_job("sub", "{\"robot/arm-9\":1}");
  cr_assert(wait_field("pod", "sub-a-0", "node", "edge-2"));
  expect_desired("edge-2", "sub-a-0", "raw+netns", "robot/arm-9");

  /* a class request takes the free camera, never the held robot */
  must_job("look", "{\"rlinf.io/device\":1}");
  cr_assert(wait_field("pod", "look-a-0", "node", "edge-1"));
  expect_desired("edge-1", "look-a-0", "raw", "camera/wrist");

  /* the holder ends: its robot goes to the Job that waited */
  report("edge-1", "grab-a-0", "Running");
  report("edge-1", "grab-a-0", "Succeeded");
  cr_assert(wait_field("pod", "grab2-a-0", "node", "edge-1"));
  expect_desired("edge-1", "grab2-a-0", "raw", "robot/arm-1");
  cr_expect_str_eq(pod_devices("grab-a-0", buf, sizeof buf), "");

  /* a stopped Job gives its hold back too */
  must_job("grab3", "{\"robot/arm-1\":1}");
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r =
      lt_must_command(conn, "job", "stop", "{\"name\":\"grab2\"}", &z);
  lt_expect_ok(&r);
  cr_assert(wait_field("pod", "grab3-a-0", "node", "edge-1"));
  expect_desired("edge-1", "grab3-a-0", "raw", "robot/arm-1");
  expect_desired("edge-1", "grab2-a-0", "raw", "");

  /* a named key without a valid name is refused, naming it */
  r = job("bad", "{\"robot/Arm_1\":1}", &z);
  const msgpack_object *e = bus_obj_get(&r, "error");
  cr_assert_not_null(e, "robot/Arm_1 was accepted");
  const msgpack_object *d = bus_obj_get(e, "details");
  cr_assert(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size == 1);
  cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "path", buf, sizeof buf),
                   "spec.tasks[0].resources.devices");
  cr_expect(strstr(bus_obj_str(&d->via.array.ptr[0], "reason", buf, sizeof buf),
                   "robot/Arm_1"),
            "%s", buf);
  msgpack_zone_destroy(&z);

  lt_expect_replay(conn, "scheduler", 20, 0);
}
