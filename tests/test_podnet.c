/*
 * test_podnet.c - pod namespaces, veths, macvlans, addresses, routes and
 * listeners made with podnet (netlink), checked from both ends. Needs
 * root.
 *
 * Each test first moves its own thread into a namespace it made (the
 * "host" namespace here), so every veth end, address and route the test
 * makes lives in namespaces of its own and nothing reaches the machine's
 * network. Names carry the test's pid, so tests run side by side.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus.h"
#include "natsd.h"
#include "podnet.h"
#include "root.h"

static char host_ns[PODNET_NS_MAX], pod_ns[PODNET_NS_MAX];
static char pod2_ns[PODNET_NS_MAX], robot_ns[PODNET_NS_MAX];

static void
setup(void) {
  lt_need_root("network namespaces, veths");
  snprintf(pod_ns, sizeof pod_ns, "lkt-%d-pod", (int)getpid());
  snprintf(pod2_ns, sizeof pod2_ns, "lkt-%d-pod2", (int)getpid());
  snprintf(robot_ns, sizeof robot_ns, "lkt-%d-robot", (int)getpid());
  podnet_ns_delete(pod_ns);
  podnet_ns_delete(pod2_ns);
  podnet_ns_delete(robot_ns);
  lt_enter_new_netns(host_ns, "host");
}

static void
teardown(void) {
  unsetenv("LARK_NETNS_DIR"); /* host_ns is under the default rundir */
  podnet_ns_delete(pod_ns);
  podnet_ns_delete(pod2_ns);
  podnet_ns_delete(robot_ns);
  podnet_ns_delete(host_ns);
}

TestSuite(podnet, .init = setup, .fini = teardown, .timeout = 60);

/* ------------------------------------------------------------ helpers */

