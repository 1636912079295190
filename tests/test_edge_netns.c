/*
 * test_edge_netns.c - the raw+netns runtime of lark-edge: a real agent
 * and broker, desired states written to the node's stream by the test and the
 * node's reports read from its ingress. A pod runs in its own namespace
 * (eth0 with its localIP, a default route via the node's end), reports
 * its localIP, and its namespace, veth and /30 are gone once it ended;
 * /30s are never shared, a full pod CIDR fails a pod with a reason, a
 * restarted agent re-adopts a pod with the same address. The address
 * allocation itself is checked against the store alone. Needs root.
 *
 * The test moves itself (and so the broker and the agent it starts) into
 * a namespace of its own first: every veth's node end and every 10.88
 * address lives in namespaces the test made.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "edge.h"
#include "files.h"
#include "natsd.h"
#include "podnet.h"
#include "proc.h"
#include "bed.h"
#include "store.h"
#include "root.h"

static lt_natsd srv;
static lt_pods pods; /* of this run */
static bus_conn *conn;
static bus_consumer *reports;
static char dir[256], self_ns[PODNET_NS_MAX];
static pid_t edge_pid;

static void
need_root(void) {
  lt_need_root("network namespaces, veths");
}

static void
setup(void) {
  need_root();
  lt_enter_new_netns(self_ns, "edge");
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "edgenet", "n1", &reports);
}

static void
teardown(void) {
  lt_node_bed_down(&srv, conn, reports, dir, &edge_pid, 1);
  lt_pods_clean(&pods); /* whatever a failed test left */
  podnet_ns_delete(self_ns);
}

TestSuite(edge_netns, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

static pid_t
start_edge(const char *cidr) {
  const char *extra[] = {cidr ? "--pod-cidr" : NULL, cidr, NULL};
  return lt_must_start_edge(srv.url, dir, "n1", 0, extra);
}

static const char *
pod_name(const char *tag) {
  return lt_pod_name(&pods, tag);
}

/* Write the pod's desired state as the scheduler would. */
static void
desire(const char *pod, uint32_t attempt, const char *want, const char *rt,
       const char *script) {
  const char *const argv[] = {"sh", "-c", script, NULL};
  lt_pod_desire(conn, "n1", pod, attempt, want, rt, argv, NULL);
}

static lt_pod_reports reps;
static char runtimes[256]; /* of the last node.registered */

/* An event the node sent: its registration's runtimes, its pod.reports. */
static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  if (!strcmp(ev->type, "node.registered")) {
    const msgpack_object *rt =
        bus_obj_get(bus_obj_get(&ev->data, "spec"), "runtimes");
    runtimes[0] = 0;
    for (uint32_t k = 0;
         rt && rt->type == MSGPACK_OBJECT_ARRAY && k < rt->via.array.size;
         k++) {
      const msgpack_object *s = &rt->via.array.ptr[k];
      size_t n = strlen(runtimes);
      snprintf(runtimes + n, sizeof runtimes - n, "%s%.*s", n ? "," : "",
               (int)s->via.str.size, s->via.str.ptr);
    }
  }
  lt_pod_report_take(&reps, ev);
}

/* Read what the node sent since the last call. */
static void
drain(int timeout_ms) {
  lt_drain(reports, 64, timeout_ms, take, NULL);
}

/* The first report of pod in phase, waiting up to seconds. */
static const lt_pod_report *
wait_report(const char *pod, const char *phase, int seconds) {
  return lt_pod_report_wait(&reps, drain, pod, phase, seconds);
}

/* Every phase reported for pod, joined by spaces. */
static const char *
phases(const char *pod) {
  static char out[1024];
  drain(200);
  return lt_pod_phases(&reps, pod, out, sizeof out);
}

static char *
slurp(const char *path) {
  static char buf[65536];
  return lt_read_file(path, buf, sizeof buf);
}

/* Whether pod's namespace and veth are gone, waiting up to seconds. */
static int
net_gone(const char *pod, int seconds) {
  char ns[PODNET_NS_MAX], host_if[PODNET_IFNAME_MAX];
  podnet_ns_name(pod, ns);
  podnet_host_ifname(pod, 0, host_if);
  for (int w = 0; w < seconds * 10; w++, usleep(100 * 1000))
    if (!podnet_ns_exists(ns) && !if_nametoindex(host_if))
      return 1;
  cr_log_error("%s: namespace %s %s, veth %s %s", pod, ns,
               podnet_ns_exists(ns) ? "still there" : "gone", host_if,
               if_nametoindex(host_if) ? "still there" : "gone");
  return 0;
}

/* -------------------------------------------------------------- tests */

