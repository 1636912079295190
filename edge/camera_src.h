/*
 * camera_src.h - private to edge/: where a camera's frames come from
 * (camera_src.c): a moving test pattern, the JPEG files of a folder in a
 * loop, or a V4L2 device. Each frame comes out as JPEG at the camera's
 * width x height. Pure: no loop, no agent; one thread at a time (the
 * camera's lock).
 */
#ifndef LARK_EDGE_CAMERA_SRC_H
#define LARK_EDGE_CAMERA_SRC_H

#include "camera_jpeg.h"
#include "camera_v4l2.h"
#include "devices.h"

typedef struct edge_cam_src {
  edge_cam_source kind;
  const char *path; /* the device's: DIR or /dev/videoN */
  unsigned w, h;
  uint64_t n;  /* frames made since opened */
  uint8_t *px; /* w x h x 3: the frame being made */
  uint8_t *bars;
  char **files; /* files: the folder's JPEG files, in name order */
  size_t nfiles, next;
  edge_buf file; /* files: the bytes of the one being read */
  edge_v4l2 *v;
} edge_cam_src;

/* Open d's source. -1 with the reason in err (a folder without JPEG
 * files, a device that is not there, ...). */
int edge_cam_src_open(edge_cam_src *s, const edge_device *d, char *err,
                      size_t errlen);
void edge_cam_src_close(edge_cam_src *s);

/* The next frame as JPEG into out, encoded with j when it must be. -1
 * with the reason in err; the source stays usable (a bad file is
 * skipped next time). */
int edge_cam_src_next(edge_cam_src *s, edge_jpeg *j, edge_buf *out, char *err,
                      size_t errlen);

#endif
