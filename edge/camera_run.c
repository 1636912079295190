/*
 * camera_run.c - the start and stop of the node's cameras (camera_run.h):
 * the cameras (camera.c), then their socket (camera_sock.c), then the
 * operators' subscription (camera_op.c); stopped the other way round,
 * open sessions reported closed last. The wiring alone lives here, so
 * that camera.c, the bottom, calls neither of the two above it.
 */
#include <errno.h>
#include <stdlib.h>

#include "camera_op.h"
#include "camera_run.h"
#include "camera_sock.h"
#include "log.h"

typedef struct edge_cam_run {
  edge_cameras *cs;
  edge_cam_sock sock;
  bus_serve *serve; /* lark.dev.<node>.> */
} edge_cam_run;

int
edge_cameras_start(edge_agent *a) {
  edge_cameras *cs;
  int rc = edge_cameras_new(a, &cs);
  if (rc || !cs)
    return rc;
  edge_cam_run *r = calloc(1, sizeof *r);
  if (!r) {
    edge_cameras_del(cs);
    return -ENOMEM;
  }
  r->cs = cs;
  a->cams = r;
  rc = edge_dev_socket_path(a->cfg.data, EDGE_DEV_CAMERA, r->sock.path,
                            sizeof r->sock.path)
           ? bus_error(BUS_EINVAL, "the camera socket's path is too long")
           : edge_cam_sock_listen(&r->sock, cs);
  if (!rc)
    rc = edge_cam_op_start(cs, &r->serve);
  if (rc) /* the agent stops: shutdown_agent frees them */
    edge_cameras_stop(a);
  else
    edge_logf("info", "-", "%d camera%s on %s", cs->n, cs->n == 1 ? "" : "s",
              r->sock.path);
  return rc;
}

void
edge_cameras_stop(edge_agent *a) {
  edge_cam_run *r = a->cams;
  if (!r)
    return;
  edge_cam_op_stop(&r->serve);
  edge_cam_sock_close(&r->sock);
  for (int i = 0; i < r->cs->n; i++)
    edge_cam_session_close(r->cs, &r->cs->v[i]);
}

void
edge_cameras_free(edge_agent *a) {
  edge_cam_run *r = a->cams;
  if (r) {
    edge_cameras_del(r->cs);
    free(r);
  }
  a->cams = NULL;
}
