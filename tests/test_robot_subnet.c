/*
 * test_robot_subnet.c - robot subnets: a raw+netns pod that holds a robot
 * whose device has a `subnet` gets a macvlan on the subnet's parent inside
 * its namespace, an address from the node's range with the subnet's
 * prefix and the on-link route to it, and reaches the robot; a pod that
 * holds no such robot has no such interface. The address is the pod's
 * across an agent restart (re-adopted, never handed to another pod) and
 * free again once the pod ended. A real agent and broker; the test writes
 * the device file and the pods' desired states (with boundDevices, as the
 * scheduler would) itself. The address allocation is also checked
 * against the store alone. Needs root.
 *
 * The kernel here has macvlan but no dummy links, so the robot's segment
 * is a veth: its end in the node's namespace, "rbpar0", is the subnet's
 * parent, and its other end is eth0 of a "robot" namespace answering on
 * 192.168.50.10/24. The test moves itself (and so the broker and the
 * agent) into a namespace of its own first: nothing reaches the machine's
 * network.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "podnet.h"
#include "proc.h"
#include "root.h"
#include "store.h"
#include "wait.h"

#define ROBOT_IP "192.168.50.10"

static lt_natsd srv;
static lt_pods pods; /* of this run */
static bus_conn *conn;
static bus_consumer *reports;
static char dir[256], self_ns[PODNET_NS_MAX], robot_ns[PODNET_NS_MAX];
static char devfile[512];
static pid_t edge_pid;

/* Two robots on one segment and one without a subnet; the node gives
 * pods on 192.168.50.0/24 two addresses, .100 and .101. */
static const char devices_yaml[] =
    "robots:\n"
    "  - name: arm-1\n"
    "    kind: ros2\n"
    "    launch: [true]\n"
    "    subnet:\n"
    "      parent: rbpar0\n"
    "      cidr: 192.168.50.0/24\n"
    "      range: 192.168.50.100-192.168.50.101\n"
    "      gateway: 192.168.50.254\n"
    "  - name: arm-2\n"
    "    kind: ros\n"
    "    launch: [true]\n"
    "    subnet:\n"
    "      parent: rbpar0\n"
    "      cidr: 192.168.50.0/24\n"
    "      range: 192.168.50.100-192.168.50.101\n"
    "  - name: arm-3\n"
    "    kind: ros2\n"
    "    launch: [true]\n"
    "  - name: arm-4\n"
    "    kind: ros2\n"
    "    launch: [true]\n"
    "    subnet:\n"
    "      parent: rbpar0\n"
    "      cidr: 192.168.50.0/24\n"
    "      range: 192.168.50.100-192.168.50.101\n";

static void
setup(void) {
  lt_need_root("network namespaces, veths, macvlans");
  lt_enter_new_netns(self_ns, "node");
  snprintf(robot_ns, sizeof robot_ns, "lkt-%d-robot", (int)getpid());
  podnet_ns_delete(robot_ns);
  cr_assert_eq(podnet_ns_create(robot_ns), 0, "%s", bus_last_error());
  podnet_veth v = {robot_ns, "rbpar0", "10.99.0.1", "10.99.0.2", 30};
  cr_assert_eq(podnet_veth_add(&v), 0, "%s", bus_last_error());
  cr_assert_eq(podnet_addr_add(robot_ns, "eth0", ROBOT_IP, 24), 0, "%s",
               bus_last_error());
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "subnet", "n1", &reports);
  snprintf(devfile, sizeof devfile, "%s/devices.yaml", dir);
  cr_assert_eq(lt_write_file(devfile, "%s", devices_yaml), 0);
}

static void
teardown(void) {
  lt_node_bed_down(&srv, conn, reports, dir, &edge_pid, 1);
  lt_pods_clean(&pods); /* whatever a failed test left */
  podnet_ns_delete(robot_ns);
  podnet_ns_delete(self_ns);
}

TestSuite(robot_subnet, .init = setup, .fini = teardown, .timeout = 180);

/* ------------------------------------------------------------ helpers */

static pid_t
start_edge(void) {
  const char *extra[] = {"--pod-cidr", "10.88.6.0/24", "--device-file", devfile,
                         NULL};
  return lt_must_start_edge(srv.url, dir, "n1", 0, extra);
}

static const char *
pod_name(const char *tag) {
  return lt_pod_name(&pods, tag);
}

/* Write the pod's desired state as the scheduler would: Running with
 * `sh -c script` under runtime rt, bound to the comma-separated bound
 * names (NULL: none). */
