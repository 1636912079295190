/*
 * devices_use.c - the device file as the agent uses it: loading it from
 * a path, finding a device by name or by the name it is bound by, one
 * node's share of a file, the controller sockets' paths. It sits above
 * the parser (devices.c, and devices_read.c for freeing a device left
 * out of a share), which never calls it; a robot's mode is looked up in
 * devices_read.c, where the modes are read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices-int.h"

enum { FILE_MAX = 1 << 20 };

/* The whole file into *buf (NUL-terminated); -1 with errno. */
static int
slurp(const char *path, char **buf, size_t *len) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  char *b = malloc(FILE_MAX + 1);
  size_t n = b ? fread(b, 1, FILE_MAX + 1, f) : 0;
  int err = !b ? ENOMEM : ferror(f) ? EIO : n > FILE_MAX ? EFBIG : 0;
  fclose(f);
  if (err) {
    free(b);
    errno = err;
    return -1;
  }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

/* A camera's files:DIR that is relative is relative to the file's own
 * folder, so that a file and its images travel together. */
static int
rebase_dirs(edge_devices *d, const char *path) {
  const char *slash = strrchr(path, '/');
  int dir = slash ? (int)(slash - path) : 1;
  const char *base = slash ? path : ".";
  for (int i = 0; i < d->n; i++) {
    edge_device *c = &d->v[i];
    if (c->kind != EDGE_DEV_CAMERA || c->source != EDGE_CAM_FILES ||
        c->path[0] == '/')
      continue;
    char joined[EDGE_DEV_PATH_SZ];
    int n = snprintf(joined, sizeof joined, "%.*s/%s", dir, base, c->path);
    if (n < 0 || (size_t)n >= sizeof joined)
      return -1;
    memcpy(c->path, joined, (size_t)n + 1);
  }
  return 0;
}

int
edge_devices_load(const char *path, edge_devices *out, char *err,
                  size_t errlen) {
  char *buf = NULL, why[512];
  size_t len = 0;
  out->v = NULL;
  out->n = 0;
  if (slurp(path, &buf, &len)) {
    snprintf(err, errlen, "%s: %s", path,
             errno == EFBIG ? "larger than 1 MiB" : strerror(errno));
    return -1;
  }
  int rc = edge_devices_parse(buf, len, out, why, sizeof why);
  free(buf);
  if (!rc && rebase_dirs(out, path)) {
    edge_devices_free(out);
    snprintf(why, sizeof why, "a camera's files: folder is too long");
    rc = -1;
  }
  if (rc)
    snprintf(err, errlen, "%s: %s", path, why);
  return rc;
}

const edge_device *
edge_devices_find(const edge_devices *d, const char *name) {
  for (int i = 0; i < d->n; i++)
    if (!strcmp(d->v[i].name, name))
      return &d->v[i];
  return NULL;
}

const edge_device *
edge_devices_bound(const edge_devices *d, const char *bound) {
  int camera = !strncmp(bound, "camera/", 7);
  if (!camera && strncmp(bound, "robot/", 6))
    return NULL;
  const edge_device *dev = edge_devices_find(d, bound + (camera ? 7 : 6));
  return dev && (dev->kind == EDGE_DEV_CAMERA) == camera ? dev : NULL;
}

const char *
edge_dev_kind_name(edge_dev_kind kind) {
  return kind == EDGE_DEV_ROS    ? "ros"
         : kind == EDGE_DEV_ROS2 ? "ros2"
                                 : "camera";
}

int
edge_dev_bound_name(const edge_device *dev, char *buf, size_t cap) {
  int n =
      snprintf(buf, cap, "%s/%s",
               dev->kind == EDGE_DEV_CAMERA ? "camera" : "robot", dev->name);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

void
edge_devices_share(edge_devices *d, int i, int n) {
  int kept = 0;
  if (n < 1 || i < 1 || i > n)
    return;
  for (int j = 0; j < d->n; j++) {
    if (j % n == i - 1)
      d->v[kept++] = d->v[j];
    else
      dp_device_free(&d->v[j]);
  }
  d->n = kept;
}

int
edge_dev_socket_path(const char *data, edge_dev_kind kind, char *buf,
                     size_t cap) {
  int n =
      snprintf(buf, cap, "%s/run/%s-ctrl.sock", data, edge_dev_kind_name(kind));
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}
