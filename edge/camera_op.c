/*
 * camera_op.c - an operator's capture (`larkctl camera capture
 * NODE/CAM`): a core-NATS request on lark.dev.<node>.camera.<cam>.capture
 * (body: a msgpack map, {} today), answered on the requester's inbox with
 * {ok: true, width, height, format: "jpeg", frame: <bin>} or
 * {error: {code, message}} (as a command's). The frame crosses the broker once
 * as that reply and is stored nowhere; camera.report captured (or error) says
 * it happened. Only admin may publish on lark.dev.> and only this node may
 * subscribe to its own lark.dev.<node>.> (deploy/policy.c).
 *
 * The handler runs on nats.c's delivery thread for this subscription,
 * never on the loop: it waits for its pacing slot and makes the frame
 * there, under the camera's lock, beside any pod's frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera_op.h"
#include "log.h"

enum { OP_FRAME_MAX = 1 << 20 };

/* {error: {code, message, details: []}}, as a command's refusal. */
static void
reply_error(bus_conn *c, const char *reply, int err, const char *message) {
  bus_cmd cmd = {.reply = reply};
  bus_cmd_reply_error(c, &cmd, err, message, NULL, 0);
}

static void
reply_frame(bus_conn *c, const char *reply, const edge_cam *cam,
            const edge_frame *f) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 5);
  bus_pack_kv_bool(&b.pk, "ok", 1);
  bus_pack_kv_uint(&b.pk, "width", cam->dev->width);
  bus_pack_kv_uint(&b.pk, "height", cam->dev->height);
  bus_pack_kv_str(&b.pk, "format", "jpeg");
  bus_pack_str(&b.pk, "frame");
  msgpack_pack_bin(&b.pk, f->jpeg.len);
  msgpack_pack_bin_body(&b.pk, f->jpeg.data, f->jpeg.len);
  bus_conn_publish(c, reply, b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
}

/* The camera a subject asks to capture: lark.dev.<node>.camera.<cam>.
 * capture; NULL (answered) when it names none. */
static edge_cam *
camera_of(edge_cameras *cs, bus_conn *c, const char *subject,
          const char *reply) {
  char prefix[EDGE_NAME_SZ + 24], name[EDGE_DEV_NAME_SZ], why[400];
  int n =
      snprintf(prefix, sizeof prefix, "lark.dev.%s.camera.", cs->a->cfg.node);
  const char *rest = !strncmp(subject, prefix, (size_t)n) ? subject + n : "";
  const char *dot = strchr(rest, '.');
  size_t len = dot ? (size_t)(dot - rest) : 0;
  if (!dot || strcmp(dot, ".capture") || len >= sizeof name) {
    snprintf(why, sizeof why, "%.200s: not a capture request", subject);
    reply_error(c, reply, BUS_EINVAL, why);
    return NULL;
  }
  memcpy(name, rest, len);
  name[len] = 0;
  edge_cam *cam = edge_cam_find(cs, name);
  if (!cam) {
    snprintf(why, sizeof why, "no camera %s on node %s", name, cs->a->cfg.node);
    reply_error(c, reply, BUS_ENOT_FOUND, why);
  }
  return cam;
}

static int
body_ok(const void *data, size_t len) {
  msgpack_zone z;
  msgpack_object o;
  if (!len)
    return 1;
  msgpack_zone_init(&z, 256);
  int ok = msgpack_unpack(data, len, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS &&
           o.type == MSGPACK_OBJECT_MAP;
  msgpack_zone_destroy(&z);
  return ok;
}

static void
on_request(bus_conn *c, const char *subject, const char *reply,
           const void *data, size_t len, void *ud) {
  edge_cameras *cs = ud;
  if (!reply)
    return;
  edge_cam *cam = camera_of(cs, c, subject, reply);
  if (!cam)
    return;
  if (!body_ok(data, len)) {
    reply_error(c, reply, BUS_EINVAL, "the request's body is a msgpack map");
    return;
  }
  int64_t wait = edge_cam_pace(cam);
  if (wait > 0)
    bus_sleep_ms((int)((wait + 999999) / 1000000));
  edge_frame f = {0};
  char err[512];
  int rc = edge_cam_frame(cam, &f, 1, err, sizeof err);
  if (!rc && f.jpeg.len > OP_FRAME_MAX) {
    snprintf(err, sizeof err, "the frame is %zu bytes, over 1 MiB", f.jpeg.len);
    rc = BUS_ETOO_BIG;
  }
  if (rc) {
    edge_logf("warn", cam->dev->name, "capture: %s", err);
    edge_cam_report(cs, cam, "error", NULL, 0, 0, 0, err);
    reply_error(c, reply, rc == BUS_ETOO_BIG ? rc : -EIO, err);
  } else {
    reply_frame(c, reply, cam, &f);
    edge_cam_report(cs, cam, "captured", NULL, 1, 1, f.jpeg.len, NULL);
  }
  edge_buf_free(&f.jpeg);
}

int
edge_cam_op_start(edge_cameras *cs, bus_serve **serve) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.dev.%s.>", cs->a->cfg.node);
  int rc = bus_conn_serve(cs->a->conn, subject, NULL, on_request, cs, serve);
  if (rc)
    return bus_error(rc, "cannot subscribe to %s: %s", subject,
                     bus_last_error());
  return 0;
}

void
edge_cam_op_stop(bus_serve **serve) {
  bus_conn_unserve(*serve);
  *serve = NULL;
}
