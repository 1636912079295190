/*
 * ingress.c - what nodes tell lark-devices, on lark.in.<node>.dev.>:
 *
 *   robot.report   lark.in.<node>.dev.robot.<robot>    -> robot.<event>
 *   camera.report  lark.in.<node>.dev.camera.<camera>  -> camera.<event>
 *   robot.request  lark.in.<node>.dev.request.<robot>  -> robot.commanded
 *
 * A node may only write its own ingress subjects (the broker enforces
 * it), so the <node> token names the sender, and nothing it sends is
 * trusted beyond that: a report is taken only for a device the view has
 * on that node, a request only from the pod that holds the robot there
 * (the node already refused any other; this is defence). What passes is
 * appended on lark.ev.device.<node>.<name> with the broker's version
 * check and an id derived from the message's, so a message delivered
 * again after a crash lands once; what does not is logged and dropped.
 *
 * One worker (bus_worker): fetch, handle each message in order, ack. A
 * broker that does not answer now has refused nothing: the message is
 * handled again, in place, until it is stored or refused by the rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larkdevices-int.h"

struct devices_ingress {
  svc_ingress s; /* first: the worker's ud */
};

void
devices_ingress_opts_init(devices_ingress_opts *o) {
  memset(o, 0, sizeof *o);
  o->durable = "devices-ingress";
  o->batch = 256;
  o->ack_wait_ns = INT64_C(5000000000);
}

/* One message, its route: lark.in.<node>.dev.<what>.<name>. */
typedef struct msg {
  char node[DEV_NAME_SZ], what[16], name[DEV_NAME_SZ];
  const bus_event *ev;
  char actor[DEV_NAME_SZ + 8];
} msg;

static int
route(const char *subject, msg *m) {
  bus_in_route r;
  int rc = bus_in_route_parse(subject, &r);
  if (rc)
    return rc;
  if (!r.name || strcmp(r.kind, "dev") || strlen(r.node) >= DEV_NAME_SZ ||
      strlen(r.what) >= sizeof m->what || strlen(r.name) >= DEV_NAME_SZ)
    return bus_error(BUS_EINVAL, "not a device ingress subject");
  strcpy(m->node, r.node);
  strcpy(m->what, r.what);
  strcpy(m->name, r.name);
  snprintf(m->actor, sizeof m->actor, "node:%s", r.node);
  return 0;
}

/* The device as the view has it, and its subject's version. */
static int
device(devices_ingress *in, const msg *m, dev_rec *d, uint64_t *ver) {
  bus_txn *t;
  char subject[BUS_SUBJECT_MAX];
  int rc = bus_view_read(in->s.v, &t);
  if (rc)
    return rc;
  rc = dev_get(t, m->node, m->name, d);
  bus_version v = {0};
  if (!rc && !(rc = bus_subj_robot_commanded(subject, sizeof subject, m->node,
                                             m->name)))
    rc = bus_txn_version(t, subject, &v);
  *ver = v.seq;
  bus_txn_end(t);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(BUS_EDENIED, "node %s has no device %s", m->node, m->name);
  return rc;
}

/* Append out for m: id derived from the message's, prev the view's
 * version, or the subject's own last one when the view lags. A subject
 * that moved on at every try is BUS_EBUSY, and m is tried again. */
static int
append(devices_ingress *in, const msg *m, bus_event *out, uint64_t prev,
       const char *cause) {
  char subject[BUS_SUBJECT_MAX], id[33];
  int rc = bus_subj_robot_commanded(subject, sizeof subject, m->node, m->name);
  bus_event_derive_id(m->ev->id, 0, id);
  out->type = bus_type_name(out->t);
  out->id = id;
  out->ts = bus_wall_ns();
  out->actor = m->actor;
  out->cause = cause;
  return rc ? rc
            : bus_append_rebased(in->s.c, "LARK_EVENTS", subject, out, prev,
                                 DEV_APPEND_TRIES, NULL);
}

/* --------------------------------------------------------------- robots */

static const char *const robot_events[] = {"started",   "switched", "exited",
                                           "restarted", "stopped",  NULL};
static const bus_type robot_types[] = {
    BUS_T_ROBOT_STARTED, BUS_T_ROBOT_SWITCHED, BUS_T_ROBOT_EXITED,
    BUS_T_ROBOT_RESTARTED, BUS_T_ROBOT_STOPPED};