static void
desire(const char *pod, const char *rt, const char *script, const char *bound) {
  const char *const argv[] = {"sh", "-c", script, NULL};
  const char *held[5];
  char list[256];
  int nb = 0;
  snprintf(list, sizeof list, "%s", bound ? bound : "");
  for (char *save, *t = strtok_r(list, ",", &save); t && nb < 4;
       t = strtok_r(NULL, ",", &save))
    held[nb++] = t;
  held[nb] = NULL;
  lt_pod_desire(conn, "n1", pod, 0, "Running", rt, argv, held);
}

static lt_pod_reports reps;

/* The node's pod.reports since the last call, into reps. */
static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  lt_pod_report_take(&reps, ev);
}

static void
drain(int timeout_ms) {
  lt_drain(reports, 64, timeout_ms, take, NULL);
}

/* The first pod.report of pod in phase, waiting up to seconds. */
static const lt_pod_report *
wait_report(const char *pod, const char *phase, int seconds) {
  return lt_pod_report_wait(&reps, drain, pod, phase, seconds);
}

typedef struct if_addr {
  const char *ifname;
  char addr[INET_ADDRSTRLEN];
} if_addr;

static int
if_addr_fn(void *ud) {
  if_addr *q = ud;
  struct ifaddrs *all, *i;
  q->addr[0] = 0;
  if (getifaddrs(&all) < 0)
    return -errno;
  for (i = all; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        !strcmp(i->ifa_name, q->ifname))
      inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
                q->addr, sizeof q->addr);
  freeifaddrs(all);
  return 0;
}

/* The IPv4 address of ifname inside pod's namespace ("" when none). */
static const char *
pod_addr(const char *pod, const char *ifname) {
  static if_addr q;
  char ns[PODNET_NS_MAX];
  podnet_ns_name(pod, ns);
  q.ifname = ifname;
  cr_assert_eq(podnet_in_ns(ns, if_addr_fn, &q), 0, "%s", bus_last_error());
  return q.addr;
}

/* Whether pod's namespace is gone, waiting up to seconds. */
static int
ns_gone(const char *pod, int seconds) {
  char ns[PODNET_NS_MAX];
  podnet_ns_name(pod, ns);
  for (int w = 0; w < seconds * 10; w++, usleep(100 * 1000))
    if (!podnet_ns_exists(ns))
      return 1;
  cr_log_error("%s: namespace %s still there", pod, ns);
  return 0;
}

static char *
slurp(const char *name) {
  static char buf[65536];
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return lt_read_file(path, buf, sizeof buf);
}

/* A script that records what its pod sees, then waits for dir/stop-<tag>. */
static const char *
waiting_script(const char *tag) {
  static char s[1024];
  snprintf(s, sizeof s,
           "ip -o -4 addr show > %s/%s.addr; ip route > %s/%s.route; "
           "while [ ! -e %s/stop-%s ]; do sleep 0.1; done",
           dir, tag, dir, tag, dir, tag);
  return s;
}

static void
stop_pod(const char *tag) {
  char path[512];
  snprintf(path, sizeof path, "%s/stop-%s", dir, tag);
  cr_assert_eq(lt_write_file(path, "%s", "stop"), 0);
}

/* -------------------------------------------------------------- tests */

