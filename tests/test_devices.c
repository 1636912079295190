/*
 * test_devices.c - lark-devices' view without a broker: registered
 * devices and their rows, commands that queue robot.desired (version =
 * the command's sequence, the request id echoed), what nodes report, the
 * holder taken from job.placed and given back when its pod ends or its
 * node is lost (then decide stops the robot once), NotReady shown as
 * Unknown, the queries'
 * refusals, and a replay of the same events giving the same digest.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bed.h"
#include "cmd.h"
#include "larkdevices.h"

static bus_view *view;
static char dir[256];
static uint64_t seq;
static int nfed; /* events fed (below) */

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "devview");
  bus_view_def def;
  devices_view_def(&def);
  view = lt_must_open_view(&def, dir, 1);
  seq = 0;
  nfed = 0;
}

static void
teardown(void) {
  bus_view_close(view);
  lt_rmtree(dir);
}

TestSuite(devices, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t
version_of(bus_view *v, const char *subject) {
  bus_txn *t;
  bus_version ver = {0};
  cr_assert_eq(bus_view_read(v, &t), 0);
  bus_txn_version(t, subject, &ver);
  bus_txn_end(t);
  return ver.seq;
}

/* Every event fed, kept to replay them into a fresh view. */
#define MAX_FED 64
static struct fed {
  char subject[128], id[33], cause[64];
  bus_type type;
  msgpack_sbuffer data;
  uint64_t prev, seq;
} fed[MAX_FED];

/* Apply the typed event (its prev the subject's version) to v. */
static int
apply_to(bus_view *v, struct fed *f) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  cr_assert(msgpack_unpack(f->data.data, f->data.size, NULL, &z, &o) >= 0);
  bus_event ev = {.v = 1,
                  .type = bus_type_name(f->type),
                  .id = f->id,
                  .ts = (int64_t)f->seq,
                  .actor = "t",
                  .cause = f->cause,
                  .prev = f->prev,
                  .data = o,
                  .subject = f->subject,
                  .seq = f->seq};
  const bus_event *evs[1] = {&ev};
  int rc = bus_view_apply(v, evs, 1);
  msgpack_zone_destroy(&z);
  return rc;
}

/* Feed one event: its data the generated struct d of type. */
static uint64_t
feed(const char *subject, bus_type type, const void *d, const char *cause) {
  cr_assert_lt(nfed, MAX_FED);
  struct fed *f = &fed[nfed++];
  snprintf(f->subject, sizeof f->subject, "%s", subject);
  snprintf(f->cause, sizeof f->cause, "%s", cause ? cause : "");
  bus_event_new_id(f->id);
  f->type = type;
  msgpack_sbuffer_init(&f->data);
  cr_assert_eq(bus_data_pack(type, d, &f->data), 0, "%s", bus_last_error());
  f->prev = version_of(view, subject);
  f->seq = ++seq;
  cr_assert_eq(apply_to(view, f), 0, "%s", bus_last_error());
  return f->seq;
}

static void
register_node(const char *node, int with_cam) {
  const bus_str modes[] = {BUS_STR("idle"), BUS_STR("pick")};
  bus_device devs[3] = {{.name = BUS_STR("arm-1"),
                         .kind = BUS_STR("ros"),
                         .has_modes = 1,
                         .modes = {modes, 2}},
                        {.name = BUS_STR("base"), .kind = BUS_STR("ros2")},
                        {.name = BUS_STR("wrist"),
                         .kind = BUS_STR("camera"),
                         .has_source = 1,
                         .source = BUS_STR("pattern"),
                         .has_width = 1,
                         .width = 640,
                         .has_height = 1,
                         .height = 480,
                         .has_fps = 1,
                         .fps = 30}};
  bus_node_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                    .kind = BUS_STR("Node"),
                    .metadata = {.name = bus_str_of(node)},
                    .spec = {.cluster = BUS_STR("c1"),
                             .capacity = {.has_cpu = 1, .cpu = 4},
                             .has_devices = 1,
                             .devices = {devs, with_cam ? 3 : 2}}};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", node);
  feed(subject, BUS_T_NODE_REGISTERED, &r, NULL);
}

