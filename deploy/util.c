/*
 * util.c - what every file of the deploy part uses: the error sentence,
 * growing strings, files written whole, paths under a data directory,
 * durations, passwords, and where the binaries are.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"

static _Thread_local char cfg_err[512];

/* The sentence is formatted apart first: an argument may be the
 * sentence of the failure underneath (lark_cfg_error()). */
int
dpl_fail(int err, const char *fmt, ...) {
  char tmp[sizeof cfg_err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  memcpy(cfg_err, tmp, sizeof tmp);
  return err;
}

int
dpl_fail_bus(int err, const char *fmt, ...) {
  char tmp[sizeof cfg_err];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  size_t len = n < 0 ? 0 : (size_t)n;
  if (err < 0 && len < sizeof tmp) {
    const char *detail = bus_last_error();
    len += (size_t)snprintf(tmp + len, sizeof tmp - len, ": %s",
                            bus_strerror(err));
    if (detail && *detail && len < sizeof tmp)
      snprintf(tmp + len, sizeof tmp - len, " (%s)", detail);
  }
  memcpy(cfg_err, tmp, sizeof tmp);
  return err;
}

const char *
lark_cfg_error(void) {
  return cfg_err;
}

/* ------------------------------------------------------------- strings */

void
dpl_sb_addn(sbuf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void
dpl_sb_add(sbuf *b, const char *s) {
  dpl_sb_addn(b, s, strlen(s));
}

void
dpl_sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    b->oom = 1;
    return;
  }
  dpl_sb_addn(b, tmp, (size_t)n);
}

/* ---------------------------------------------------------------- files */

long
lark_read_text(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  return (long)n;
}

int
lark_mkdirs(const char *path, unsigned mode) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return dpl_fail(BUS_EINVAL, "path too long: %s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p)
      continue;
    char c = *p;
    *p = 0;
    if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
      return dpl_fail(-errno, "cannot create %s: %s", buf, strerror(errno));
    *p = c;
    if (!c)
      break;
  }
  return 0;
}

int
dpl_write_atomic(const char *path, const char *data, size_t len) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >=
      (int)sizeof tmp)
    return dpl_fail(BUS_EINVAL, "path too long: %s", path);
  int rc = 0;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return dpl_fail(-errno, "cannot write %s: %s", tmp, strerror(errno));
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      rc = dpl_fail(-errno, "cannot write %s: %s", tmp, strerror(errno));
      goto out;
    }
    off += (size_t)w;
  }
  if (fsync(fd) < 0 || rename(tmp, path) < 0)
    rc = dpl_fail(-errno, "cannot write %s: %s", path, strerror(errno));
out:
  close(fd);
  if (rc < 0)
    unlink(tmp);
  return rc;
}

int
dpl_read_all(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -errno;
  sbuf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    dpl_sb_addn(&b, chunk, n);
  fclose(f);
  if (b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  if (!b.p)
    dpl_sb_add(&b, "");
  *out = b.p;
  if (len)
    *len = b.len;
  return b.oom ? -ENOMEM : 0;
}

int
lark_data_path(const char *data, const char *sub, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/%s", data, sub) >= (int)cap)
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
  return 0;
}

/* ------------------------------------------------------------ values */

void
lark_random_password(char out[33]) {
  unsigned char raw[16];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(out, 33, raw, sizeof raw);
  sodium_memzero(raw, sizeof raw);
}

/* ------------------------------------------------------------ binaries */

int
lark_bin_dir(char *out, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return dpl_fail(-errno, "cannot read /proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = 0;
  if (snprintf(out, cap, "%s", exe) >= (int)cap)
    return dpl_fail(BUS_EINVAL, "path too long: %s", exe);
  return 0;
}

int
lark_bin_exists(const char *bin_dir, const char *name) {
  char path[PATH_MAX];
  struct stat st;
  if (snprintf(path, sizeof path, "%s/%s", bin_dir, name) >= (int)sizeof path)
    return 0;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int
lark_list_next(const char **p, const char **item, size_t *len) {
  if (!*p || !**p)
    return 0;
  *item = *p;
  *len = strcspn(*p, ",");
  *p += *len + ((*p)[*len] == ',');
  return 1;
}

/* 1 when the list has the item it[0..n). */
static int
list_has(const char *list, const char *it, size_t n) {
  const char *p = list, *x;
  size_t xn;
  while (lark_list_next(&p, &x, &xn))
    if (xn == n && !memcmp(x, it, n))
      return 1;
  return 0;
}

int
lark_list_covers(const char *have, const char *want) {
  const char *p = want, *it;
  size_t n;
  while (lark_list_next(&p, &it, &n))
    if (n && (!have || !list_has(have, it, n)))
      return 0;
  return 1;
}

int
lark_url_host(const char *url, size_t n, char *out, size_t cap) {
  const char *end = url + n, *h = url, *at;
  for (const char *s = url; s + 3 <= end; s++)
    if (!memcmp(s, "://", 3)) {
      h = s + 3;
      break;
    }
  const char *stop = h;
  while (stop < end && *stop != '/')
    stop++;
  if ((at = memchr(h, '@', (size_t)(stop - h))))
    h = at + 1;
  size_t hn = 0;
  while (h + hn < stop && h[hn] != ':')
    hn++;
  if (hn == 0 || hn >= cap)
    return -1;
  memcpy(out, h, hn);
  out[hn] = 0;
  return 0;
}

/* Bind a loopback TCP socket to port (0: the kernel's choice) and
 * release it: the port it had, or -1. SO_REUSEADDR as nats-server binds:
 * a port in TIME_WAIT is free to it. */
static int
bound_port(int port) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int one = 1, got = -1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    got = ntohs(a.sin_port);
  close(fd);
  return got;
}

/* The low end of the kernel's ephemeral range (32768 when unreadable). */
static int
ephemeral_low(void) {
  char buf[64];
  int low = 0;
  if (lark_read_text("/proc/sys/net/ipv4/ip_local_port_range", buf,
                     sizeof buf) > 0)
    low = atoi(buf);
  return low > 2048 ? low : 32768;
}

/*
 * A free TCP port on loopback for a listener started later. It is chosen
 * at random below the kernel's ephemeral range: a port the kernel handed
 * out (bind to port 0) is free only until the next outgoing connection
 * takes it as its source port, which on a busy machine happens between
 * the choice and the listener's start. Falls back to the kernel's choice.
 */
int
lark_free_port(void) {
  int low = ephemeral_low(), base = low > 12288 ? low - 12288 : 1024;
  for (int i = 0; i < 64 && sodium_init() >= 0; i++) {
    int port = base + (int)randombytes_uniform((uint32_t)(low - base));
    if (bound_port(port) == port)
      return port;
  }
  return bound_port(0);
}
