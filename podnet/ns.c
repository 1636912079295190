/*
 * ns.c - podnet's names and named namespaces (podnet.h): a pod's
 * namespace and interface names, the rundir, making, finding and
 * removing a namespace, and running a function inside one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "podnet_int.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* ------------------------------------------------------------- names */

static uint32_t
fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

void
podnet_ns_name(const char *pod, char out[PODNET_NS_MAX]) {
  static const char prefix[] = "lark-";
  size_t plen = sizeof prefix - 1, n = strlen(pod);
  if (plen + n < PODNET_NS_MAX) {
    snprintf(out, PODNET_NS_MAX, "%s%s", prefix, pod);
    return;
  }
  /* "lark-" + the first characters + "-" + 8 hex digits: 63 in all */
  int keep = (int)(PODNET_NS_MAX - 1 - plen - 9);
  snprintf(out, PODNET_NS_MAX, "%s%.*s-%08x", prefix, keep, pod,
           (unsigned)fnv1a(pod));
}

void
podnet_host_ifname(const char *pod, unsigned salt,
                   char out[PODNET_IFNAME_MAX]) {
  uint32_t h = fnv1a(pod);
  for (unsigned s = salt; s; s >>= 8) /* a salt perturbs the hash */
    h = (h ^ (s & 0xff)) * 16777619u;
  snprintf(out, PODNET_IFNAME_MAX, "lk%08x", (unsigned)h);
}

const char *
podnet_rundir(void) {
  const char *d = getenv("LARK_NETNS_DIR");
  return d && *d ? d : "/run/netns";
}

static int
check_ns_name(const char *name) {
  if (!name || !*name || strlen(name) >= PODNET_NS_MAX || strchr(name, '/') ||
      !strcmp(name, ".") || !strcmp(name, ".."))
    return bus_error(BUS_EINVAL, "invalid namespace name '%s'",
                     name ? name : "(null)");
  return 0;
}

int
podnet__check_ifname(const char *name) {
  if (!name || !*name || strlen(name) >= PODNET_IFNAME_MAX ||
      strpbrk(name, "/: \t\n"))
    return bus_error(BUS_EINVAL, "invalid interface name '%s'",
                     name ? name : "(null)");
  return 0;
}

static int
ns_path(const char *name, char *out, size_t cap) {
  int rc = check_ns_name(name);
  if (rc)
    return rc;
  if ((size_t)snprintf(out, cap, "%s/%s", podnet_rundir(), name) >= cap)
    return bus_error(BUS_EINVAL, "namespace path too long: %s/%s",
                     podnet_rundir(), name);
  return 0;
}

/* -------------------------------------------------- inside a namespace */

typedef struct ns_job {
  int fd; /* the namespace to enter, or -1 to make a new one */
  int (*fn)(void *ud);
  void *ud;
  int rc;
  char err[1024];
} ns_job;

static void *
ns_thread(void *arg) {
  ns_job *j = arg;
  int ok = j->fd >= 0 ? setns(j->fd, CLONE_NEWNET) : unshare(CLONE_NEWNET);
  if (ok < 0)
    j->rc = bus_error(-errno, "%s: %s", j->fd >= 0 ? "setns" : "unshare",
                      strerror(errno));
  else
    j->rc = j->fn(j->ud);
  if (j->rc < 0)
    snprintf(j->err, sizeof j->err, "%s", bus_last_error());
  return NULL;
}

/* Run j in a new thread (its namespace per j->fd); the error detail comes
 * back to this thread. */
static int
run_job(ns_job *j) {
  pthread_t th;
  int e = pthread_create(&th, NULL, ns_thread, j);
  if (e)
    return bus_error(-e, "cannot start a thread: %s", strerror(e));
  pthread_join(th, NULL);
  if (j->rc < 0)
    bus_error(j->rc, "%s", j->err);
  return j->rc;
}

int
podnet_in_ns(const char *ns, int (*fn)(void *ud), void *ud) {
  if (!ns)
    return fn(ud);
  int fd = podnet_ns_open(ns);
  if (fd < 0)
    return fd;
  ns_job j = {.fd = fd, .fn = fn, .ud = ud};
  int rc = run_job(&j);
  close(fd);
  return rc;
}

/* ---------------------------------------------------------- namespaces */

static pthread_mutex_t rundir_mu = PTHREAD_MUTEX_INITIALIZER;

