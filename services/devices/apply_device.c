/*
 * apply_device.c - lark-devices' own events on lark.ev.device.<node>.<name>:
 * robot.commanded sets a robot's desired state and queues its
 * robot.desired (decide sends it, version = the command's sequence);
 * robot.started, switched, exited, restarted and stopped are what its
 * node saw; camera.* what a camera did.
 *
 * The request a robot.desired echoes is the command's event id for an
 * operator's command, and for a pod's robot.request (robot.commanded with
 * pod set) the request's own id, which the ingress put in the event's
 * cause: the node answers the pod that asked when it applies it.
 */
#include <stdio.h>
#include <string.h>

#include "larkdevices-int.h"

/* The device an event's subject names. BUS_EINVAL (rejected) when the
 * view has no such device, or it is not of the event's family. */
static int
device_of(bus_txn *t, const bus_event *ev, int camera, dev_rec *d) {
  char node[DEV_NAME_SZ], name[DEV_NAME_SZ];
  if (dev_subject_names(ev->subject, node, name))
    return bus_error(BUS_EINVAL, "%s: not a device subject", ev->subject);
  int rc = dev_get(t, node, name, d);
  if (rc == BUS_ENOT_FOUND || (!rc && (d->kind == DEV_CAMERA) != camera))
    return bus_error(BUS_EINVAL, "%s: no such %s", ev->subject,
                     camera ? "camera" : "robot");
  return rc;
}

int
dev_queue_desired(bus_txn *t, dev_rec *d, uint64_t seq) {
  unsigned char key[8 + DEV_KEY_SZ];
  size_t n = dev_key(d->node, d->name, (char *)key + 8);
  int rc = 0;
  if (d->version) {
    bus_put_be64(key, d->version);
    rc = bus_txn_del(t, "desq", key, n + 8);
  }
  d->version = seq;
  bus_put_be64(key, seq);
  return rc ? rc : bus_txn_put(t, "desq", key, n + 8, "", 0);
}

int
dev_apply_commanded(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud) {
  (void)ud;
  const bus_ev_robot_commanded *e = data;
  dev_rec d;
  int rc = device_of(t, ev, 0, &d);
  if (rc)
    return rc;
  if (bus_str_eq(e->op, "stop")) {
    d.running = 0;
  } else {
    d.running = 1;
    if (bus_str_eq(e->op, "reset"))
      d.resets++;
    if (e->has_mode &&
        (bus_str_eq(e->op, "start") || bus_str_eq(e->op, "mode")))
      dev_copy(d.mode, sizeof d.mode, e->mode);
    else if (bus_str_eq(e->op, "start") && d.nmodes) /* the default */
      snprintf(d.mode, sizeof d.mode, "%s", d.modes[0]);
  }
  snprintf(d.request, sizeof d.request, "%s",
           e->has_pod && ev->cause && ev->cause[0] ? ev->cause : ev->id);
  d.ts = ev->ts;
  char key[DEV_KEY_SZ];
  if ((rc = bus_txn_del(t, "ending", key, dev_key(d.node, d.name, key))))
    return rc;
  if ((rc = dev_queue_desired(t, &d, ev->seq)))
    return rc;
  return dev_put(t, &d);
}

/* What every robot observation carries (their structs share one layout
 * in the schema, but are types of their own). */
typedef struct obs {
  bool has_mode, has_exitCode, has_restarts;
  bus_str mode;
  int64_t exitCode;
  uint64_t restarts;
} obs;

#define OBS_OF(e)                                                              \
  (obs) {                                                                      \
    .has_mode = (e)->has_mode, .mode = (e)->mode,                              \
    .has_exitCode = (e)->has_exitCode, .exitCode = (e)->exitCode,              \
    .has_restarts = (e)->has_restarts, .restarts = (e)->restarts               \
  }

/* data: the event's generated struct, of type t */
static obs
obs_of(bus_type t, const void *data) {
  switch (t) {
  case BUS_T_ROBOT_STARTED:
    return OBS_OF((const bus_ev_robot_started *)data);
  case BUS_T_ROBOT_SWITCHED:
    return OBS_OF((const bus_ev_robot_switched *)data);
  case BUS_T_ROBOT_EXITED:
    return OBS_OF((const bus_ev_robot_exited *)data);
  case BUS_T_ROBOT_RESTARTED:
    return OBS_OF((const bus_ev_robot_restarted *)data);
  default:
    return OBS_OF((const bus_ev_robot_stopped *)data);
  }
}

int
dev_apply_robot(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  dev_rec d;
  int rc = data ? device_of(t, ev, 0, &d) : BUS_EINVAL;
  if (rc)
    return rc;
  obs o = obs_of(ev->t, data);
  if (o.has_restarts)
    d.restarts = o.restarts;
  if (ev->t == BUS_T_ROBOT_EXITED) {
    /* it died while it should run: its node starts it again */
    d.state = d.running ? DEV_S_RESTARTING : DEV_S_EXITED;
    d.has_exit = o.has_exitCode;
    d.exit_code = (int32_t)o.exitCode;
  } else if (ev->t == BUS_T_ROBOT_STOPPED) {
    d.state = DEV_S_STOPPED;
  } else {
    d.state = DEV_S_RUNNING;
    d.has_exit = 0;
    d.exit_code = 0;
    if (o.has_mode)
      dev_copy(d.ran, sizeof d.ran, o.mode);
  }
  d.ts = ev->ts;
  return dev_put(t, &d);
}

/* A camera's counts: frames and bytes delivered, summed over its
 * sessions (closed) and captures. */
#define CAM_OF(e)                                                              \
  (cam) {                                                                      \
    .has_frames = (e)->has_frames, .frames = (e)->frames, .bytes = (e)->bytes  \
  }

typedef struct cam {
  bool has_frames;
  uint64_t frames, bytes;
} cam;

static cam
cam_of(bus_type t, const void *data) {
  switch (t) {
  case BUS_T_CAMERA_OPENED:
    return CAM_OF((const bus_ev_camera_opened *)data);
  case BUS_T_CAMERA_CLOSED:
    return CAM_OF((const bus_ev_camera_closed *)data);
  case BUS_T_CAMERA_CAPTURED:
    return CAM_OF((const bus_ev_camera_captured *)data);
  default:
    return CAM_OF((const bus_ev_camera_error *)data);
  }
}

int
dev_apply_camera(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  dev_rec d;
  int rc = data ? device_of(t, ev, 1, &d) : BUS_EINVAL;
  if (rc)
    return rc;
  cam c = cam_of(ev->t, data);
  switch (ev->t) {
  case BUS_T_CAMERA_OPENED:
    d.state = DEV_S_OPEN;
    break;
  case BUS_T_CAMERA_CLOSED:
    d.state = DEV_S_CLOSED;
    d.frames += c.frames;
    d.bytes += c.bytes;
    break;
  case BUS_T_CAMERA_CAPTURED:
    d.frames += c.has_frames ? c.frames : 1;
    d.bytes += c.bytes;
    break;
  default:
    d.state = DEV_S_ERROR;
  }
  d.ts = ev->ts;
  return dev_put(t, &d);
}