Test(edge_netns, pod_runs_in_its_own_namespace_and_its_network_goes_after) {
  const char *pod = pod_name("a");
  char script[1024], ns[PODNET_NS_MAX], host_if[PODNET_IFNAME_MAX];
  snprintf(script, sizeof script,
           "cat /proc/net/dev > %s/dev; ip -o -4 addr show > %s/addr; "
           "ip route > %s/route; sleep 1",
           dir, dir, dir);
  edge_pid = start_edge("10.88.1.0/24");
  desire(pod, 0, "Running", "raw+netns", script);
  const lt_pod_report *r = wait_report(pod, "Running", 30);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->ip, "10.88.1.2");
  cr_expect_str_eq(runtimes, "raw,raw+netns", "the node offers raw+netns");
  podnet_ns_name(pod, ns);
  podnet_host_ifname(pod, 0, host_if);
  cr_expect_eq(podnet_ns_exists(ns), 1, "no namespace %s while it runs", ns);
  cr_expect_neq(if_nametoindex(host_if), 0u, "no veth %s while it runs",
                host_if);
  r = wait_report(pod, "Succeeded", 30);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->ip, "10.88.1.2");
  char path[512];
  snprintf(path, sizeof path, "%s/dev", dir);
  char *s = slurp(path);
  cr_assert_not_null(s, "the pod never wrote /proc/net/dev");
  cr_expect(strstr(s, "eth0:"), "%s", s);
  cr_expect(!strstr(s, host_if), "the node's end is not in the pod: %s", s);
  snprintf(path, sizeof path, "%s/addr", dir);
  s = slurp(path);
  cr_expect(s && strstr(s, "eth0") && strstr(s, "10.88.1.2/30"), "%s",
            s ? s : "(none)");
  snprintf(path, sizeof path, "%s/route", dir);
  s = slurp(path);
  cr_expect(s && strstr(s, "default via 10.88.1.1 dev eth0"), "%s",
            s ? s : "(none)");
  cr_expect(net_gone(pod, 10));
  cr_expect_str_eq(phases(pod), "Running Succeeded");
}

Test(edge_netns, a_30_is_never_shared_and_a_full_cidr_fails_the_pod) {
  const char *a = pod_name("a"), *b = pod_name("b"), *c = pod_name("c"),
             *d = pod_name("d");
  edge_pid = start_edge("10.88.2.0/29"); /* two /30s */
  desire(a, 0, "Running", "raw+netns", "sleep 60");
  desire(b, 0, "Running", "raw+netns", "sleep 60");
  const lt_pod_report *ra = wait_report(a, "Running", 30);
  const lt_pod_report *rb = wait_report(b, "Running", 30);
  cr_assert(ra && rb);
  cr_expect_str_neq(ra->ip, rb->ip);
  cr_expect(!strcmp(ra->ip, "10.88.2.2") || !strcmp(ra->ip, "10.88.2.6"), "%s",
            ra->ip);
  cr_expect(!strcmp(rb->ip, "10.88.2.2") || !strcmp(rb->ip, "10.88.2.6"), "%s",
            rb->ip);
  char a_ip[64];
  snprintf(a_ip, sizeof a_ip, "%s", ra->ip);
  desire(c, 0, "Running", "raw+netns", "sleep 60");
  const lt_pod_report *rc = wait_report(c, "Failed", 30);
  cr_assert_not_null(rc);
  cr_expect(strstr(rc->reason, "network") && strstr(rc->reason, "no free /30"),
            "%s", rc->reason);
  cr_expect_str_eq(rc->ip, "");
  /* a stop frees a's /30, and the next pod gets it */
  desire(a, 0, "Stopped", "raw+netns", "");
  cr_assert_not_null(wait_report(a, "Stopped", 30));
  cr_expect(net_gone(a, 10));
  desire(d, 0, "Running", "raw+netns", "sleep 60");
  const lt_pod_report *rd = wait_report(d, "Running", 30);
  cr_assert_not_null(rd);
  cr_expect_str_eq(rd->ip, a_ip);
  /* a raw pod beside them needs no address */
  desire(pod_name("raw"), 0, "Running", "raw", "true");
  const lt_pod_report *rr = wait_report(pod_name("raw"), "Succeeded", 30);
  cr_assert_not_null(rr);
  cr_expect_str_eq(rr->ip, "");
  desire(b, 0, "Deleted", "raw+netns", "");
  desire(d, 0, "Deleted", "raw+netns", "");
  cr_expect(net_gone(b, 20));
  cr_expect(net_gone(d, 20));
}

Test(edge_netns, restarted_agent_readopts_the_pod_with_its_address) {
  const char *pod = pod_name("r");
  char script[512];
  snprintf(script, sizeof script, "echo run >> %s/runs; sleep 4", dir);
  edge_pid = start_edge("10.88.3.0/24");
  desire(pod, 0, "Running", "raw+netns", script);
  const lt_pod_report *r = wait_report(pod, "Running", 30);
  cr_assert_not_null(r);
  char ip[64];
  snprintf(ip, sizeof ip, "%s", r->ip);
  lt_kill(edge_pid, SIGKILL);
  char ns[PODNET_NS_MAX];
  podnet_ns_name(pod, ns);
  cr_expect_eq(podnet_ns_exists(ns), 1, "the pod keeps its network");
  edge_pid = start_edge("10.88.3.0/24");
  r = wait_report(pod, "Succeeded", 40);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->ip, ip);
  cr_expect(net_gone(pod, 10));
  cr_expect_str_eq(phases(pod), "Running Succeeded");
  char path[512];
  snprintf(path, sizeof path, "%s/runs", dir);
  char *s = slurp(path);
  cr_expect(s && !strcmp(s, "run\n"), "ran once: %s", s ? s : "(none)");
}