static int
mkdirs(const char *path, mode_t mode) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return -ENAMETOOLONG;
  for (char *s = tmp + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
      *s = '/';
    }
  return mkdir(tmp, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* The rundir exists and is a shared mount point (as `ip netns add` makes
 * it). Serialised: two first calls must not both bind it on itself. */
static int
rundir_ready(void) {
  const char *dir = podnet_rundir();
  int rc = 0;
  pthread_mutex_lock(&rundir_mu);
  if ((rc = mkdirs(dir, 0755))) {
    rc = bus_error(rc, "cannot make %s: %s", dir, strerror(-rc));
    goto out;
  }
  for (int bound = 0;; bound = 1) {
    if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) == 0)
      break;
    if (errno != EINVAL || bound) {
      rc = bus_error(-errno, "cannot make %s a shared mount: %s", dir,
                     strerror(errno));
      goto out;
    }
    /* not a mount point yet: bind it on itself */
    if (mount(dir, dir, "none", MS_BIND | MS_REC, NULL) < 0) {
      rc = bus_error(-errno, "cannot bind %s on itself: %s", dir,
                     strerror(errno));
      goto out;
    }
  }
out:
  pthread_mutex_unlock(&rundir_mu);
  return rc;
}

int
podnet_ns_exists(const char *name) {
  char path[4200];
  struct statfs st;
  if (ns_path(name, path, sizeof path))
    return 0;
  return statfs(path, &st) == 0 && (unsigned long)st.f_type == NSFS_MAGIC;
}

int
podnet_ns_open(const char *name) {
  char path[4200];
  struct statfs st;
  int rc = ns_path(name, path, sizeof path);
  if (rc)
    return rc;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT
               ? bus_error(BUS_ENOT_FOUND, "no network namespace %s", name)
               : bus_error(-errno, "open %s: %s", path, strerror(errno));
  if (fstatfs(fd, &st) < 0 || (unsigned long)st.f_type != NSFS_MAGIC) {
    close(fd);
    return bus_error(BUS_ENOT_FOUND,
                     "no network namespace %s (%s is not mounted)", name, path);
  }
  return fd;
}

typedef struct mk_ns {
  const char *path;
} mk_ns;

/* In a thread that just unshared its network namespace: pin it on the
 * file and bring its loopback up. */
static int
pin_ns(void *ud) {
  mk_ns *m = ud;
  char self[64];
  struct nl_sock *sk = NULL;
  snprintf(self, sizeof self, "/proc/self/task/%ld/ns/net",
           (long)syscall(SYS_gettid));
  if (mount(self, m->path, "none", MS_BIND, NULL) < 0)
    return bus_error(-errno, "cannot bind %s on %s: %s", self, m->path,
                     strerror(errno));
  int rc = podnet__nl_open(&sk);
  if (!rc)
    rc = podnet__link_up(sk, "lo");
  nl_socket_free(sk);
  return rc;
}

int
podnet_ns_create(const char *name) {
  char path[4200];
  int rc = ns_path(name, path, sizeof path);
  if (rc || (rc = rundir_ready()))
    return rc;
  if (podnet_ns_exists(name))
    return bus_error(BUS_EEXISTS, "network namespace %s exists", name);
  int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0 && errno == EEXIST) { /* a file without a namespace */
    unlink(path);
    fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  }
  if (fd < 0)
    return errno == EEXIST
               ? bus_error(BUS_EEXISTS, "network namespace %s exists", name)
               : bus_error(-errno, "cannot create %s: %s", path,
                           strerror(errno));
  close(fd);
  mk_ns m = {path};
  ns_job j = {.fd = -1, .fn = pin_ns, .ud = &m};
  if ((rc = run_job(&j)) < 0) {
    char why[1024];
    snprintf(why, sizeof why, "%s", bus_last_error());
    umount2(path, MNT_DETACH);
    unlink(path);
    return bus_error(rc, "network namespace %s: %s", name, why);
  }
  return 0;
}

int
podnet_ns_delete(const char *name) {
  char path[4200];
  int rc = ns_path(name, path, sizeof path);
  if (rc)
    return rc;
  if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
    return bus_error(-errno, "cannot unmount %s: %s", path, strerror(errno));
  if (unlink(path) < 0 && errno != ENOENT)
    return bus_error(-errno, "cannot remove %s: %s", path, strerror(errno));
  return 0;
}