Test(robot_subnet, a_pod_holding_the_robot_reaches_it_others_get_no_interface) {
  const char *a = pod_name("a"), *b = pod_name("b"), *r = pod_name("raw");
  int port = 0;
  int lfd = podnet_listen(robot_ns, ROBOT_IP, 0, &port);
  cr_assert_geq(lfd, 0, "%s", bus_last_error());
  edge_pid = start_edge();
  char script[1024];
  snprintf(script, sizeof script,
           "ip -o -4 addr show > %s/a.addr; ip route > %s/a.route; "
           "echo hello | nc -q 1 -w 5 %s %d; echo $? > %s/a.nc",
           dir, dir, ROBOT_IP, port, dir);
  desire(a, "raw+netns", script, "robot/arm-1");
  /* the robot sees the pod at its address on the robot's segment */
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  cr_assert_eq(poll(&p, 1, 30000), 1, "the pod never reached the robot");
  struct sockaddr_in peer;
  socklen_t sl = sizeof peer;
  int s = accept4(lfd, (struct sockaddr *)&peer, &sl, SOCK_CLOEXEC);
  cr_assert_geq(s, 0);
  char got[INET_ADDRSTRLEN], line[16] = "";
  inet_ntop(AF_INET, &peer.sin_addr, got, sizeof got);
  cr_expect_str_eq(got, "192.168.50.100");
  p.fd = s;
  cr_assert_eq(poll(&p, 1, 5000), 1);
  cr_expect_eq(read(s, line, sizeof line - 1), 6);
  cr_expect_str_eq(line, "hello\n");
  close(s);
  cr_assert_not_null(wait_report(a, "Succeeded", 30));
  char *t = slurp("a.addr");
  cr_expect(t && strstr(t, "rb0") && strstr(t, "192.168.50.100/24"), "%s",
            t ? t : "(none)");
  t = slurp("a.route");
  cr_expect(t && strstr(t, "192.168.50.0/24 dev rb0"), "%s", t ? t : "");
  cr_expect(t && !strstr(t, "192.168.50.254"), "no route via the gateway: %s",
            t ? t : "");
  cr_expect(t && strstr(t, "default via 10.88.6.1 dev eth0"), "%s", t ? t : "");
  cr_expect(ns_gone(a, 10));
  /* a pod holding a robot without a subnet: no interface, no way there */
  snprintf(script, sizeof script,
           "cat /proc/net/dev > %s/b.dev; nc -z -w 2 %s %d; echo $? > %s/b.nc",
           dir, ROBOT_IP, port, dir);
  desire(b, "raw+netns", script, "robot/arm-3");
  cr_assert_not_null(wait_report(b, "Succeeded", 30));
  t = slurp("b.dev");
  cr_expect(t && strstr(t, "eth0:") && !strstr(t, "rb0"), "%s", t ? t : "");
  t = slurp("b.nc");
  cr_expect(t && strcmp(t, "0\n"), "b reached the robot: %s", t ? t : "");
  p.fd = lfd;
  cr_expect_eq(poll(&p, 1, 0), 0, "the robot was reached by b");
  close(lfd);
  /* a raw pod has no namespace to put a macvlan in: it runs without */
  snprintf(script, sizeof script, "cat /proc/net/dev > %s/raw.dev", dir);
  desire(r, "raw", script, "robot/arm-1");
  cr_assert_not_null(wait_report(r, "Succeeded", 30));
  t = slurp("raw.dev");
  cr_expect(t && !strstr(t, "rb0"), "%s", t ? t : "(none)");
}

Test(robot_subnet, the_address_survives_a_restart_and_is_freed_at_the_end) {
  const char *a = pod_name("a"), *c = pod_name("c"), *d = pod_name("d"),
             *e = pod_name("e");
  edge_pid = start_edge();
  desire(a, "raw+netns", waiting_script("a"), "robot/arm-1");
  cr_assert_not_null(wait_report(a, "Running", 30));
  cr_assert_str_eq(pod_addr(a, "rb0"), "192.168.50.100");
  /* the agent dies and comes back: a is re-adopted with its address, and
   * the next pod on the segment gets the other one */
  lt_kill(edge_pid, SIGKILL);
  edge_pid = start_edge();
  /* the dead agent's last fetch (1 s) would take c and hold it until the
   * broker's ack wait ran out: c comes once that fetch expired */
  lt_sleep_ms(1500);
  desire(c, "raw+netns", waiting_script("c"), "robot/arm-2");
  cr_assert_not_null(wait_report(c, "Running", 30));
  cr_expect_str_eq(pod_addr(c, "rb0"), "192.168.50.101");
  cr_expect_str_eq(pod_addr(a, "rb0"), "192.168.50.100");
  /* the range is used up: a third pod fails and leaves nothing */
  desire(e, "raw+netns", "true", "robot/arm-4");
  const lt_pod_report *f = wait_report(e, "Failed", 30);
  cr_assert_not_null(f);
  cr_expect(strstr(f->reason, "no free address"), "%s", f->reason);
  cr_expect(ns_gone(e, 10));
  /* a ends: its macvlan and address go, and the next pod gets it */
  stop_pod("a");
  cr_assert_not_null(wait_report(a, "Succeeded", 30));
  cr_expect(ns_gone(a, 10));
  desire(d, "raw+netns", waiting_script("d"), "robot/arm-1,robot/arm-3");
  cr_assert_not_null(wait_report(d, "Running", 30));
  cr_expect_str_eq(pod_addr(d, "rb0"), "192.168.50.100");
  char *t = slurp("a.addr");
  cr_expect(t && strstr(t, "192.168.50.100/24"), "%s", t ? t : "(none)");
  stop_pod("c");
  stop_pod("d");
  cr_assert_not_null(wait_report(c, "Succeeded", 30));
  cr_assert_not_null(wait_report(d, "Succeeded", 30));
  cr_expect(ns_gone(c, 10));
  cr_expect(ns_gone(d, 10));
}