Test(edge_netns, without_a_pod_cidr_the_node_offers_raw_only) {
  const char *pod = pod_name("n");
  edge_pid = start_edge(NULL);
  desire(pod, 0, "Running", "raw+netns", "true");
  const lt_pod_report *r = wait_report(pod, "Failed", 30);
  cr_assert_not_null(r);
  cr_expect(strstr(r->reason, "not offered"), "%s", r->reason);
  cr_expect_str_eq(runtimes, "raw");
  char ns[PODNET_NS_MAX];
  podnet_ns_name(pod, ns);
  cr_expect_eq(podnet_ns_exists(ns), 0);
}

/* lark-edge --node n9 with flag and value, run to its end: its exit
 * code, and what it printed on stderr in err. */
static int
edge_n9(const char *flag, const char *value, char *err, size_t cap) {
  char bin[512], out[4096], data[512];
  lt_bin("lark-edge", bin, sizeof bin);
  snprintf(data, sizeof data, "%s/bad", dir);
  return lt_runl(out, sizeof out, err, cap, bin, "--url", srv.url, "--data",
                 data, "--node", "n9", flag, value, (char *)NULL);
}

Test(edge_netns, a_bad_pod_cidr_stops_the_agent_with_a_reason) {
  char err[4096];
  cr_expect_neq(edge_n9("--pod-cidr", "10.88.1.0/31", err, sizeof err), 0);
  cr_expect(strstr(err, "8 to 30"), "%s", err);
  cr_expect_neq(edge_n9("--pod-cidr", "10.88.1.5/24", err, sizeof err), 0);
  cr_expect(strstr(err, "host bits"), "%s", err);
  cr_expect_neq(edge_n9("--runtimes", "raw,raw+netns", err, sizeof err), 0);
  cr_expect(strstr(err, "needs --pod-cidr"), "%s", err);
}

/* ------------------------------------------- allocation, store alone */

Test(edge_netns, store_allocates_30s_once_and_keeps_them_across_reopen) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  edge_store *s = NULL;
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  edge_net a, b, c, again;
  cr_assert_eq(edge_store_net_claim(s, "pa", "10.88.4.0/28", &a), 0, "%s",
               bus_last_error());
  cr_assert_str_eq(a.host_ip, "10.88.4.1");
  cr_assert_str_eq(a.pod_ip, "10.88.4.2");
  cr_assert_eq(a.plen, 30);
  cr_assert_str_eq(a.ns, "lark-pa");
  cr_assert_eq(strncmp(a.host_if, "lk", 2), 0);
  cr_assert_eq(edge_store_net_claim(s, "pb", "10.88.4.0/28", &b), 0);
  cr_assert_str_eq(b.host_ip, "10.88.4.5");
  cr_assert_str_eq(b.pod_ip, "10.88.4.6");
  cr_assert_str_neq(a.host_if, b.host_if);
  /* a pod holding one gets the same again */
  cr_assert_eq(edge_store_net_claim(s, "pa", "10.88.4.0/28", &again), 0);
  cr_assert_str_eq(again.pod_ip, "10.88.4.2");
  edge_store_close(s);
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  cr_assert_eq(edge_store_net_get(s, "pb", &again), 0);
  cr_assert_str_eq(again.pod_ip, "10.88.4.6");
  cr_assert_str_eq(again.host_if, b.host_if);
  cr_assert_eq(edge_store_net_claim(s, "pc", "10.88.4.0/28", &c), 0);
  cr_assert_str_eq(c.pod_ip, "10.88.4.10");
  cr_assert_eq(edge_store_net_claim(s, "pd", "10.88.4.0/28", &c), 0);
  cr_assert_str_eq(c.pod_ip, "10.88.4.14");
  cr_assert_eq(edge_store_net_claim(s, "pe", "10.88.4.0/28", &c), -ENOSPC);
  cr_assert(strstr(bus_last_error(), "no free /30"), "%s", bus_last_error());
  /* freeing one hands it out again, to one pod only */
  cr_assert_eq(edge_store_net_del(s, "pb"), 0);
  cr_assert_eq(edge_store_net_del(s, "pb"), 0);
  cr_assert_eq(edge_store_net_get(s, "pb", &again), BUS_ENOT_FOUND);
  cr_assert_eq(edge_store_net_claim(s, "pe", "10.88.4.0/28", &c), 0);
  cr_assert_str_eq(c.pod_ip, "10.88.4.6");
  cr_assert_eq(edge_store_net_claim(s, "pf", "10.88.4.0/28", &c), -ENOSPC);
  /* a malformed CIDR is refused */
  cr_assert_eq(edge_store_net_claim(s, "pg", "10.88.4.0", &c), BUS_EINVAL);
  cr_assert_eq(edge_store_net_claim(s, "pg", "10.88.4.1/28", &c), BUS_EINVAL);
  cr_assert_eq(edge_store_net_claim(s, "pg", "10.88.4.0/31", &c), BUS_EINVAL);
  edge_store_close(s);
}