/* One struct for the five: they share the schema's layout of fields. */
#define ROBOT_OBS(r, nd)                                                       \
  {                                                                            \
    .node = bus_str_of(nd), .robot = (r)->robot, .has_mode = (r)->has_mode,    \
    .mode = (r)->mode, .has_version = (r)->has_version,                        \
    .version = (r)->version, .has_exitCode = (r)->has_exitCode,                \
    .exitCode = (r)->exitCode, .has_signal = (r)->has_signal,                  \
    .signal = (r)->signal, .has_restarts = (r)->has_restarts,                  \
    .restarts = (r)->restarts, .has_reason = (r)->has_reason,                  \
    .reason = (r)->reason                                                      \
  }

static int
robot_report(devices_ingress *in, const msg *m) {
  const bus_ev_robot_report *r = bus_as_robot_report(m->ev);
  dev_rec d;
  uint64_t ver;
  if (!bus_str_eq(r->robot, m->name))
    return bus_error(BUS_EDENIED, "a report for %.*s on %s's subject",
                     (int)r->robot.len, r->robot.ptr, m->name);
  int rc = device(in, m, &d, &ver), i = 0;
  if (!rc && d.kind == DEV_CAMERA)
    rc = bus_error(BUS_EDENIED, "%s/%s is a camera", m->node, m->name);
  while (!rc && robot_events[i] && !bus_str_eq(r->event, robot_events[i]))
    i++;
  if (rc || !robot_events[i])
    return rc ? rc : bus_error(BUS_EINVAL, "unknown robot event");
  bus_ev_robot_started started = ROBOT_OBS(r, m->node);
  bus_ev_robot_switched switched = ROBOT_OBS(r, m->node);
  bus_ev_robot_exited exited = ROBOT_OBS(r, m->node);
  bus_ev_robot_restarted restarted = ROBOT_OBS(r, m->node);
  bus_ev_robot_stopped stopped = ROBOT_OBS(r, m->node);
  const void *data[] = {&started, &switched, &exited, &restarted, &stopped};
  bus_event out = {.t = robot_types[i], .typed = data[i]};
  return append(in, m, &out, ver, m->ev->id);
}

static int
robot_request(devices_ingress *in, const msg *m) {
  const bus_ev_robot_request *r = bus_as_robot_request(m->ev);
  char pod[DEV_DNAME_SZ], mode[DEV_NAME_SZ], request[136];
  dev_rec d;
  uint64_t ver;
  dev_copy(pod, sizeof pod, r->pod);
  dev_copy(mode, sizeof mode, r->mode);
  dev_copy(request, sizeof request, r->request);
  if (!bus_str_eq(r->robot, m->name))
    return bus_error(BUS_EDENIED, "a request for %.*s on %s's subject",
                     (int)r->robot.len, r->robot.ptr, m->name);
  int rc = device(in, m, &d, &ver);
  if (rc)
    return rc;
  if (d.kind == DEV_CAMERA || strcmp(d.holder, pod))
    return bus_error(BUS_EDENIED, "pod %s does not hold robot %s/%s", pod,
                     m->node, m->name);
  if ((bus_str_eq(r->op, "mode") && !mode[0]) ||
      (mode[0] && !dev_has_mode(&d, mode)))
    return bus_error(BUS_EDENIED, "robot %s/%s has no mode %s", m->node,
                     m->name, mode);
  bus_ev_robot_commanded e = {.node = bus_str_of(m->node),
                              .robot = r->robot,
                              .op = r->op,
                              .has_mode = r->has_mode && mode[0],
                              .mode = r->mode,
                              .has_pod = 1,
                              .pod = r->pod,
                              .has_holder = 1,
                              .holder = r->pod};
  bus_event out = {.t = BUS_T_ROBOT_COMMANDED, .typed = &e};
  return append(in, m, &out, ver, request);
}

/* -------------------------------------------------------------- cameras */

static const char *const camera_events[] = {"opened", "closed", "captured",
                                            "error", NULL};
static const bus_type camera_types[] = {
    BUS_T_CAMERA_OPENED, BUS_T_CAMERA_CLOSED, BUS_T_CAMERA_CAPTURED,
    BUS_T_CAMERA_ERROR};