/* ------------------------------------------- allocation, store alone */

static edge_subnet_want seg = {"rbpar0", "192.168.50.0/24", "192.168.50.100",
                               "192.168.50.101"};

Test(robot_subnet, store_gives_each_address_once_and_keeps_it_across_reopen) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  edge_store *s = NULL;
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  edge_subnets a, b, again;
  edge_subnet_want two[2] = {
      seg, {"rbpar1", "fd50::/64", "fd50::ffff:fffe", "fd50::1:0:5"}};
  cr_assert_eq(edge_store_subnet_claim(s, "pa", two, 2, &a), 0, "%s",
               bus_last_error());
  cr_assert_eq(a.n, 2);
  cr_assert_str_eq(a.v[0].ifname, "rb0");
  cr_assert_str_eq(a.v[0].parent, "rbpar0");
  cr_assert_str_eq(a.v[0].cidr, "192.168.50.0/24");
  cr_assert_str_eq(a.v[0].addr, "192.168.50.100");
  cr_assert_eq(a.v[0].plen, 24);
  cr_assert_str_eq(a.v[1].ifname, "rb1");
  cr_assert_str_eq(a.v[1].addr, "fd50::ffff:fffe");
  cr_assert_eq(a.v[1].plen, 64);
  cr_assert_eq(edge_store_subnet_claim(s, "pb", two, 2, &b), 0, "%s",
               bus_last_error());
  cr_assert_str_eq(b.v[0].addr, "192.168.50.101");
  cr_assert_str_eq(b.v[1].addr, "fd50::ffff:ffff");
  cr_assert_eq(edge_store_subnet_claim(s, "p6", &two[1], 1, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "fd50::1:0:0", "carried");
  cr_assert_str_eq(again.v[0].ifname, "rb0");
  /* a pod holding them gets the same again */
  cr_assert_eq(edge_store_subnet_claim(s, "pa", two, 2, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.100");
  edge_store_close(s);
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  cr_assert_eq(edge_store_subnet_get(s, "pb", &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.101");
  /* the range is full: refused, nothing claimed */
  cr_assert_eq(edge_store_subnet_claim(s, "pc", &seg, 1, &again), -ENOSPC);
  cr_assert(strstr(bus_last_error(), "no free address"), "%s",
            bus_last_error());
  cr_assert_eq(edge_store_subnet_get(s, "pc", &again), BUS_ENOT_FOUND);
  /* freeing hands it out again, to one pod only */
  cr_assert_eq(edge_store_subnet_del(s, "pa"), 0);
  cr_assert_eq(edge_store_subnet_del(s, "pa"), 0);
  cr_assert_eq(edge_store_subnet_claim(s, "pc", &seg, 1, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.100");
  cr_assert_eq(edge_store_subnet_claim(s, "pd", &seg, 1, &again), -ENOSPC);
  edge_store_close(s);
}

Test(robot_subnet, store_refuses_malformed_subnets_and_ranges) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  edge_store *s = NULL;
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  edge_subnets r;
  const edge_subnet_want bad[] = {
      {"rbpar0", "192.168.50.1/24", "192.168.50.100", "192.168.50.101"},
      {"rbpar0", "192.168.50.0", "192.168.50.100", "192.168.50.101"},
      {"rbpar0", "192.168.50.0/24", "192.168.51.100", "192.168.51.101"},
      {"rbpar0", "192.168.50.0/24", "192.168.50.101", "192.168.50.100"},
      {"rbpar0", "192.168.50.0/24", "fd50::1", "fd50::2"},
      {"rbpar0", "192.168.50.0/24", "nonsense", "192.168.50.101"},
      {"", "192.168.50.0/24", "192.168.50.100", "192.168.50.101"},
      {"a-name-too-long-for-linux", "192.168.50.0/24", "192.168.50.100",
       "192.168.50.101"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(edge_store_subnet_claim(s, "pa", &bad[i], 1, &r), BUS_EINVAL,
                 "case %zu", i);
    cr_expect_eq(edge_store_subnet_get(s, "pa", &r), BUS_ENOT_FOUND);
  }
  edge_subnet_want many[EDGE_SUBNETS_MAX + 1];
  for (int i = 0; i <= EDGE_SUBNETS_MAX; i++)
    many[i] = seg;
  cr_expect_eq(edge_store_subnet_claim(s, "pa", many, EDGE_SUBNETS_MAX + 1, &r),
               BUS_EINVAL);
  edge_store_close(s);
}
