/*
 * podnet.c - pods' network namespaces, veth pairs, addresses and routes
 * over rtnetlink (libnl-route-3), and sockets made inside a namespace.
 *
 * A named namespace is kept as iproute2 keeps one: an empty file under
 * podnet_rundir() with the namespace bind-mounted on it. The rundir is
 * made a shared mount point (bound on itself first if it is not a mount
 * point), so the bind mounts propagate to other mount namespaces and an
 * unmount here is seen there. A name is "there" only when its file is an
 * nsfs mount: a file left behind by a crash between create and mount is
 * not a namespace, and create replaces it.
 *
 * Nothing here changes the caller's namespace. Work inside a namespace
 * runs in a short-lived thread that setns()es first (or unshare()s, to
 * make one); a netlink or TCP socket opened in that thread belongs to
 * that namespace for its whole life, whichever thread uses it later. A
 * failure's detail is recorded in the worker thread's last-error buffer
 * and carried back to the caller's before the call returns.
 *
 * libnl's NLE_* codes are translated once, in nl_fail(): BUS_ENOT_FOUND
 * for a missing link, -errno for what the kernel refused.
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

#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include "bus.h"
#include "podnet.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

#define POD_IF "eth0" /* the pod's end of its veth, inside its namespace */

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

static int
check_ifname(const char *name) {
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

/* ----------------------------------------------------------- netlink */

static int
nl_code(int nle) {
  switch (nle < 0 ? -nle : nle) {
  case NLE_OBJ_NOTFOUND:
  case NLE_NODEV:
    return BUS_ENOT_FOUND;
  case NLE_EXIST:
    return -EEXIST;
  case NLE_PERM:
    return -EPERM;
  case NLE_NOACCESS:
    return -EACCES;
  case NLE_NOMEM:
    return -ENOMEM;
  case NLE_BUSY:
    return -EBUSY;
  case NLE_INVAL:
    return -EINVAL;
  case NLE_RANGE:
    return -ERANGE;
  case NLE_NOADDR:
    return -EADDRNOTAVAIL;
  case NLE_AGAIN:
    return -EAGAIN;
  case NLE_OPNOTSUPP:
    return -EOPNOTSUPP;
  case NLE_AF_NOSUPPORT:
    return -EAFNOSUPPORT;
  case NLE_MSGSIZE:
    return -EMSGSIZE;
  default:
    return -EIO;
  }
}

/* Translate a libnl error: the code, with "what: libnl's text" as detail. */
static int nl_fail(int nle, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
nl_fail(int nle, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return bus_error(nl_code(nle), "%s: %s", what, nl_geterror(nle));
}

/* A route socket in the calling thread's current namespace. */
static int
nl_open(struct nl_sock **out) {
  struct nl_sock *sk = nl_socket_alloc();
  if (!sk)
    return bus_error(-ENOMEM, "netlink: out of memory");
  int err = nl_connect(sk, NETLINK_ROUTE);
  if (err < 0) {
    nl_socket_free(sk);
    return nl_fail(err, "netlink connect");
  }
  *out = sk;
  return 0;
}

/* The link named ifname, or BUS_ENOT_FOUND. */
static int
link_get(struct nl_sock *sk, const char *ifname, struct rtnl_link **out) {
  int err = rtnl_link_get_kernel(sk, 0, ifname, out);
  if (err < 0)
    return nl_fail(err, "interface %s", ifname);
  return 0;
}

static int
link_up(struct nl_sock *sk, const char *ifname) {
  struct rtnl_link *l = NULL, *chg = NULL;
  int rc = link_get(sk, ifname, &l);
  if (rc)
    return rc;
  if (!(chg = rtnl_link_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_link_set_flags(chg, IFF_UP);
  int err = rtnl_link_change(sk, l, chg, 0);
  if (err < 0)
    rc = nl_fail(err, "set %s up", ifname);
out:
  rtnl_link_put(chg);
  rtnl_link_put(l);
  return rc;
}

/* Delete ifname; 0 when it is not there. */
static int
link_del(struct nl_sock *sk, const char *ifname) {
  struct rtnl_link *l = NULL;
  int rc = link_get(sk, ifname, &l);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  int err = rtnl_link_delete(sk, l);
  rtnl_link_put(l);
  if (err < 0 && nl_code(err) != BUS_ENOT_FOUND)
    return nl_fail(err, "delete %s", ifname);
  return 0;
}

/* "10.2.0.0/24", "fd00::/64", "10.1.2.3" (full length) or "default"
 * (family from hint, AF_INET when AF_UNSPEC) into a new nl_addr. With
 * need_plen < 0 a "/len" is refused (the caller gives the length). */
static int
parse_addr(const char *s, int hint, int plen, struct nl_addr **out) {
  char buf[INET6_ADDRSTRLEN + 8];
  unsigned char bin[16];
  int fam, max, len = -1;
  if (!s || !*s || strlen(s) >= sizeof buf)
    return bus_error(BUS_EINVAL, "malformed address '%s'", s ? s : "(null)");
  if (!strcmp(s, "default"))
    snprintf(buf, sizeof buf, "%s", hint == AF_INET6 ? "::/0" : "0.0.0.0/0");
  else
    snprintf(buf, sizeof buf, "%s", s);
  char *slash = strchr(buf, '/');
  if (slash) {
    char *end;
    *slash = 0;
    long v = strtol(slash + 1, &end, 10);
    if (plen >= 0 || end == slash + 1 || *end || v < 0 || v > 128)
      return bus_error(BUS_EINVAL, "malformed address '%s'", s);
    len = (int)v;
  }
  if (inet_pton(AF_INET, buf, bin) == 1)
    fam = AF_INET, max = 32;
  else if (inet_pton(AF_INET6, buf, bin) == 1)
    fam = AF_INET6, max = 128;
  else
    return bus_error(BUS_EINVAL, "malformed address '%s'", s);
  if (len < 0)
    len = plen >= 0 ? plen : max;
  if (len > max)
    return bus_error(BUS_EINVAL, "prefix length %d too long for %s", len, s);
  struct nl_addr *a = nl_addr_build(fam, bin, fam == AF_INET ? 4 : 16);
  if (!a)
    return bus_error(-ENOMEM, "netlink: out of memory");
  nl_addr_set_prefixlen(a, len);
  *out = a;
  return 0;
}

static int
addr_change(struct nl_sock *sk, const char *ifname, const char *addr, int plen,
            int add) {
  struct rtnl_link *l = NULL;
  struct rtnl_addr *ra = NULL;
  struct nl_addr *local = NULL;
  int rc = parse_addr(addr, AF_UNSPEC, plen, &local);
  if (rc)
    return rc;
  if ((rc = link_get(sk, ifname, &l))) {
    if (!add && rc == BUS_ENOT_FOUND)
      rc = 0; /* no interface, no address */
    goto out;
  }
  if (!(ra = rtnl_addr_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_addr_set_ifindex(ra, rtnl_link_get_ifindex(l));
  if ((rc = rtnl_addr_set_local(ra, local)) < 0) {
    rc = nl_fail(rc, "address %s/%d", addr, plen);
    goto out;
  }
  rtnl_addr_set_prefixlen(ra, nl_addr_get_prefixlen(local));
  if (nl_addr_get_family(local) == AF_INET6)
    rtnl_addr_set_flags(ra, IFA_F_NODAD); /* usable at once */
  int err = add ? rtnl_addr_add(sk, ra, 0) : rtnl_addr_delete(sk, ra, 0);
  if (err < 0) {
    int code = nl_code(err);
    if ((add && code == -EEXIST) ||
        (!add && (code == -EADDRNOTAVAIL || code == BUS_ENOT_FOUND)))
      rc = 0;
    else
      rc = nl_fail(err, "%s %s/%d %s %s", add ? "add" : "delete", addr, plen,
                   add ? "to" : "from", ifname);
  }
out:
  rtnl_addr_put(ra);
  rtnl_link_put(l);
  nl_addr_put(local);
  return rc;
}

/* Add (replacing any route to the same prefix) or delete a route in the
 * main table out of ifname, via gw when not NULL. */
static int
route_change(struct nl_sock *sk, const char *prefix, const char *ifname,
             const char *gw, int add) {
  struct rtnl_link *l = NULL;
  struct rtnl_route *r = NULL;
  struct rtnl_nexthop *nh = NULL;
  struct nl_addr *dst = NULL, *via = NULL;
  int rc, hint = AF_UNSPEC;
  if (gw && (rc = parse_addr(gw, AF_UNSPEC, -1, &via)))
    return rc;
  if (via)
    hint = nl_addr_get_family(via);
  if ((rc = parse_addr(prefix, hint, -1, &dst)))
    goto out;
  if (via && nl_addr_get_family(via) != nl_addr_get_family(dst)) {
    rc = bus_error(BUS_EINVAL, "gateway %s is not of %s's family", gw, prefix);
    goto out;
  }
  if ((rc = link_get(sk, ifname, &l))) {
    if (!add && rc == BUS_ENOT_FOUND)
      rc = 0; /* no interface, no route out of it */
    goto out;
  }
  if (!(r = rtnl_route_alloc()) || !(nh = rtnl_route_nh_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_route_set_family(r, (uint8_t)nl_addr_get_family(dst));
  rtnl_route_set_table(r, RT_TABLE_MAIN);
  if ((rc = rtnl_route_set_dst(r, dst)) < 0) {
    rc = nl_fail(rc, "route %s", prefix);
    goto out;
  }
  rtnl_route_nh_set_ifindex(nh, rtnl_link_get_ifindex(l));
  if (via)
    rtnl_route_nh_set_gateway(nh, via);
  rtnl_route_add_nexthop(r, nh);
  nh = NULL; /* the route owns it */
  int err;
  if (add) {
    rtnl_route_set_protocol(r, RTPROT_STATIC);
    rtnl_route_set_scope(r, via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
    err = rtnl_route_add(sk, r, NLM_F_REPLACE);
  } else {
    /* any protocol and scope: what matches prefix and interface */
    rtnl_route_set_protocol(r, RTPROT_UNSPEC);
    rtnl_route_set_scope(r, RT_SCOPE_NOWHERE);
    err = rtnl_route_delete(sk, r, 0);
  }
  if (err < 0) {
    int code = nl_code(err);
    if (!add && (code == -ESRCH || code == BUS_ENOT_FOUND))
      rc = 0;
    else
      rc = nl_fail(err, "%s route %s dev %s%s%s", add ? "add" : "delete",
                   prefix, ifname, via ? " via " : "", via ? gw : "");
  }
out:
  if (nh)
    rtnl_route_nh_free(nh);
  rtnl_route_put(r);
  rtnl_link_put(l);
  nl_addr_put(dst);
  nl_addr_put(via);
  return rc;
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
  int rc = nl_open(&sk);
  if (!rc)
    rc = link_up(sk, "lo");
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

/* ------------------------------------------------------------ veths */

typedef struct pod_end {
  const podnet_veth *v;
  int stage; /* 0: remove a stale eth0; 1: configure eth0 */
} pod_end;

static int
pod_end_fn(void *ud) {
  pod_end *e = ud;
  struct nl_sock *sk = NULL;
  int rc = nl_open(&sk);
  if (rc)
    return rc;
  if (e->stage == 0)
    rc = link_del(sk, POD_IF);
  else if (!(rc = addr_change(sk, POD_IF, e->v->pod_addr, e->v->plen, 1)) &&
           !(rc = link_up(sk, POD_IF)))
    rc = route_change(sk, "default", POD_IF, e->v->host_addr, 1);
  nl_socket_free(sk);
  return rc;
}

int
podnet_veth_add(const podnet_veth *v) {
  struct nl_sock *sk = NULL;
  struct rtnl_link *l = NULL, *peer = NULL;
  struct nl_addr *probe = NULL;
  int fd = -1, rc, made = 0;
  if (!v)
    return bus_error(BUS_EINVAL, "no veth given");
  if ((rc = check_ifname(v->host_if)))
    return rc;
  /* malformed addresses are refused before anything changes */
  if ((rc = parse_addr(v->host_addr, AF_UNSPEC, v->plen, &probe)))
    return rc;
  nl_addr_put(probe);
  if ((rc = parse_addr(v->pod_addr, AF_UNSPEC, v->plen, &probe)))
    return rc;
  nl_addr_put(probe);
  if ((fd = podnet_ns_open(v->ns)) < 0)
    return fd;
  pod_end e = {v, 0};
  if ((rc = nl_open(&sk)) || (rc = link_del(sk, v->host_if)) ||
      (rc = podnet_in_ns(v->ns, pod_end_fn, &e)))
    goto out;
  if (!(l = rtnl_link_veth_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_link_set_name(l, v->host_if);
  peer = rtnl_link_veth_get_peer(l);
  rtnl_link_set_name(peer, POD_IF);
  rtnl_link_set_ns_fd(peer, fd); /* made in the pod's namespace */
  int err = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0) {
    rc = nl_fail(err, "add veth %s (peer %s in %s)", v->host_if, POD_IF, v->ns);
    goto out;
  }
  made = 1;
  e.stage = 1;
  if ((rc = addr_change(sk, v->host_if, v->host_addr, v->plen, 1)) ||
      (rc = link_up(sk, v->host_if)) ||
      (rc = podnet_in_ns(v->ns, pod_end_fn, &e)))
    goto out;
out:
  if (rc && made) {
    char why[1024];
    snprintf(why, sizeof why, "%s", bus_last_error());
    link_del(sk, v->host_if);
    bus_error(rc, "%s", why);
  }
  if (peer)
    rtnl_link_put(peer);
  rtnl_link_put(l);
  nl_socket_free(sk);
  close(fd);
  return rc;
}

int
podnet_veth_del(const char *host_if) {
  struct nl_sock *sk = NULL;
  int rc = check_ifname(host_if);
  if (!rc && !(rc = nl_open(&sk)))
    rc = link_del(sk, host_if);
  nl_socket_free(sk);
  return rc;
}

/* ------------------------------------------ addresses, routes, links */

typedef struct change {
  const char *ifname, *addr, *gw;
  int plen, add, route;
} change;

static int
change_fn(void *ud) {
  change *c = ud;
  struct nl_sock *sk = NULL;
  int rc = nl_open(&sk);
  if (!rc)
    rc = c->route ? route_change(sk, c->addr, c->ifname, c->gw, c->add)
                  : addr_change(sk, c->ifname, c->addr, c->plen, c->add);
  nl_socket_free(sk);
  return rc;
}

/* A delete in a namespace that is gone has nothing to delete. */
static int
run_change(const char *ns, change *c) {
  int rc = check_ifname(c->ifname);
  if (rc)
    return rc;
  rc = podnet_in_ns(ns, change_fn, c);
  return !c->add && rc == BUS_ENOT_FOUND ? 0 : rc;
}

int
podnet_addr_add(const char *ns, const char *ifname, const char *addr,
                int plen) {
  change c = {.ifname = ifname, .addr = addr, .plen = plen, .add = 1};
  return run_change(ns, &c);
}

int
podnet_addr_del(const char *ns, const char *ifname, const char *addr,
                int plen) {
  change c = {.ifname = ifname, .addr = addr, .plen = plen};
  return run_change(ns, &c);
}

int
podnet_route_add(const char *ns, const char *prefix, const char *ifname,
                 const char *gateway) {
  change c = {
      .ifname = ifname, .addr = prefix, .gw = gateway, .add = 1, .route = 1};
  return run_change(ns, &c);
}

int
podnet_route_del(const char *ns, const char *prefix, const char *ifname) {
  change c = {.ifname = ifname, .addr = prefix, .route = 1};
  return run_change(ns, &c);
}

static int
link_exists_fn(void *ud) {
  const char *ifname = ud;
  struct nl_sock *sk = NULL;
  struct rtnl_link *l = NULL;
  int rc = nl_open(&sk);
  if (!rc) {
    rc = link_get(sk, ifname, &l);
    rc = rc == 0 ? 1 : rc == BUS_ENOT_FOUND ? 0 : rc;
  }
  rtnl_link_put(l);
  nl_socket_free(sk);
  return rc;
}

int
podnet_link_exists(const char *ns, const char *ifname) {
  int rc = check_ifname(ifname);
  return rc ? rc : podnet_in_ns(ns, link_exists_fn, (void *)ifname);
}

/* ----------------------------------------------------------- listen */

typedef struct listen_req {
  const char *addr;
  int port;
  int bound;
} listen_req;

static int
listen_fn(void *ud) {
  listen_req *q = ud;
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof ss);
  const char *a = q->addr ? q->addr : "0.0.0.0";
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)q->port);
    sl = sizeof *s4;
  } else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)q->port);
    sl = sizeof *s6;
  } else
    return bus_error(BUS_EINVAL, "malformed address '%s'", a);
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return bus_error(-errno, "socket: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
    int e = errno;
    close(fd);
    return bus_error(-e, "listen on %s port %d: %s", a, q->port, strerror(e));
  }
  sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    q->bound = ntohs(ss.ss_family == AF_INET ? s4->sin_port : s6->sin6_port);
  return fd;
}

int
podnet_listen(const char *ns, const char *addr, int port, int *bound) {
  if (port < 0 || port > 65535)
    return bus_error(BUS_EINVAL, "port %d out of range", port);
  listen_req q = {addr, port, 0};
  int fd = podnet_in_ns(ns, listen_fn, &q);
  if (fd >= 0 && bound)
    *bound = q.bound;
  return fd;
}
