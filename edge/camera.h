/*
 * camera.h - private to edge/: the node's cameras (camera*.c).
 *
 *   camera.c       the cameras: each one's source, encoder, lock, pacing
 *                  and session (opened, frames and bytes since), its
 *                  camera.report, and who holds it
 *   camera_run.c   the start and stop of it all (camera_run.h)
 *   camera_sock.c  <data>/run/camera-ctrl.sock, the pods' socket (loop;
 *                  camera_sock.h)
 *   camera_req.c   a request line of that socket, parsed (pure)
 *   camera_op.c    an operator's capture: lark.dev.<node>.camera.<cam>.
 *                  capture, served from nats.c's delivery thread
 *                  (camera_op.h)
 *   camera_src.c camera_jpeg.c camera_v4l2.c   frames, JPEG, V4L2
 *
 * A frame is made by whoever asks for it, under the camera's lock: a
 * libuv worker thread for a pod (so the loop never encodes), the NATS
 * thread for an operator. Sessions and reports are the loop's, except an
 * operator's capture, which touches only the lock's state and the sender
 * (any thread).
 */
#ifndef LARK_EDGE_CAMERA_H
#define LARK_EDGE_CAMERA_H

#include <pthread.h>
#include <stdint.h>

#include "agent.h"
#include "camera_src.h"
#include "devices.h"

enum { EDGE_CAM_QUALITY = 85 };

typedef struct edge_cam {
  const edge_device *dev;
  pthread_mutex_t mu; /* everything below */
  edge_cam_src src;
  int src_open;
  edge_jpeg *jpeg;
  uint64_t seq;    /* frames made since the agent started */
  int64_t next_ns; /* fps > 0: when the next frame is due */
  /* The session a pod opened (loop): frames and bytes since. */
  int opened;
  char pod[EDGE_POD_SZ];
  uint64_t frames, bytes;
} edge_cam;

typedef struct edge_cameras {
  edge_agent *a;
  edge_cam *v;
  int n;
} edge_cameras;

/* A frame as the socket's header line and the operator's reply tell it. */
typedef struct edge_frame {
  uint64_t seq;
  int64_t ts;
  edge_buf jpeg;
} edge_frame;

/* camera.c. The camera named name, or NULL. */
edge_cam *edge_cam_find(edge_cameras *cs, const char *name);
/* Reserve the next frame slot: ns until it is due (0: now). fps 0 is
 * never paced. Any thread. */
int64_t edge_cam_pace(edge_cam *c);
/* Make the next frame into f (opening the source when it is not open;
 * close_after closes it again, for an operator's one frame). -1 with the
 * reason in err. Any thread. */
int edge_cam_frame(edge_cam *c, edge_frame *f, int close_after, char *err,
                   size_t errlen);
/* Queue camera.report event for c (pod NULL: an operator); frames and
 * bytes only when has_counts. Loop or any thread. */
void edge_cam_report(edge_cameras *cs, const edge_cam *c, const char *event,
                     const char *pod, int has_counts, uint64_t frames,
                     uint64_t bytes, const char *reason);
/* Whether pod holds camera c (its desired state binds camera/<c>). */
int edge_cam_held_by(edge_cameras *cs, const edge_cam *c, const char *pod);
/* The pod that holds c among the node's running pods, into pod ("" when
 * none). Loop. */
void edge_cam_holder(edge_cameras *cs, const edge_cam *c, char *pod,
                     size_t cap);
/* Open c's session for pod (camera.report opened); 0 when it was open. */
int edge_cam_session_open(edge_cameras *cs, edge_cam *c, const char *pod);
/* Close it (camera.report closed with its counts). Loop. */
void edge_cam_session_close(edge_cameras *cs, edge_cam *c);

/* The node's cameras, made from its device file into *out (NULL when it
 * has none); 0 or -ENOMEM. Freed, sources closed, by edge_cameras_del. */
int edge_cameras_new(edge_agent *a, edge_cameras **out);
void edge_cameras_del(edge_cameras *cs);

#endif
