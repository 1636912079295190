/*
 * nl.c - podnet's rtnetlink (libnl-route-3): links, addresses and routes
 * in the namespace of the calling thread (podnet_int.h). libnl's NLE_*
 * codes are translated once, in podnet__nl_fail(): BUS_ENOT_FOUND for a
 * missing link, -errno for what the kernel refused.
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

int
podnet__nl_fail(int nle, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return bus_error(nl_code(nle), "%s: %s", what, nl_geterror(nle));
}

/* A route socket in the calling thread's current namespace. */
int
podnet__nl_open(struct nl_sock **out) {
  struct nl_sock *sk = nl_socket_alloc();
  if (!sk)
    return bus_error(-ENOMEM, "netlink: out of memory");
  int err = nl_connect(sk, NETLINK_ROUTE);
  if (err < 0) {
    nl_socket_free(sk);
    return podnet__nl_fail(err, "netlink connect");
  }
  *out = sk;
  return 0;
}

/* The link named ifname, or BUS_ENOT_FOUND. */
int
podnet__link_get(struct nl_sock *sk, const char *ifname,
                 struct rtnl_link **out) {
  int err = rtnl_link_get_kernel(sk, 0, ifname, out);
  if (err < 0)
    return podnet__nl_fail(err, "interface %s", ifname);
  return 0;
}

int
podnet__link_up(struct nl_sock *sk, const char *ifname) {
  struct rtnl_link *l = NULL, *chg = NULL;
  int rc = podnet__link_get(sk, ifname, &l);
  if (rc)
    return rc;
  if (!(chg = rtnl_link_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_link_set_flags(chg, IFF_UP);
  int err = rtnl_link_change(sk, l, chg, 0);
  if (err < 0)
    rc = podnet__nl_fail(err, "set %s up", ifname);
out:
  rtnl_link_put(chg);
  rtnl_link_put(l);
  return rc;
}

/* Delete ifname; 0 when it is not there. */
int
podnet__link_del(struct nl_sock *sk, const char *ifname) {
  struct rtnl_link *l = NULL;
  int rc = podnet__link_get(sk, ifname, &l);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  int err = rtnl_link_delete(sk, l);
  rtnl_link_put(l);
  if (err < 0 && nl_code(err) != BUS_ENOT_FOUND)
    return podnet__nl_fail(err, "delete %s", ifname);
  return 0;
}

/* "10.2.0.0/24", "fd00::/64", "10.1.2.3" (full length) or "default"
 * (family from hint, AF_INET when AF_UNSPEC) into a new nl_addr, read by
 * bus_cidr_parse (host bits allowed: an interface's address). With
 * plen >= 0 a "/len" is refused (the caller gives the length). */
int
podnet__parse_addr(const char *s, int hint, int plen, struct nl_addr **out) {
  const char *text = s;
  bus_cidr c;
  if (s && !strcmp(s, "default"))
    text = hint == AF_INET6 ? "::/0" : "0.0.0.0/0";
  if (!s || (plen >= 0 && strchr(s, '/')) ||
      bus_cidr_parse(text, BUS_CIDR_BARE, &c))
    return bus_error(BUS_EINVAL, "malformed address '%s'", s ? s : "(null)");
  if (plen >= 0) {
    if (plen > (c.family == 4 ? 32 : 128))
      return bus_error(BUS_EINVAL, "prefix length %d too long for %s", plen, s);
    c.prefix = plen;
  }
  int fam = c.family == 4 ? AF_INET : AF_INET6;
  struct nl_addr *a = nl_addr_build(fam, c.addr, c.family == 4 ? 4 : 16);
  if (!a)
    return bus_error(-ENOMEM, "netlink: out of memory");
  nl_addr_set_prefixlen(a, c.prefix);
  *out = a;
  return 0;
}

int
podnet__addr_change(struct nl_sock *sk, const char *ifname, const char *addr,
                    int plen, int add) {
  struct rtnl_link *l = NULL;
  struct rtnl_addr *ra = NULL;
  struct nl_addr *local = NULL;
  int rc = podnet__parse_addr(addr, AF_UNSPEC, plen, &local);
  if (rc)
    return rc;
  if ((rc = podnet__link_get(sk, ifname, &l))) {
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
    rc = podnet__nl_fail(rc, "address %s/%d", addr, plen);
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
      rc = podnet__nl_fail(err, "%s %s/%d %s %s", add ? "add" : "delete", addr,
                           plen, add ? "to" : "from", ifname);
  }
out:
  rtnl_addr_put(ra);
  rtnl_link_put(l);
  nl_addr_put(local);
  return rc;
}

/* Add (replacing any route to the same prefix) or delete a route in the
 * main table out of ifname, via gw when not NULL. */
int
podnet__route_change(struct nl_sock *sk, const char *prefix, const char *ifname,
                     const char *gw, int add) {
  struct rtnl_link *l = NULL;
  struct rtnl_route *r = NULL;
  struct rtnl_nexthop *nh = NULL;
  struct nl_addr *dst = NULL, *via = NULL;
  int rc, hint = AF_UNSPEC;
  if (gw && (rc = podnet__parse_addr(gw, AF_UNSPEC, -1, &via)))
    return rc;
  if (via)
    hint = nl_addr_get_family(via);
  if ((rc = podnet__parse_addr(prefix, hint, -1, &dst)))
    goto out;
  if (via && nl_addr_get_family(via) != nl_addr_get_family(dst)) {
    rc = bus_error(BUS_EINVAL, "gateway %s is not of %s's family", gw, prefix);
    goto out;
  }
  if ((rc = podnet__link_get(sk, ifname, &l))) {
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
    rc = podnet__nl_fail(rc, "route %s", prefix);
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
      rc =
          podnet__nl_fail(err, "%s route %s dev %s%s%s", add ? "add" : "delete",
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