static int
connect_to(const char *addr, int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, addr, &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Accept on a non-blocking listener, waiting up to 5 s. */
static int
accept_one(int lfd) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  if (poll(&p, 1, 5000) != 1)
    return -1;
  return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

/* Bytes both ways between a connected pair. */
static void
round_trip(int a, int b) {
  char buf[16] = "";
  cr_assert_eq(write(a, "ping", 4), 4);
  struct pollfd p = {.fd = b, .events = POLLIN};
  cr_assert_eq(poll(&p, 1, 5000), 1);
  cr_assert_eq(read(b, buf, sizeof buf), 4);
  cr_assert_eq(memcmp(buf, "ping", 4), 0);
  cr_assert_eq(write(b, "pong", 4), 4);
  p.fd = a;
  cr_assert_eq(poll(&p, 1, 5000), 1);
  cr_assert_eq(read(a, buf, sizeof buf), 4);
  cr_assert_eq(memcmp(buf, "pong", 4), 0);
}

typedef struct probe {
  char path[64]; /* under /proc/thread-self/net */
  char buf[16384];
} probe;

/* Read /proc/thread-self/net/<file> from inside a namespace. */
static int
read_net(void *ud) {
  probe *p = ud;
  char path[128];
  snprintf(path, sizeof path, "/proc/thread-self/net/%s", p->path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  size_t n = 0;
  ssize_t r;
  while (n < sizeof p->buf - 1 &&
         (r = read(fd, p->buf + n, sizeof p->buf - 1 - n)) > 0)
    n += (size_t)r;
  p->buf[n] = 0;
  close(fd);
  return 0;
}

static const char *
net_file(const char *ns, const char *file) {
  static probe p;
  snprintf(p.path, sizeof p.path, "%s", file);
  cr_assert_eq(podnet_in_ns(ns, read_net, &p), 0, "%s", bus_last_error());
  return p.buf;
}

typedef struct dial {
  const char *addr;
  int port, fd;
} dial;

static int
dial_fn(void *ud) {
  dial *d = ud;
  d->fd = connect_to(d->addr, d->port);
  return d->fd < 0 ? -errno : 0;
}

static void
veth(const char *host_if, const char *host_addr, const char *pod_addr) {
  podnet_veth v = {pod_ns, host_if, host_addr, pod_addr, 30};
  cr_assert_eq(podnet_veth_add(&v), 0, "%s", bus_last_error());
}

/* -------------------------------------------------------------- tests */

Test(podnet, namespace_create_exists_delete) {
  cr_assert_eq(podnet_ns_exists(pod_ns), 0);
  cr_assert_eq(podnet_ns_open(pod_ns), BUS_ENOT_FOUND);
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_ns_exists(pod_ns), 1);
  cr_assert_eq(podnet_ns_create(pod_ns), BUS_EEXISTS);
  int fd = podnet_ns_open(pod_ns);
  cr_assert_geq(fd, 0, "%s", bus_last_error());
  close(fd);
  /* its own loopback, up; no other interface */
  cr_assert_eq(podnet_link_exists(pod_ns, "lo"), 1);
  cr_assert_eq(podnet_link_exists(pod_ns, "eth0"), 0);
  const char *dev = net_file(pod_ns, "dev");
  cr_expect(strstr(dev, "lo:"), "%s", dev);
  cr_expect(!strstr(dev, "eth0"), "%s", dev);
  cr_assert_eq(podnet_ns_delete(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_ns_exists(pod_ns), 0);
  cr_assert_eq(podnet_ns_delete(pod_ns), 0, "a second delete is 0");
  /* a file left without a namespace is not one, and create replaces it */
  char path[512];
  snprintf(path, sizeof path, "%s/%s", podnet_rundir(), pod_ns);
  int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  cr_assert_geq(f, 0);
  close(f);
  cr_assert_eq(podnet_ns_exists(pod_ns), 0);
  cr_assert_eq(podnet_ns_open(pod_ns), BUS_ENOT_FOUND);
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_ns_exists(pod_ns), 1);
}

Test(podnet, veth_with_addresses_and_a_listener_reached_from_the_host) {
  char host_if[PODNET_IFNAME_MAX];
  podnet_host_ifname(pod_ns, 0, host_if);
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  veth(host_if, "10.88.0.1", "10.88.0.2");
  /* host end here, eth0 there */
  cr_assert_neq(if_nametoindex(host_if), 0u, "no %s on the host side", host_if);
  cr_assert_eq(podnet_link_exists(NULL, host_if), 1);
  cr_assert_eq(podnet_link_exists(pod_ns, "eth0"), 1);
  cr_assert_eq(podnet_link_exists(pod_ns, host_if), 0);
  cr_assert_eq(if_nametoindex("eth0"), 0u, "eth0 belongs to the pod");
  /* the default route inside goes via the host end (gateway 10.88.0.1) */
  const char *rt = net_file(pod_ns, "route");
  cr_expect(strstr(rt, "eth0\t00000000\t0100580A"), "%s", rt);
  /* a listener made inside, reached from here at the pod address */
  int port = 0;
  int lfd = podnet_listen(pod_ns, "10.88.0.2", 0, &port);
  cr_assert_geq(lfd, 0, "%s", bus_last_error());
  cr_assert_gt(port, 0);
  cr_assert(fcntl(lfd, F_GETFL) & O_NONBLOCK);
  cr_assert(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
  int c = connect_to("10.88.0.2", port);
  cr_assert_geq(c, 0, "connect 10.88.0.2:%d: %s", port, strerror(errno));
  int s = accept_one(lfd);
  cr_assert_geq(s, 0);
  round_trip(c, s);
  close(c);
  close(s);
  close(lfd);
  /* the pod reaches the host end too */
  int hl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  inet_pton(AF_INET, "10.88.0.1", &sa.sin_addr);
  socklen_t sl = sizeof sa;
  cr_assert_eq(bind(hl, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(hl, 4), 0);
  getsockname(hl, (struct sockaddr *)&sa, &sl);
  dial d = {"10.88.0.1", ntohs(sa.sin_port), -1};
  cr_assert_eq(podnet_in_ns(pod_ns, dial_fn, &d), 0, "%s", bus_last_error());
  s = accept4(hl, NULL, NULL, SOCK_CLOEXEC);
  cr_assert_geq(s, 0);
  round_trip(d.fd, s);
  close(d.fd);
  close(s);
  close(hl);
  /* the same veth again replaces it */
  veth(host_if, "10.88.0.1", "10.88.0.2");
  cr_assert_eq(podnet_link_exists(pod_ns, "eth0"), 1);
  /* deleting removes both ends; deleting again is 0 */
  cr_assert_eq(podnet_veth_del(host_if), 0, "%s", bus_last_error());
  cr_assert_eq(if_nametoindex(host_if), 0u);
  cr_assert_eq(podnet_link_exists(pod_ns, "eth0"), 0);
  cr_assert_eq(podnet_veth_del(host_if), 0);
}

/* A "robot" on its own L2 segment: a veth whose end here, "rbpar0", is
 * the parent of the pods' macvlans, and whose other end (eth0 in
 * robot_ns) answers on 192.168.50.1/24. The /30 the veth brings is only
 * podnet_veth_add's: the segment's addresses are 192.168.50.x. */
static void
robot_segment(void) {
  cr_assert_eq(podnet_ns_create(robot_ns), 0, "%s", bus_last_error());
  podnet_veth v = {robot_ns, "rbpar0", "10.99.0.1", "10.99.0.2", 30};
  cr_assert_eq(podnet_veth_add(&v), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_addr_add(robot_ns, "eth0", "192.168.50.1", 24), 0, "%s",
               bus_last_error());
}

/* Dial the robot from ns; the robot's end of it, whose peer address must
 * be want. */
static void
reach_robot(const char *ns, const char *want) {
  int port = 0;
  int lfd = podnet_listen(robot_ns, "192.168.50.1", 0, &port);
  cr_assert_geq(lfd, 0, "%s", bus_last_error());
  dial d = {"192.168.50.1", port, -1};
  cr_assert_eq(podnet_in_ns(ns, dial_fn, &d), 0, "%s: cannot reach the robot",
               ns);
  struct sockaddr_in peer;
  socklen_t sl = sizeof peer;
  int s = accept_one(lfd);
  cr_assert_geq(s, 0);
  cr_assert_eq(getpeername(s, (struct sockaddr *)&peer, &sl), 0);
  char got[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &peer.sin_addr, got, sizeof got);
  cr_expect_str_eq(got, want, "the robot sees the pod's subnet address");
  round_trip(d.fd, s);
  close(d.fd);
  close(s);
  close(lfd);
}

Test(podnet, macvlan_inside_a_pod_reaches_the_robots_segment) {
  robot_segment();
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_ns_create(pod2_ns), 0, "%s", bus_last_error());
  podnet_macvlan m = {pod_ns,           "rbpar0", "rb0",
                      "192.168.50.100", 24,       "192.168.50.0/24"};
  cr_assert_eq(podnet_macvlan_add(&m), 0, "%s", bus_last_error());
  /* made inside: never seen here */
  cr_assert_eq(podnet_link_exists(pod_ns, "rb0"), 1);
  cr_assert_eq(if_nametoindex("rb0"), 0u, "rb0 belongs to the pod");
  const char *rt = net_file(pod_ns, "route");
  cr_expect(strstr(rt, "rb0\t0032A8C0\t00000000"), "on-link: %s", rt);
  cr_expect(!strstr(rt, "rb0\t00000000"), "no default route: %s", rt);
  reach_robot(pod_ns, "192.168.50.100");
  /* a second pod's rb0 on the same parent: its own, both reach it */
  podnet_macvlan m2 = m;
  m2.ns = pod2_ns;
  m2.addr = "192.168.50.101";
  cr_assert_eq(podnet_macvlan_add(&m2), 0, "%s", bus_last_error());
  reach_robot(pod2_ns, "192.168.50.101");
  reach_robot(pod_ns, "192.168.50.100");
  /* the same again replaces it */
  cr_assert_eq(podnet_macvlan_add(&m), 0, "%s", bus_last_error());
  reach_robot(pod_ns, "192.168.50.100");
  /* deleting removes it from the pod only; again is 0 */
  cr_assert_eq(podnet_link_del(pod_ns, "rb0"), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_link_exists(pod_ns, "rb0"), 0);
  cr_assert_eq(podnet_link_exists(pod2_ns, "rb0"), 1);
  cr_assert_eq(podnet_link_del(pod_ns, "rb0"), 0);
  cr_assert_eq(podnet_link_exists(NULL, "rbpar0"), 1, "the parent stays");
  /* a namespace that goes takes its macvlan with it */
  cr_assert_eq(podnet_ns_delete(pod2_ns), 0);
  cr_assert_eq(podnet_link_del(pod2_ns, "rb0"), 0, "no namespace: 0");
}

Test(podnet, macvlan_refuses_what_it_cannot_make_and_leaves_nothing) {
  robot_segment();
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  podnet_macvlan m = {pod_ns,           "nosuch0", "rb0",
                      "192.168.50.100", 24,        "192.168.50.0/24"};
  cr_assert_eq(podnet_macvlan_add(&m), BUS_ENOT_FOUND);
  cr_assert(strstr(bus_last_error(), "nosuch0"), "%s", bus_last_error());
  cr_assert_eq(podnet_link_exists(pod_ns, "rb0"), 0);
  m.parent = "rbpar0";
  m.addr = "192.168.50.300";
  cr_assert_eq(podnet_macvlan_add(&m), BUS_EINVAL);
  m.addr = "192.168.50.100";
  m.plen = 33;
  cr_assert_eq(podnet_macvlan_add(&m), BUS_EINVAL);
  m.plen = 24;
  m.cidr = "192.168.50.0/99";
  cr_assert_eq(podnet_macvlan_add(&m), BUS_EINVAL);
  m.cidr = "192.168.50.0/24";
  m.ifname = "an-interface-name-too-long";
  cr_assert_eq(podnet_macvlan_add(&m), BUS_EINVAL);
  cr_assert_eq(podnet_macvlan_add(NULL), BUS_EINVAL);
  cr_assert_eq(podnet_link_exists(pod_ns, "rb0"), 0, "nothing made");
  /* a parent that is a loopback cannot carry one: refused, nothing left */
  m.ifname = "rb0";
  m.parent = "lo";
  cr_assert_lt(podnet_macvlan_add(&m), 0);
  cr_assert_eq(podnet_link_exists(pod_ns, "rb0"), 0);
  /* no namespace */
  m.parent = "rbpar0";
  m.ns = "lkt-nosuch-ns";
  cr_assert_eq(podnet_macvlan_add(&m), BUS_ENOT_FOUND);
}

Test(podnet, route_dev_lo_and_an_address_on_lo_inside) {
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.7", 32), 0, "%s",
               bus_last_error());
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.7", 32), 0, "again: 0");
  cr_assert_eq(podnet_route_add(pod_ns, "10.2.0.0/24", "lo", NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(podnet_route_add(pod_ns, "10.2.0.0/24", "lo", NULL), 0,
               "again: 0");
  const char *rt = net_file(pod_ns, "route");
  cr_expect(strstr(rt, "lo\t0000020A\t00000000"), "%s", rt);
  /* a listener on the virtual address, reached from inside */
  int port = 0;
  int lfd = podnet_listen(pod_ns, "10.2.0.7", 0, &port);
  cr_assert_geq(lfd, 0, "%s", bus_last_error());
  dial d = {"10.2.0.7", port, -1};
  cr_assert_eq(podnet_in_ns(pod_ns, dial_fn, &d), 0, "%s", bus_last_error());
  int s = accept_one(lfd);
  cr_assert_geq(s, 0);
  round_trip(d.fd, s);
  close(d.fd);
  close(s);
  close(lfd);
  /* none of it here */
  rt = net_file(NULL, "route");
  cr_expect(!strstr(rt, "0000020A"), "%s", rt);
  cr_assert_eq(podnet_route_del(pod_ns, "10.2.0.0/24", "lo"), 0, "%s",
               bus_last_error());
  rt = net_file(pod_ns, "route");
  cr_expect(!strstr(rt, "0000020A"), "%s", rt);
  cr_assert_eq(podnet_addr_del(pod_ns, "lo", "10.2.0.7", 32), 0, "%s",
               bus_last_error());
  cr_assert_lt(podnet_listen(pod_ns, "10.2.0.7", 0, NULL), 0,
               "the address is gone");
}

Test(podnet, deletes_are_idempotent_and_adds_need_what_they_name) {
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_addr_del(pod_ns, "lo", "10.2.0.9", 32), 0);
  cr_assert_eq(podnet_route_del(pod_ns, "10.2.9.0/24", "lo"), 0);
  cr_assert_eq(podnet_addr_del(pod_ns, "nosuch0", "10.2.0.9", 32), 0);
  cr_assert_eq(podnet_route_del(pod_ns, "10.2.9.0/24", "nosuch0"), 0);
  cr_assert_eq(podnet_veth_del("lk-nosuch"), 0);
  cr_assert_eq(podnet_addr_add(pod_ns, "nosuch0", "10.2.0.9", 32),
               BUS_ENOT_FOUND);
  cr_assert(strstr(bus_last_error(), "nosuch0"), "%s", bus_last_error());
  cr_assert_eq(podnet_route_add(pod_ns, "10.2.9.0/24", "nosuch0", NULL),
               BUS_ENOT_FOUND);
  cr_assert_eq(podnet_ns_delete(pod_ns), 0);
  /* in a namespace that is gone: deletes are 0, adds are not found */
  cr_assert_eq(podnet_addr_del(pod_ns, "lo", "10.2.0.9", 32), 0);
  cr_assert_eq(podnet_route_del(pod_ns, "10.2.9.0/24", "lo"), 0);
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.9", 32), BUS_ENOT_FOUND);
  cr_assert(strstr(bus_last_error(), pod_ns), "%s", bus_last_error());
  cr_assert_eq(podnet_listen(pod_ns, NULL, 0, NULL), BUS_ENOT_FOUND);
  podnet_veth v = {pod_ns, "lkt-none", "10.88.0.1", "10.88.0.2", 30};
  cr_assert_eq(podnet_veth_add(&v), BUS_ENOT_FOUND);
  cr_assert_eq(podnet_ns_delete(pod_ns), 0);
}

Test(podnet, malformed_input_is_refused_before_anything_changes) {
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.300", 32), BUS_EINVAL);
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.3", 33), BUS_EINVAL);
  cr_assert_eq(podnet_addr_add(pod_ns, "lo", "10.2.0.3/24", 24), BUS_EINVAL);
  cr_assert_eq(podnet_route_add(pod_ns, "10.2.0.0/99", "lo", NULL), BUS_EINVAL);
  cr_assert_eq(podnet_route_add(pod_ns, "nonsense", "lo", NULL), BUS_EINVAL);
  cr_assert_eq(podnet_route_add(pod_ns, "10.2.0.0/24", "lo", "fd00::1"),
               BUS_EINVAL);
  cr_assert_eq(podnet_ns_create("a/b"), BUS_EINVAL);
  cr_assert_eq(podnet_ns_create(".."), BUS_EINVAL);
  cr_assert_eq(podnet_listen(pod_ns, "10.2.0.3", 70000, NULL), BUS_EINVAL);
  char host_if[PODNET_IFNAME_MAX];
  podnet_host_ifname(pod_ns, 0, host_if);
  podnet_veth v = {pod_ns, host_if, "10.88.0.1", "bad", 30};
  cr_assert_eq(podnet_veth_add(&v), BUS_EINVAL);
  cr_assert_eq(if_nametoindex(host_if), 0u, "nothing made");
  podnet_veth w = {pod_ns, "an-interface-name-too-long", "10.88.0.1",
                   "10.88.0.2", 30};
  cr_assert_eq(podnet_veth_add(&w), BUS_EINVAL);
}

Test(podnet, ipv6_addresses_and_routes) {
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  char host_if[PODNET_IFNAME_MAX];
  podnet_host_ifname(pod_ns, 0, host_if);
  podnet_veth v = {pod_ns, host_if, "fd88::1", "fd88::2", 126};
  cr_assert_eq(podnet_veth_add(&v), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_route_add(pod_ns, "fd02::/64", "lo", NULL), 0, "%s",
               bus_last_error());
  const char *rt = net_file(pod_ns, "ipv6_route");
  cr_expect(strstr(rt, "fd020000000000000000000000000000 40"), "%s", rt);
  cr_expect(strstr(rt, "00000000000000000000000000000000 00 "
                       "00000000000000000000000000000000 00 "
                       "fd880000000000000000000000000001"),
            "%s", rt);
  cr_assert_eq(podnet_route_del(pod_ns, "fd02::/64", "lo"), 0);
  cr_assert_eq(podnet_veth_del(host_if), 0);
}

Test(podnet, names_short_and_long_are_unique_and_fit) {
  char a[PODNET_NS_MAX], b[PODNET_NS_MAX], c[PODNET_NS_MAX];
  podnet_ns_name("train-a-0", a);
  cr_assert_str_eq(a, "lark-train-a-0");
  char long1[254], long2[254];
  memset(long1, 'x', 200);
  long1[200] = 0;
  memcpy(long2, long1, 201);
  long2[199] = 'y'; /* differs only past the cut */
  podnet_ns_name(long1, b);
  podnet_ns_name(long2, c);
  cr_assert_eq(strlen(b), PODNET_NS_MAX - 1);
  cr_assert_eq(strlen(c), PODNET_NS_MAX - 1);
  cr_assert_str_neq(b, c);
  cr_assert_eq(strncmp(b, "lark-xxxx", 9), 0);
  /* exactly at the limit: kept whole */
  char edge[64];
  memset(edge, 'e', 58);
  edge[58] = 0;
  podnet_ns_name(edge, a);
  cr_assert_eq(strlen(a), 63);
  cr_assert_eq(strncmp(a + 5, edge, 58), 0);
  char i0[PODNET_IFNAME_MAX], i1[PODNET_IFNAME_MAX], i2[PODNET_IFNAME_MAX];
  podnet_host_ifname("train-a-0", 0, i0);
  podnet_host_ifname("train-a-0", 1, i1);
  podnet_host_ifname("train-a-1", 0, i2);
  cr_assert_eq(strlen(i0), 10);
  cr_assert_eq(strncmp(i0, "lk", 2), 0);
  cr_assert_str_neq(i0, i1);
  cr_assert_str_neq(i0, i2);
  podnet_host_ifname("train-a-0", 0, i1);
  cr_assert_str_eq(i0, i1, "stable");
}

Test(podnet, rundir_from_the_environment) {
  char dir[256], path[512];
  lt_tmpdir(dir, sizeof dir, "netns");
  strcat(dir, "/run/netns"); /* made when needed */
  setenv("LARK_NETNS_DIR", dir, 1);
  cr_assert_str_eq(podnet_rundir(), dir);
  cr_assert_eq(podnet_ns_create(pod_ns), 0, "%s", bus_last_error());
  snprintf(path, sizeof path, "%s/%s", dir, pod_ns);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(podnet_ns_exists(pod_ns), 1);
  cr_assert_eq(podnet_link_exists(pod_ns, "lo"), 1);
  cr_assert_eq(podnet_ns_delete(pod_ns), 0);
  cr_assert_neq(stat(path, &st), 0);
  cr_assert_eq(umount2(dir, MNT_DETACH), 0, "the rundir was made a mount: %s",
               strerror(errno));
  dir[strlen(dir) - strlen("/run/netns")] = 0;
  lt_rmtree(dir);
}
