/*
 * camera_sock.h - private to edge/: the pods' camera socket
 * (camera_sock.c). Its state is its own: the cameras below it (camera.h)
 * know nothing of it. Loop only.
 */
#ifndef LARK_EDGE_CAMERA_SOCK_H
#define LARK_EDGE_CAMERA_SOCK_H

#include "camera.h"

typedef struct edge_cam_sock {
  edge_cameras *cs;
  char path[108]; /* <data>/run/camera-ctrl.sock */
  uv_pipe_t srv;
  int listening;
  struct edge_cam_conn *conns; /* its clients */
} edge_cam_sock;

/* Listen on s->path (set by the caller) for cs's pods; close it and its
 * clients (their sessions end). */
int edge_cam_sock_listen(edge_cam_sock *s, edge_cameras *cs);
void edge_cam_sock_close(edge_cam_sock *s);

#endif
