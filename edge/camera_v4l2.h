/*
 * camera_v4l2.h - private to edge/: a V4L2 capture device (camera_v4l2.c),
 * read through the kernel's V4L2 API with mmap streaming. Pure: no loop,
 * no agent; one thread at a time (the camera's lock).
 */
#ifndef LARK_EDGE_CAMERA_V4L2_H
#define LARK_EDGE_CAMERA_V4L2_H

#include <stddef.h>
#include <stdint.h>

typedef struct edge_v4l2 edge_v4l2;

/* What a dequeued frame is: JPEG bytes (the device speaks MJPEG) or YUYV
 * 4:2:2 pixels, width x height as the driver set them. */
typedef enum edge_v4l2_fmt { EDGE_V4L2_MJPEG, EDGE_V4L2_YUYV } edge_v4l2_fmt;

/* Open path, ask for MJPEG (else YUYV) at w x h and start streaming. -1
 * with the reason in err. */
int edge_v4l2_open(edge_v4l2 **out, const char *path, unsigned w, unsigned h,
                   char *err, size_t errlen);
void edge_v4l2_close(edge_v4l2 *v);
void edge_v4l2_format(const edge_v4l2 *v, edge_v4l2_fmt *fmt, unsigned *w,
                      unsigned *h);

/* The next frame (waiting up to timeout_ms): its bytes and length are
 * valid until edge_v4l2_release. -1 with the reason in err. */
int edge_v4l2_grab(edge_v4l2 *v, int timeout_ms, const uint8_t **data,
                   size_t *len, char *err, size_t errlen);
void edge_v4l2_release(edge_v4l2 *v);

#endif
