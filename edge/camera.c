/*
 * camera.c - the node's cameras (camera.h): one edge_cam per camera of
 * the device file, each with its source and encoder, made usable by any
 * thread through its lock; the sessions pods open; camera.report; and
 * who holds a camera. The bottom of the camera files: it calls neither
 * the socket nor the operator's capture (camera_run.c starts those).
 *
 * A camera's source is opened by the first frame asked for and stays
 * open while a pod's session is open; an operator's one frame outside a
 * session opens and closes it (a V4L2 device is then not held). Pacing:
 * with fps > 0 a frame slot is reserved under the lock, 1/fps after the
 * previous one (or now, when that has passed), so every asker together
 * gets at most fps frames a second; fps 0 makes a frame whenever asked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"
#include "peer.h"
#include "log.h"
#include "proc.h"
#include "sender.h"

edge_cam *
edge_cam_find(edge_cameras *cs, const char *name) {
  for (int i = 0; cs && i < cs->n; i++)
    if (!strcmp(cs->v[i].dev->name, name))
      return &cs->v[i];
  return NULL;
}

int64_t
edge_cam_pace(edge_cam *c) {
  if (!c->dev->fps)
    return 0;
  int64_t now = bus_mono_ns(), period = 1000000000LL / c->dev->fps;
  pthread_mutex_lock(&c->mu);
  int64_t slot = c->next_ns > now ? c->next_ns : now;
  c->next_ns = slot + period;
  pthread_mutex_unlock(&c->mu);
  return slot - now;
}

int
edge_cam_frame(edge_cam *c, edge_frame *f, int close_after, char *err,
               size_t errlen) {
  int rc = 0;
  pthread_mutex_lock(&c->mu);
  if (!c->jpeg && !(c->jpeg = edge_jpeg_new(EDGE_CAM_QUALITY))) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  int opened_here = 0;
  if (!rc && !c->src_open) {
    rc = edge_cam_src_open(&c->src, c->dev, err, errlen);
    c->src_open = opened_here = !rc;
  }
  if (!rc && !(rc = edge_cam_src_next(&c->src, c->jpeg, &f->jpeg, err, errlen)))
    f->seq = c->seq++;
  f->ts = bus_wall_ns();
  if (opened_here && close_after) {
    edge_cam_src_close(&c->src);
    c->src_open = 0;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void
edge_cam_report(edge_cameras *cs, const edge_cam *c, const char *event,
                const char *pod, int has_counts, uint64_t frames,
                uint64_t bytes, const char *reason) {
  edge_agent *a = cs->a;
  char subject[BUS_SUBJECT_MAX], why[1025];
  snprintf(why, sizeof why, "%s", reason ? reason : "");
  bus_ev_camera_report d = {.camera = bus_str_of(c->dev->name),
                            .event = bus_str_of(event),
                            .has_pod = pod && *pod,
                            .pod = bus_str_of(pod ? pod : ""),
                            .has_width = 1,
                            .width = c->dev->width,
                            .has_height = 1,
                            .height = c->dev->height,
                            .has_frames = has_counts,
                            .frames = frames,
                            .has_bytes = has_counts,
                            .bytes = bytes,
                            .has_reason = reason && *reason,
                            .reason = bus_str_of(why)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = bus_subj_camera_report(subject, sizeof subject, a->cfg.node,
                                  c->dev->name);
  if (!rc)
    rc = bus_camera_report_pack(&sb, &d);
  if (!rc) {
    edge_msg m = {subject, "camera.report", sb.data, sb.size};
    edge_send(a, &m);
  } else
    edge_logf("error", c->dev->name, "camera.report %s: %s", event,
              bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

int
edge_cam_held_by(edge_cameras *cs, const edge_cam *c, const char *pod) {
  char bound[EDGE_DEV_NAME_SZ + 8];
  snprintf(bound, sizeof bound, "camera/%s", c->dev->name);
  return edge_pod_holds(cs->a, pod, bound);
}

void
edge_cam_holder(edge_cameras *cs, const edge_cam *c, char *pod, size_t cap) {
  *pod = 0;
  for (edge_proc *p = cs->a->procs; p; p = p->next)
    if (!p->ended && edge_cam_held_by(cs, c, p->pod)) {
      snprintf(pod, cap, "%s", p->pod);
      return;
    }
}

int
edge_cam_session_open(edge_cameras *cs, edge_cam *c, const char *pod) {
  if (c->opened && !strcmp(c->pod, pod))
    return 0;
  if (c->opened) /* the camera passed to another pod: the old one ends */
    edge_cam_session_close(cs, c);
  c->opened = 1;
  snprintf(c->pod, sizeof c->pod, "%s", pod);
  c->frames = c->bytes = 0;
  edge_cam_report(cs, c, "opened", pod, 0, 0, 0, NULL);
  return 1;
}

void
edge_cam_session_close(edge_cameras *cs, edge_cam *c) {
  if (!c->opened)
    return;
  edge_cam_report(cs, c, "closed", c->pod, 1, c->frames, c->bytes, NULL);
  c->opened = 0;
  pthread_mutex_lock(&c->mu);
  if (c->src_open)
    edge_cam_src_close(&c->src);
  c->src_open = 0;
  pthread_mutex_unlock(&c->mu);
}

int
edge_cameras_new(edge_agent *a, edge_cameras **out) {
  const edge_devices *d = &a->devices;
  int n = 0;
  *out = NULL;
  for (int i = 0; i < d->n; i++)
    n += d->v[i].kind == EDGE_DEV_CAMERA;
  if (!n)
    return 0;
  edge_cameras *cs = calloc(1, sizeof *cs);
  if (!cs || !(cs->v = calloc((size_t)n, sizeof *cs->v))) {
    free(cs);
    return -ENOMEM;
  }
  cs->a = a;
  for (int i = 0; i < d->n; i++)
    if (d->v[i].kind == EDGE_DEV_CAMERA) {
      cs->v[cs->n].dev = &d->v[i];
      pthread_mutex_init(&cs->v[cs->n++].mu, NULL);
    }
  *out = cs;
  return 0;
}

void
edge_cameras_del(edge_cameras *cs) {
  if (!cs)
    return;
  for (int i = 0; i < cs->n; i++) {
    edge_cam *c = &cs->v[i];
    if (c->src_open)
      edge_cam_src_close(&c->src);
    edge_jpeg_free(c->jpeg);
    pthread_mutex_destroy(&c->mu);
  }
  free(cs->v);
  free(cs);
}