static uint64_t
command(const char *node, const char *robot, const char *op, const char *mode,
        const char *pod, const char *cause) {
  bus_ev_robot_commanded e = {.node = bus_str_of(node),
                              .robot = bus_str_of(robot),
                              .op = bus_str_of(op),
                              .has_mode = mode != NULL,
                              .mode = bus_str_of(mode),
                              .has_pod = pod != NULL,
                              .pod = bus_str_of(pod)};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.device.%s.%s", node, robot);
  return feed(subject, BUS_T_ROBOT_COMMANDED, &e, cause);
}

static void
observe(const char *node, const char *robot, bus_type type, int code) {
  bus_ev_robot_started e = {.node = bus_str_of(node),
                            .robot = bus_str_of(robot),
                            .has_exitCode = code >= 0,
                            .exitCode = code,
                            .has_mode = 1,
                            .mode = BUS_STR("pick")};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.device.%s.%s", node, robot);
  feed(subject, type, &e, NULL);
}

static void
placed(const char *job, const char *pod, const char *node, const char *dev) {
  bus_str devs[1] = {bus_str_of(dev)};
  bus_binding b = {.pod = bus_str_of(pod),
                   .task = BUS_STR("j-a"),
                   .node = bus_str_of(node),
                   .has_devices = 1,
                   .devices = {devs, 1}};
  bus_ev_job_placed e = {
      .pool = BUS_STR("default"), .job = bus_str_of(job), .bindings = {&b, 1}};
  feed("lark.ev.placement.default", BUS_T_JOB_PLACED, &e, NULL);
}

static void
phase(const char *pod, const char *node, const char *ph) {
  bus_ev_pod_phase e = {.phase = bus_str_of(ph), .node = bus_str_of(node)};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.pod.%s", pod);
  feed(subject, BUS_T_POD_PHASE, &e, NULL);
}

/* ---------------------------------------------------------- reading */

/* The query's result (kind.verb with {node, name|robot}) into z. */
static msgpack_object
ask(const char *kind, const char *verb, const char *node, const char *name,
    msgpack_zone *z, int *ok) {
  bus_packbuf req;
  bus_packbuf_init(&req);
  msgpack_pack_map(&req.pk, 3);
  bus_pack_kv_str(&req.pk, "node", node ? node : "");
  bus_pack_kv_str(&req.pk, "name", name ? name : "");
  bus_pack_kv_str(&req.pk, "robot", name ? name : "");
  msgpack_object r, o;
  cr_assert(msgpack_unpack(req.sb.data, req.sb.size, NULL, z, &r) >= 0);
  msgpack_sbuffer out;
  msgpack_sbuffer_init(&out);
  bus_query_answer(view, devices_query, kind, verb, &r, &out, NULL);
  cr_assert(lt_unpack_into(z, out.data, out.size, &o) >= 0);
  msgpack_sbuffer_destroy(&out);
  bus_packbuf_destroy(&req);
  const msgpack_object *res = bus_obj_get(&o, "result");
  *ok = res != NULL;
  return res ? *res : o;
}

/* A field of device node/name's row, as text. */
static const char *
row(const char *node, const char *name, const char *key, char *buf,
    size_t cap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  int ok;
  msgpack_object o = ask("device", "get", node, name, &z, &ok);
  cr_assert(ok, "device.get %s/%s refused", node, name);
  const msgpack_object *item = bus_obj_get(&o, "item");
  cr_assert_not_null(item);
  const msgpack_object *v = bus_obj_get(item, key);
  buf[0] = 0;
  if (v && v->type == MSGPACK_OBJECT_STR)
    snprintf(buf, cap, "%.*s", (int)v->via.str.size, v->via.str.ptr);
  else if (v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    snprintf(buf, cap, "%llu", (unsigned long long)v->via.u64);
  else if (v && v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    snprintf(buf, cap, "%lld", (long long)v->via.i64);
  msgpack_zone_destroy(&z);
  return buf;
}

#define expect_row(node, name, key, want)                                      \
  do {                                                                         \
    char b_[256];                                                              \
    cr_expect_str_eq(row(node, name, key, b_, sizeof b_), want, "%s/%s %s",    \
                     node, name, key);                                         \
  } while (0)

/* The outbox's entries: how many of type, and the last one's data. */
typedef struct seen {
  const char *type;
  int n;
  char subject[128];
  msgpack_sbuffer last;
} seen;

static int
outbox_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  seen *s = ud;
  const unsigned char *p = v;
  size_t slen = (size_t)p[1] << 8 | p[2], idlen = p[3], off = 4 + slen + idlen;
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  cr_assert_eq(bus_event_decode(p + off, vl - off, &ev, &z), 0);
  if (!strcmp(ev.type, s->type)) {
    s->n++;
    snprintf(s->subject, sizeof s->subject, "%.*s", (int)slen, p + 4);
    msgpack_sbuffer_clear(&s->last);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &s->last, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, ev.data);
  }
  msgpack_zone_destroy(&z);
  return 0;
}