#define CAMERA_OBS(r, nd)                                                      \
  {                                                                            \
    .node = bus_str_of(nd), .camera = (r)->camera, .has_pod = (r)->has_pod,    \
    .pod = (r)->pod, .has_width = (r)->has_width, .width = (r)->width,         \
    .has_height = (r)->has_height, .height = (r)->height,                      \
    .has_frames = (r)->has_frames, .frames = (r)->frames,                      \
    .has_bytes = (r)->has_bytes, .bytes = (r)->bytes,                          \
    .has_reason = (r)->has_reason, .reason = (r)->reason                       \
  }

static int
camera_report(devices_ingress *in, const msg *m) {
  const bus_ev_camera_report *r = bus_as_camera_report(m->ev);
  dev_rec d;
  uint64_t ver;
  if (!bus_str_eq(r->camera, m->name))
    return bus_error(BUS_EDENIED, "a report for %.*s on %s's subject",
                     (int)r->camera.len, r->camera.ptr, m->name);
  int rc = device(in, m, &d, &ver), i = 0;
  if (!rc && d.kind != DEV_CAMERA)
    rc = bus_error(BUS_EDENIED, "%s/%s is not a camera", m->node, m->name);
  while (!rc && camera_events[i] && !bus_str_eq(r->event, camera_events[i]))
    i++;
  if (rc || !camera_events[i])
    return rc ? rc : bus_error(BUS_EINVAL, "unknown camera event");
  bus_ev_camera_opened opened = CAMERA_OBS(r, m->node);
  bus_ev_camera_closed closed = CAMERA_OBS(r, m->node);
  bus_ev_camera_captured captured = CAMERA_OBS(r, m->node);
  bus_ev_camera_error error = CAMERA_OBS(r, m->node);
  const void *data[] = {&opened, &closed, &captured, &error};
  bus_event out = {.t = camera_types[i], .typed = data[i]};
  return append(in, m, &out, ver, m->ev->id);
}

/* ------------------------------------------------------------- the loop */

static int
handle(devices_ingress *in, const char *subject, const bus_event *ev) {
  msg m;
  int rc = route(subject, &m);
  if (rc)
    return rc;
  m.ev = ev;
  if (ev->t == BUS_T_ROBOT_REPORT && !strcmp(m.what, "robot"))
    return robot_report(in, &m);
  if (ev->t == BUS_T_ROBOT_REQUEST && !strcmp(m.what, "request"))
    return robot_request(in, &m);
  if (ev->t == BUS_T_CAMERA_REPORT && !strcmp(m.what, "camera"))
    return camera_report(in, &m);
  return bus_error(BUS_EINVAL, "unexpected %s on %s", ev->type, m.what);
}

/* One message's try: a refusal for a device the view does not have yet
 * is tried again once the view has caught up (a node reports right after
 * it registered). */
typedef struct one_msg {
  devices_ingress *in;
  const char *subject;
  const bus_event *ev;
  int caught;
} one_msg;

static int
attempt(void *ud) {
  one_msg *m = ud;
  int rc = handle(m->in, m->subject, m->ev);
  if (rc == BUS_EDENIED && !m->caught++) {
    bus_view_catch_up(m->in->s.c, m->in->s.v, NULL, 5000);
    rc = handle(m->in, m->subject, m->ev);
  }
  return rc;
}

/* Until stored or refused for good; non-zero when told to stop. */
static int
handle_until_stored(devices_ingress *in, const char *subject,
                    const bus_event *ev) {
  one_msg m = {in, subject, ev, 0};
  return svc_queue_until_stored(&in->s.q, subject, attempt, &m) == 1;
}

static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  devices_ingress *in = ud;
  in->s.q.w = w;
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const char *subject;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    const bus_event *ev = bus_batch_event(b, i);
    if (!ev || !ev->typed) {
      svc_queue_say(&in->s.q, subject, "refused: undecodable: %s",
                    bus_strerror(bus_batch_status(b, i)));
      continue;
    }
    if (handle_until_stored(in, subject, ev))
      return; /* told to stop: the batch comes again */
  }
  bus_batch_ack(b);
}

int
devices_ingress_start(bus_conn *c, bus_view *v, const devices_ingress_opts *o,
                      devices_ingress **out) {
  devices_ingress_opts def;
  devices_ingress_opts_init(&def);
  void *in = NULL;
  int rc = svc_ingress_start(sizeof(devices_ingress), c, v, o, &def,
                             "lark.in.*.dev.>", handle_batch, &in);
  *out = rc ? NULL : in;
  return rc;
}

void
devices_ingress_stop(devices_ingress *in) {
  svc_ingress_stop(in ? &in->s : NULL);
}
