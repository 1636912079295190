/*
 * file.c - a file written whole (bus.h, section file): a temporary file
 * beside it, synced, renamed over it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus-int.h"

static int
write_all(int fd, const char *p, size_t len) {
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, p + off, len - off);
    if (w < 0 && errno != EINTR)
      return -errno;
    if (w > 0)
      off += (size_t)w;
  }
  return 0;
}

int
bus_file_write(const char *path, const void *data, size_t len, unsigned mode) {
  char tmp[PATH_MAX + 8];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return BUS_ERR(-ENAMETOOLONG, "path too long: %s", path);
  /* made anew (O_EXCL): never written through a link left at tmp */
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
  if (fd < 0)
    return BUS_ERR(-errno, "cannot write %s: %s", tmp, strerror(errno));
  int rc = fchmod(fd, (mode_t)mode) ? -errno : 0;
  if (!rc)
    rc = write_all(fd, data, len);
  if (!rc && fsync(fd))
    rc = -errno;
  close(fd);
  if (!rc && rename(tmp, path))
    rc = -errno;
  if (rc) {
    unlink(tmp);
    return BUS_ERR(rc, "cannot write %s: %s", path, strerror(-rc));
  }
  return 0;
}
