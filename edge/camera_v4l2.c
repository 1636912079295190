/*
 * camera_v4l2.c - a V4L2 capture device (camera_v4l2.h): VIDIOC_QUERYCAP
 * (a video capture device that streams), VIDIOC_S_FMT (MJPEG first, so
 * frames need no encoding, else YUYV), four mmap'd buffers queued, then
 * VIDIOC_STREAMON. A grab dequeues the newest filled buffer and hands its
 * bytes out until released, when the buffer goes back to the driver.
 *
 * The driver may answer S_FMT with another size than asked: the frame is
 * what it gives, and the camera (camera_src.c) resizes when it must.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/videodev2.h>

#include "camera_v4l2.h"

enum { V4L2_NBUF = 4 };

struct edge_v4l2 {
  int fd;
  edge_v4l2_fmt fmt;
  unsigned w, h;
  int nbuf, held; /* held: index of the dequeued buffer, or -1 */
  void *mem[V4L2_NBUF];
  size_t memlen[V4L2_NBUF];
};

static int
xioctl(int fd, unsigned long req, void *arg) {
  int r;
  do
    r = ioctl(fd, req, arg);
  while (r < 0 && errno == EINTR);
  return r;
}

static int
fail(char *err, size_t errlen, const char *path, const char *what) {
  snprintf(err, errlen, "%s: %s: %s", path, what, strerror(errno));
  return -1;
}

static int
set_format(edge_v4l2 *v, const char *path, unsigned w, unsigned h, char *err,
           size_t errlen) {
  const uint32_t want[2] = {V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_YUYV};
  for (int i = 0; i < 2; i++) {
    struct v4l2_format f = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    f.fmt.pix.width = w;
    f.fmt.pix.height = h;
    f.fmt.pix.pixelformat = want[i];
    f.fmt.pix.field = V4L2_FIELD_ANY;
    if (xioctl(v->fd, VIDIOC_S_FMT, &f) == 0 &&
        f.fmt.pix.pixelformat == want[i]) {
      v->fmt = i == 0 ? EDGE_V4L2_MJPEG : EDGE_V4L2_YUYV;
      v->w = f.fmt.pix.width;
      v->h = f.fmt.pix.height;
      return 0;
    }
  }
  snprintf(err, errlen, "%s: the device offers neither MJPEG nor YUYV", path);
  return -1;
}

static int
map_buffers(edge_v4l2 *v, const char *path, char *err, size_t errlen) {
  struct v4l2_requestbuffers rb = {.count = V4L2_NBUF,
                                   .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                   .memory = V4L2_MEMORY_MMAP};
  if (xioctl(v->fd, VIDIOC_REQBUFS, &rb) < 0)
    return fail(err, errlen, path, "VIDIOC_REQBUFS");
  if (rb.count < 2) {
    snprintf(err, errlen, "%s: the driver gave %u buffers", path, rb.count);
    return -1;
  }
  v->nbuf = rb.count > V4L2_NBUF ? V4L2_NBUF : (int)rb.count;
  for (int i = 0; i < v->nbuf; i++) {
    struct v4l2_buffer b = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                            .memory = V4L2_MEMORY_MMAP,
                            .index = (unsigned)i};
    if (xioctl(v->fd, VIDIOC_QUERYBUF, &b) < 0)
      return fail(err, errlen, path, "VIDIOC_QUERYBUF");
    v->mem[i] = mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd,
                     b.m.offset);
    if (v->mem[i] == MAP_FAILED) {
      v->mem[i] = NULL;
      return fail(err, errlen, path, "mmap");
    }
    v->memlen[i] = b.length;
    if (xioctl(v->fd, VIDIOC_QBUF, &b) < 0)
      return fail(err, errlen, path, "VIDIOC_QBUF");
  }
  return 0;
}

int
edge_v4l2_open(edge_v4l2 **out, const char *path, unsigned w, unsigned h,
               char *err, size_t errlen) {
  edge_v4l2 *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  v->held = -1;
  v->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (v->fd < 0) {
    fail(err, errlen, path, "open");
    free(v);
    return -1;
  }
  struct v4l2_capability cap = {0};
  int rc = -1;
  if (xioctl(v->fd, VIDIOC_QUERYCAP, &cap) < 0)
    fail(err, errlen, path, "VIDIOC_QUERYCAP");
  else if (!(cap.capabilities & V4L2_CAP_VIDEO_CAPTURE) ||
           !(cap.capabilities & V4L2_CAP_STREAMING))
    snprintf(err, errlen, "%s: not a video capture device that streams", path);
  else if (!set_format(v, path, w, h, err, errlen) &&
           !map_buffers(v, path, err, errlen)) {
    enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    rc = xioctl(v->fd, VIDIOC_STREAMON, &t) < 0
             ? fail(err, errlen, path, "VIDIOC_STREAMON")
             : 0;
  }
  if (rc) {
    edge_v4l2_close(v);
    return -1;
  }
  *out = v;
  return 0;
}

void
edge_v4l2_close(edge_v4l2 *v) {
  if (!v)
    return;
  enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  xioctl(v->fd, VIDIOC_STREAMOFF, &t);
  for (int i = 0; i < v->nbuf; i++)
    if (v->mem[i])
      munmap(v->mem[i], v->memlen[i]);
  close(v->fd);
  free(v);
}

void
edge_v4l2_format(const edge_v4l2 *v, edge_v4l2_fmt *fmt, unsigned *w,
                 unsigned *h) {
  *fmt = v->fmt;
  *w = v->w;
  *h = v->h;
}

int
edge_v4l2_grab(edge_v4l2 *v, int timeout_ms, const uint8_t **data, size_t *len,
               char *err, size_t errlen) {
  struct pollfd p = {.fd = v->fd, .events = POLLIN};
  int n = poll(&p, 1, timeout_ms);
  if (n <= 0) {
    if (n == 0)
      errno = ETIMEDOUT;
    return fail(err, errlen, "v4l2", "waiting for a frame");
  }
  struct v4l2_buffer b = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                          .memory = V4L2_MEMORY_MMAP};
  if (xioctl(v->fd, VIDIOC_DQBUF, &b) < 0)
    return fail(err, errlen, "v4l2", "VIDIOC_DQBUF");
  if (b.index >= (unsigned)v->nbuf || b.bytesused > v->memlen[b.index]) {
    snprintf(err, errlen, "v4l2: the driver returned a bad buffer");
    return -1;
  }
  v->held = (int)b.index;
  *data = v->mem[b.index];
  *len = b.bytesused;
  return 0;
}

void
edge_v4l2_release(edge_v4l2 *v) {
  if (v->held < 0)
    return;
  struct v4l2_buffer b = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                          .memory = V4L2_MEMORY_MMAP,
                          .index = (unsigned)v->held};
  xioctl(v->fd, VIDIOC_QBUF, &b);
  v->held = -1;
}