static void
outbox(seen *s, const char *type) {
  memset(s, 0, sizeof *s);
  s->type = type;
  msgpack_sbuffer_init(&s->last);
  bus_txn *t;
  cr_assert_eq(bus_view_read(view, &t), 0);
  bus_txn_scan(t, "_outbox", NULL, 0, outbox_cb, s);
  bus_txn_end(t);
}

static const char *
last_field(seen *s, const char *key, char *buf, size_t cap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  buf[0] = 0;
  if (s->last.size &&
      msgpack_unpack(s->last.data, s->last.size, NULL, &z, &o) >= 0) {
    const msgpack_object *v = bus_obj_get(&o, key);
    if (v && v->type == MSGPACK_OBJECT_STR)
      snprintf(buf, cap, "%.*s", (int)v->via.str.size, v->via.str.ptr);
    else if (v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
      snprintf(buf, cap, "%llu", (unsigned long long)v->via.u64);
  }
  msgpack_zone_destroy(&z);
  return buf;
}

/* ------------------------------------------------------------ tests */

Test(devices, registered_devices_are_rows) {
  char b[256];
  register_node("n1", 1);
  expect_row("n1", "arm-1", "kind", "ros");
  expect_row("n1", "arm-1", "state", "Stopped");
  expect_row("n1", "arm-1", "desired", "Stopped");
  expect_row("n1", "arm-1", "mode", "idle"); /* the first mode */
  expect_row("n1", "base", "kind", "ros2");
  expect_row("n1", "wrist", "kind", "camera");
  expect_row("n1", "wrist", "state", "Closed");
  expect_row("n1", "wrist", "width", "640");
  expect_row("n1", "wrist", "source", "pattern");
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  int ok;
  msgpack_object o = ask("device", "list", NULL, NULL, &z, &ok);
  const msgpack_object *items = bus_obj_get(&o, "items");
  cr_assert(ok && items && items->type == MSGPACK_OBJECT_ARRAY);
  cr_expect_eq(items->via.array.size, 3);
  o = ask("robot", "status", "n1", NULL, &z, &ok);
  items = bus_obj_get(&o, "items");
  cr_assert(ok && items);
  cr_expect_eq(items->via.array.size, 2, "robots only");
  ask("device", "get", "n1", "nope", &z, &ok);
  cr_expect(!ok, "an unknown device is refused");
  ask("device", "frob", "n1", "arm-1", &z, &ok);
  cr_expect(!ok, "an unknown verb is refused");
  msgpack_zone_destroy(&z);
  /* registered again without the camera: it is gone, the robots stay */
  command("n1", "arm-1", "start", "pick", NULL, NULL);
  register_node("n1", 0);
  expect_row("n1", "arm-1", "desired", "Running");
  msgpack_zone_init(&z, 1024);
  ask("device", "get", "n1", "wrist", &z, &ok);
  cr_expect(!ok, "a device no longer declared is gone");
  msgpack_zone_destroy(&z);
  (void)b;
}

Test(devices, command_queues_desired_with_its_sequence) {
  char b[256];
  register_node("n1", 1);
  uint64_t s = command("n1", "arm-1", "start", "pick", NULL, NULL);
  expect_row("n1", "arm-1", "desired", "Running");
  expect_row("n1", "arm-1", "mode", "pick");
  seen o;
  outbox(&o, "robot.desired");
  cr_assert_eq(o.n, 1);
  cr_expect_str_eq(o.subject, "lark.node.n1.robot.arm-1");
  cr_expect_str_eq(last_field(&o, "desired", b, sizeof b), "Running");
  cr_expect_str_eq(last_field(&o, "mode", b, sizeof b), "pick");
  snprintf(b, sizeof b, "%llu", (unsigned long long)s);
  char v[64];
  cr_expect_str_eq(last_field(&o, "version", v, sizeof v), b);
  cr_expect_str_eq(last_field(&o, "request", v, sizeof v), fed[nfed - 1].id,
                   "an operator's command: its event id");
  msgpack_sbuffer_destroy(&o.last);
  /* a pod's request echoes the request's id (the event's cause) */
  placed("j", "j-a-0", "n1", "robot/arm-1");
  command("n1", "arm-1", "reset", NULL, "j-a-0", "req-42");
  outbox(&o, "robot.desired");
  cr_expect_eq(o.n, 2);
  cr_expect_str_eq(last_field(&o, "request", b, sizeof b), "req-42");
  cr_expect_str_eq(last_field(&o, "resets", b, sizeof b), "1");
  cr_expect_str_eq(last_field(&o, "holder", b, sizeof b), "j-a-0");
  msgpack_sbuffer_destroy(&o.last);
  command("n1", "arm-1", "stop", NULL, NULL, NULL);
  expect_row("n1", "arm-1", "desired", "Stopped");
  /* a start without a mode runs the default (the first), not the last */
  command("n1", "arm-1", "start", NULL, NULL, NULL);
  expect_row("n1", "arm-1", "mode", "idle");
}

Test(devices, reports_set_the_observed_state) {
  register_node("n1", 1);
  command("n1", "arm-1", "start", NULL, NULL, NULL);
  observe("n1", "arm-1", BUS_T_ROBOT_STARTED, -1);
  expect_row("n1", "arm-1", "state", "Running");
  expect_row("n1", "arm-1", "runningMode", "pick");
  observe("n1", "arm-1", BUS_T_ROBOT_EXITED, 3);
  expect_row("n1", "arm-1", "state", "Restarting");
  expect_row("n1", "arm-1", "exitCode", "3");
  observe("n1", "arm-1", BUS_T_ROBOT_RESTARTED, -1);
  expect_row("n1", "arm-1", "state", "Running");
  command("n1", "arm-1", "stop", NULL, NULL, NULL);
  observe("n1", "arm-1", BUS_T_ROBOT_STOPPED, -1);
  expect_row("n1", "arm-1", "state", "Stopped");
  bus_ev_camera_opened c = {.node = BUS_STR("n1"), .camera = BUS_STR("wrist")};
  feed("lark.ev.device.n1.wrist", BUS_T_CAMERA_OPENED, &c, NULL);
  expect_row("n1", "wrist", "state", "Open");
  c.has_frames = c.has_bytes = 1;
  c.frames = 10;
  c.bytes = 1000;
  feed("lark.ev.device.n1.wrist", BUS_T_CAMERA_CLOSED, &c, NULL);
  expect_row("n1", "wrist", "state", "Closed");
  expect_row("n1", "wrist", "frames", "10");
  bus_ev_node_notready nr = {0};
  feed("lark.ev.node.n1", BUS_T_NODE_NOTREADY, &nr, NULL);
  expect_row("n1", "arm-1", "state", "Unknown");
  expect_row("n1", "wrist", "state", "Unknown");
  bus_ev_node_ready r = {0};
  feed("lark.ev.node.n1", BUS_T_NODE_READY, &r, NULL);
  expect_row("n1", "arm-1", "state", "Stopped");
}

Test(devices, holder_end_stops_the_robot_once) {
  char b[256];
  register_node("n1", 1);
  placed("j", "j-a-0", "n1", "robot/arm-1");
  placed("k", "k-a-0", "n1", "camera/wrist");
  placed("m", "m-a-0", "n1", "robot/wrist"); /* not a robot: held by none */
  expect_row("n1", "arm-1", "holder", "j-a-0");
  expect_row("n1", "wrist", "holder", "k-a-0");
  command("n1", "arm-1", "start", NULL, "j-a-0", "r1");
  phase("j-a-0", "n2", "Succeeded"); /* not its node: nothing */
  expect_row("n1", "arm-1", "holder", "j-a-0");
  phase("j-a-0", "n1", "Running");
  expect_row("n1", "arm-1", "holder", "j-a-0");
  phase("j-a-0", "n1", "Succeeded");
  expect_row("n1", "arm-1", "holder", "");
  seen o;
  outbox(&o, "robot.commanded");
  cr_assert_eq(o.n, 1, "one stop, however many passes decide makes");
  cr_expect_str_eq(o.subject, "lark.ev.device.n1.arm-1");
  cr_expect_str_eq(last_field(&o, "op", b, sizeof b), "stop");
  cr_expect_str_eq(last_field(&o, "reason", b, sizeof b),
                   "holder pod j-a-0 ended");
  msgpack_sbuffer_destroy(&o.last);
  bus_view_tick(view, 5);
  outbox(&o, "robot.commanded");
  cr_expect_eq(o.n, 1);
  msgpack_sbuffer_destroy(&o.last);
  /* the camera's Job unplaced: its holder goes, nothing to stop */
  bus_ev_job_unplaced u = {.pool = BUS_STR("default"), .job = BUS_STR("k")};
  feed("lark.ev.placement.default", BUS_T_JOB_UNPLACED, &u, NULL);
  expect_row("n1", "wrist", "holder", "");
  outbox(&o, "robot.commanded");
  cr_expect_eq(o.n, 1);
  msgpack_sbuffer_destroy(&o.last);
}

Test(devices, events_for_unknown_devices_are_rejected) {
  register_node("n1", 1);
  bus_view_stats st;
  command("n1", "ghost", "start", NULL, NULL, NULL);
  observe("n1", "wrist", BUS_T_ROBOT_STARTED, -1); /* a camera */
  cr_assert_eq(bus_view_stats_get(view, &st), 0);
  cr_expect_eq(st.rejected, 2);
  seen o;
  outbox(&o, "robot.desired");
  cr_expect_eq(o.n, 0);
  msgpack_sbuffer_destroy(&o.last);
}

Test(devices, replay_gives_the_same_digest) {
  register_node("n1", 1);
  placed("j", "j-a-0", "n1", "robot/arm-1");
  command("n1", "arm-1", "start", "pick", "j-a-0", "r1");
  observe("n1", "arm-1", BUS_T_ROBOT_STARTED, -1);
  phase("j-a-0", "n1", "Failed");
  command("n1", "base", "reset", NULL, NULL, NULL);
  char rdir[256];
  lt_tmpdir(rdir, sizeof rdir, "devreplay");
  bus_view_def def;
  devices_view_def(&def);
  bus_view *r = lt_must_open_view(&def, rdir, 0);
  for (int i = 0; i < nfed; i++)
    cr_assert_eq(apply_to(r, &fed[i]), 0, "%s", bus_last_error());
  uint8_t d1[32], d2[32];
  uint64_t s1, s2;
  cr_assert_eq(bus_view_digest(view, d1, &s1), 0);
  cr_assert_eq(bus_view_digest(r, d2, &s2), 0);
  cr_expect_eq(s1, s2);
  cr_expect(!memcmp(d1, d2, 32), "live and replayed views differ");
  bus_view_close(r);
  lt_rmtree(rdir);
}

Test(devices, node_lost_ends_its_holders) {
  register_node("n1", 1);
  register_node("n2", 1);
  placed("j", "j-a-0", "n1", "robot/arm-1");
  placed("k", "k-a-0", "n2", "robot/arm-1");
  command("n1", "arm-1", "start", NULL, "j-a-0", "r1");
  bus_ev_node_notready nr = {0};
  feed("lark.ev.node.n1", BUS_T_NODE_NOTREADY, &nr, NULL);
  expect_row("n1", "arm-1", "holder", "");
  expect_row("n2", "arm-1", "holder", "k-a-0"); /* another node's */
  seen o;
  outbox(&o, "robot.commanded");
  cr_expect_eq(o.n, 1, "the robot its lost pod held is stopped");
  cr_expect_str_eq(o.subject, "lark.ev.device.n1.arm-1");
  msgpack_sbuffer_destroy(&o.last);
}
