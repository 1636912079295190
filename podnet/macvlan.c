/*
 * macvlan.c - a macvlan on one of the node's interfaces, made straight
 * inside a pod's namespace (podnet.h, podnet_macvlan_add): how a pod that
 * holds a robot reaches the robot's own L2 segment with an address of
 * its own.
 *
 * The link is created with the namespace's descriptor in the same
 * RTM_NEWLINK (as `ip link add link PARENT name IF netns NS type
 * macvlan`), so its name is only ever seen inside the pod's namespace:
 * two pods' "rb0" never meet, and no half-made link is left on the node.
 * Bridge mode, so pods on one parent also reach each other. Inside the
 * namespace it gets its address with the subnet's prefix, goes up, and
 * gets the on-link route to the subnet and nothing more (the pod's
 * default route stays its veth's). A failure after the link was made
 * removes it again.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <linux/if_link.h>

#include <netlink/route/link/macvlan.h>

#include "podnet_int.h"

typedef struct inside {
  const podnet_macvlan *m;
  int stage; /* 0: remove a stale link of that name; 1: configure it */
} inside;

static int
inside_fn(void *ud) {
  inside *in = ud;
  const podnet_macvlan *m = in->m;
  struct nl_sock *sk = NULL;
  int rc = podnet__nl_open(&sk);
  if (rc)
    return rc;
  if (in->stage == 0)
    rc = podnet__link_del(sk, m->ifname);
  else if (!(rc = podnet__addr_change(sk, m->ifname, m->addr, m->plen, 1)) &&
           !(rc = podnet__link_up(sk, m->ifname)) && m->cidr)
    rc = podnet__route_change(sk, m->cidr, m->ifname, NULL, 1);
  nl_socket_free(sk);
  return rc;
}

/* Everything is checked before anything changes. */
static int
check(const podnet_macvlan *m) {
  struct nl_addr *probe = NULL;
  int rc;
  if (!m)
    return bus_error(BUS_EINVAL, "no macvlan given");
  if ((rc = podnet__check_ifname(m->parent)) ||
      (rc = podnet__check_ifname(m->ifname)))
    return rc;
  if ((rc = podnet__parse_addr(m->addr, AF_UNSPEC, m->plen, &probe)))
    return rc;
  nl_addr_put(probe);
  if (m->cidr && (rc = podnet__parse_addr(m->cidr, AF_UNSPEC, -1, &probe)))
    return rc;
  nl_addr_put(probe);
  return 0;
}

/* The macvlan link itself: on parent (here), named ifname, made in the
 * namespace fd is open on. */
static int
make_link(struct nl_sock *sk, const podnet_macvlan *m, int fd) {
  struct rtnl_link *parent = NULL, *l = NULL;
  int rc = podnet__link_get(sk, m->parent, &parent);
  if (rc)
    return bus_error(rc, "parent %s: %s", m->parent, bus_last_error());
  if (!(l = rtnl_link_macvlan_alloc())) {
    rc = bus_error(-ENOMEM, "netlink: out of memory");
    goto out;
  }
  rtnl_link_set_link(l, rtnl_link_get_ifindex(parent));
  rtnl_link_set_name(l, m->ifname);
  rtnl_link_macvlan_set_mode(l, MACVLAN_MODE_BRIDGE);
  rtnl_link_set_ns_fd(l, fd);
  int err = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0)
    rc = podnet__nl_fail(err, "add macvlan %s on %s in %s", m->ifname,
                         m->parent, m->ns);
out:
  rtnl_link_put(l);
  rtnl_link_put(parent);
  return rc;
}

int
podnet_macvlan_add(const podnet_macvlan *m) {
  struct nl_sock *sk = NULL;
  int fd = -1, rc;
  if ((rc = check(m)))
    return rc;
  if ((fd = podnet_ns_open(m->ns)) < 0)
    return fd;
  inside in = {m, 0};
  if ((rc = podnet_in_ns(m->ns, inside_fn, &in)) ||
      (rc = podnet__nl_open(&sk)) || (rc = make_link(sk, m, fd)))
    goto out;
  in.stage = 1;
  if ((rc = podnet_in_ns(m->ns, inside_fn, &in))) {
    char why[1024];
    snprintf(why, sizeof why, "%s", bus_last_error());
    podnet_link_del(m->ns, m->ifname);
    bus_error(rc, "%s", why);
  }
out:
  nl_socket_free(sk);
  close(fd);
  return rc;
}
