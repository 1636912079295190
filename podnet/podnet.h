/*
 * podnet.h - pods' network namespaces, veth pairs, macvlans, addresses
 * and routes, with libnl-3 (netlink; nothing here runs `ip`). A library of its
 * own (podnet/), used by lark-edge (the raw+netns runtime) and lark-relay node
 * (virtual addresses, routes and capture sockets inside a pod's namespace).
 *
 * A pod's namespace is a named one, as iproute2 keeps them: a file
 * <rundir>/<name> (default rundir /run/netns) bind-mounted on the
 * namespace, so `ip netns exec <name>` works on it and it outlives the
 * process that made it. lark-edge names a pod's namespace
 * podnet_ns_name(pod) ("lark-<pod>", cut to fit) and lark-relay finds it
 * the same way.
 *
 * Addresses are text ("10.88.0.6", "fd00::6"), prefixes "10.2.0.0/24".
 * Functions return 0 or a negative BUS_E* code (BUS_ENOT_FOUND for a
 * namespace or link that is not there, BUS_EINVAL for a malformed
 * address, -errno for what the kernel refused) with detail in
 * bus_last_error(). All need CAP_NET_ADMIN (and CAP_SYS_ADMIN to make a
 * namespace). Thread-safe: a call that works inside a namespace does so
 * in a short-lived thread of its own, so the caller's thread never
 * changes namespace.
 */
#ifndef LARK_PODNET_H
#define LARK_PODNET_H

#include <stddef.h>

#define PODNET_NS_MAX 64 /* a namespace's name, with its NUL */
#define PODNET_IFNAME_MAX 16

/* "lark-<pod>" into out (at most PODNET_NS_MAX with NUL; a long pod name
 * is cut and given an 8-hex-digit hash so names stay unique). */
void podnet_ns_name(const char *pod, char out[PODNET_NS_MAX]);

/* The node's end of a pod's veth: "lk" + 8 hex digits of a hash of pod
 * (perturbed by salt when not 0, to step past a name another pod holds). */
void podnet_host_ifname(const char *pod, unsigned salt,
                        char out[PODNET_IFNAME_MAX]);

/* Where named namespaces live: $LARK_NETNS_DIR or /run/netns. */
const char *podnet_rundir(void);

/* Make the named namespace (its loopback up); BUS_EEXISTS when it is.
 * The rundir is made (and made a shared mount point) when needed. */
int podnet_ns_create(const char *name);
/* Unmount and remove it; 0 when it was not there. */
int podnet_ns_delete(const char *name);
/* Whether it exists (1) or not (0): a file under the rundir with no
 * namespace mounted on it is not one. */
int podnet_ns_exists(const char *name);
/* An O_RDONLY|O_CLOEXEC descriptor of it, or a negative code. */
int podnet_ns_open(const char *name);

/*
 * Connect a namespace to the caller's: a veth pair host_if (here, up,
 * with host_addr/plen) and "eth0" inside ns (up, with pod_addr/plen and a
 * default route via host_addr). An existing host_if is replaced.
 */
typedef struct podnet_veth {
  const char *ns;        /* the pod's namespace name */
  const char *host_if;   /* e.g. "lk" + 8 hex digits, < PODNET_IFNAME_MAX */
  const char *host_addr; /* the node's end, e.g. 10.88.0.5 */
  const char *pod_addr;  /* the pod's localIP, e.g. 10.88.0.6 */
  int plen;              /* prefix length of both, e.g. 30 */
} podnet_veth;

int podnet_veth_add(const podnet_veth *v);
/* Remove host_if (its peer goes with it); 0 when it was not there. */
int podnet_veth_del(const char *host_if);

/*
 * A macvlan (bridge mode) on parent, an interface of the caller's
 * namespace, made straight inside ns as ifname (its name is never seen
 * here), with addr/plen, up, and the on-link route to cidr (NULL: only
 * what the address brings). A link named ifname already in ns is
 * replaced; on failure nothing is left. BUS_ENOT_FOUND when parent or ns
 * is not there.
 */
typedef struct podnet_macvlan {
  const char *ns;     /* the pod's namespace name */
  const char *parent; /* e.g. "eth1", here */
  const char *ifname; /* inside ns, < PODNET_IFNAME_MAX */
  const char *addr;   /* e.g. 192.168.50.100 */
  int plen;           /* the subnet's prefix length, e.g. 24 */
  const char *cidr;   /* e.g. 192.168.50.0/24 */
} podnet_macvlan;

int podnet_macvlan_add(const podnet_macvlan *m);

/*
 * Inside namespace ns (NULL: the caller's): add addr/plen to interface
 * ifname ("lo" for a virtual address), or a route to prefix out of
 * ifname (via gateway when not NULL). prefix is "a.b.c.d/len", a bare
 * address (a host route) or "default". A route added replaces any route
 * to the same prefix in the main table. Adding what is there already is
 * 0; so is deleting what is not (an interface or namespace that is gone
 * included).
 */
int podnet_addr_add(const char *ns, const char *ifname, const char *addr,
                    int plen);
int podnet_addr_del(const char *ns, const char *ifname, const char *addr,
                    int plen);
int podnet_route_add(const char *ns, const char *prefix, const char *ifname,
                     const char *gateway);
int podnet_route_del(const char *ns, const char *prefix, const char *ifname);

/*
 * A TCP socket made inside ns, bound to addr:port (port 0: any; the
 * bound port is written to *bound when not NULL) and listening, non-
 * blocking and close-on-exec. The socket stays in ns whatever thread
 * uses it later. Returns the descriptor or a negative code.
 */
int podnet_listen(const char *ns, const char *addr, int port, int *bound);

/* Whether interface ifname is there (1) or not (0) in ns (NULL: the
 * caller's), or a negative code (BUS_ENOT_FOUND: no such namespace). */
int podnet_link_exists(const char *ns, const char *ifname);
/* Remove interface ifname from ns (NULL: the caller's); 0 when it or
 * the namespace is not there. */
int podnet_link_del(const char *ns, const char *ifname);

/* Run fn(ud) in a thread inside ns (NULL: in the caller's thread) and
 * return what it returns; when that is negative, the detail fn left in
 * bus_last_error() is carried to the caller's thread. */
int podnet_in_ns(const char *ns, int (*fn)(void *ud), void *ud);

#endif
