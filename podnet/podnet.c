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
 * This file: veths, addresses, routes, links and listeners; macvlan.c:
 * a node interface's macvlan inside a pod; ns.c: names and namespaces;
 * nl.c: rtnetlink, where libnl's codes are translated.
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

#include "podnet_int.h"

#define POD_IF "eth0" /* the pod's end of its veth, inside its namespace */

/* ------------------------------------------------------------ veths */

typedef struct pod_end {
  const podnet_veth *v;
  int stage; /* 0: remove a stale eth0; 1: configure eth0 */
} pod_end;

static int
pod_end_fn(void *ud) {
  pod_end *e = ud;
  struct nl_sock *sk = NULL;
  int rc = podnet__nl_open(&sk);
  if (rc)
    return rc;
  if (e->stage == 0)
    rc = podnet__link_del(sk, POD_IF);
  else if (!(rc = podnet__addr_change(sk, POD_IF, e->v->pod_addr, e->v->plen,
                                      1)) &&
           !(rc = podnet__link_up(sk, POD_IF)))
    rc = podnet__route_change(sk, "default", POD_IF, e->v->host_addr, 1);
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
  if ((rc = podnet__check_ifname(v->host_if)))
    return rc;
  /* malformed addresses are refused before anything changes */
  if ((rc = podnet__parse_addr(v->host_addr, AF_UNSPEC, v->plen, &probe)))
    return rc;
  nl_addr_put(probe);
  if ((rc = podnet__parse_addr(v->pod_addr, AF_UNSPEC, v->plen, &probe)))
    return rc;
  nl_addr_put(probe);
  if ((fd = podnet_ns_open(v->ns)) < 0)
    return fd;
  pod_end e = {v, 0};
  if ((rc = podnet__nl_open(&sk)) || (rc = podnet__link_del(sk, v->host_if)) ||
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
    rc = podnet__nl_fail(err, "add veth %s (peer %s in %s)", v->host_if, POD_IF,
                         v->ns);
    goto out;
  }
  made = 1;
  e.stage = 1;
  if ((rc = podnet__addr_change(sk, v->host_if, v->host_addr, v->plen, 1)) ||
      (rc = podnet__link_up(sk, v->host_if)) ||
      (rc = podnet_in_ns(v->ns, pod_end_fn, &e)))
    goto out;
out:
  if (rc && made) {
    char why[1024];
    snprintf(why, sizeof why, "%s", bus_last_error());
    podnet__link_del(sk, v->host_if);
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
  int rc = podnet__check_ifname(host_if);
  if (!rc && !(rc = podnet__nl_open(&sk)))
    rc = podnet__link_del(sk, host_if);
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
  int rc = podnet__nl_open(&sk);
  if (!rc)
    rc = c->route
             ? podnet__route_change(sk, c->addr, c->ifname, c->gw, c->add)
             : podnet__addr_change(sk, c->ifname, c->addr, c->plen, c->add);
  nl_socket_free(sk);
  return rc;
}

/* A delete in a namespace that is gone has nothing to delete. */
static int
run_change(const char *ns, change *c) {
  int rc = podnet__check_ifname(c->ifname);
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
  int rc = podnet__nl_open(&sk);
  if (!rc) {
    rc = podnet__link_get(sk, ifname, &l);
    rc = rc == 0 ? 1 : rc == BUS_ENOT_FOUND ? 0 : rc;
  }
  rtnl_link_put(l);
  nl_socket_free(sk);
  return rc;
}

int
podnet_link_exists(const char *ns, const char *ifname) {
  int rc = podnet__check_ifname(ifname);
  return rc ? rc : podnet_in_ns(ns, link_exists_fn, (void *)ifname);
}

static int
link_del_fn(void *ud) {
  struct nl_sock *sk = NULL;
  int rc = podnet__nl_open(&sk);
  if (!rc)
    rc = podnet__link_del(sk, ud);
  nl_socket_free(sk);
  return rc;
}

int
podnet_link_del(const char *ns, const char *ifname) {
  int rc = podnet__check_ifname(ifname);
  if (!rc)
    rc = podnet_in_ns(ns, link_del_fn, (void *)ifname);
  return rc == BUS_ENOT_FOUND ? 0 : rc;
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
