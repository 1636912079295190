/*
 * relaynet.c - the pod network's two-cluster topology (see relaynet.h).
 *
 * Everything is made in order, and relaynet_cleanup undoes whatever
 * exists, judged by what was recorded (a namespace name, a pid): a start
 * that failed half-way is cleaned up like a whole one. The core
 * namespace is entered before anything else is made, so the veths' core
 * ends, the broker and the hub are never in the caller's original
 * namespace.
 */
#include "relaynet.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

static const rn_pod pod_table[RN_NPODS] = {
    {"a1", "d1", "10.2.0.11", "10.2.0.0/24", 1, "10.88.1.1", "10.88.1.2", "",
     ""},
    {"a2", "d1", "10.2.0.12", "10.2.0.0/24", 1, "10.88.1.5", "10.88.1.6", "",
     ""},
    {"b1", "d1", "10.2.0.21", "10.2.0.0/24", 2, "10.88.2.1", "10.88.2.2", "",
     ""},
    {"b2", "d2", "10.3.0.22", "10.3.0.0/24", 2, "10.88.2.5", "10.88.2.6", "",
     ""},
};

static int fail(relaynet *rn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
fail(relaynet *rn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rn->err, sizeof rn->err, fmt, ap);
  va_end(ap);
  return -1;
}

int
relaynet_sh(relaynet *rn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc =
      lt_vsh(rn->out, sizeof rn->out, rn->errout, sizeof rn->errout, fmt, ap);
  va_end(ap);
  return rc;
}

void
relaynet_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* -------------------------------------------------------------- network */

static int
enter_core(relaynet *rn) {
  snprintf(rn->core_ns, sizeof rn->core_ns, "lkn-%d-core", (int)getpid());
  podnet_ns_delete(rn->core_ns);
  if (podnet_ns_create(rn->core_ns))
    return fail(rn, "core namespace: %s", bus_last_error());
  int fd = podnet_ns_open(rn->core_ns);
  if (fd < 0)
    return fail(rn, "core namespace: %s", bus_last_error());
  int rc = setns(fd, CLONE_NEWNET);
  close(fd);
  return rc ? fail(rn, "setns: %s", strerror(errno)) : 0;
}

static int
make_node(relaynet *rn, int i) {
  char host_if[PODNET_IFNAME_MAX], here[32], there[32];
  snprintf(rn->node_ns[i], sizeof rn->node_ns[i], "lkn-%d-n%d", (int)getpid(),
           i);
  snprintf(host_if, sizeof host_if, "ln%d", i);
  snprintf(here, sizeof here, "10.99.%d.1", i);
  snprintf(there, sizeof there, "10.99.%d.2", i);
  podnet_ns_delete(rn->node_ns[i]);
  if (podnet_ns_create(rn->node_ns[i]))
    return fail(rn, "node n%d: %s", i, bus_last_error());
  podnet_veth v = {.ns = rn->node_ns[i],
                   .host_if = host_if,
                   .host_addr = here,
                   .pod_addr = there,
                   .plen = 30};
  if (podnet_veth_add(&v))
    return fail(rn, "node n%d veth: %s", i, bus_last_error());
  return 0;
}

static int
pod_veth(void *ud) {
  rn_pod *p = ud;
  char host_if[PODNET_IFNAME_MAX];
  snprintf(host_if, sizeof host_if, "lp%s", p->tag);
  podnet_veth v = {.ns = p->ns,
                   .host_if = host_if,
                   .host_addr = p->host_end,
                   .pod_addr = p->real,
                   .plen = 30};
  return podnet_veth_add(&v);
}

/* A pod namespace joined to its node. */
static int
make_pod(relaynet *rn, rn_pod *p) {
  snprintf(p->name, sizeof p->name, "%s-%d", p->tag, (int)getpid());
  podnet_ns_name(p->name, p->ns);
  podnet_ns_delete(p->ns);
  if (podnet_ns_create(p->ns))
    return fail(rn, "pod %s: %s", p->tag, bus_last_error());
  if (podnet_in_ns(rn->node_ns[p->node], pod_veth, p))
    return fail(rn, "pod %s veth: %s", p->tag, bus_last_error());
  return 0;
}

/* --------------------------------------------------------------- routes */

/* Row of pod p as cluster c's relay reads it, as lark-ipam writes it. */
static int
route_row(relaynet *rn, const rn_pod *p, const char *cluster) {
  char subject[BUS_SUBJECT_MAX], id[33], pc[8], node[8];
  msgpack_sbuffer sb;
  msgpack_packer pk;
  snprintf(pc, sizeof pc, "c%d", p->node);
  snprintf(node, sizeof node, "n%d", p->node);
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 9);
  bus_pack_kv_str(&pk, "domain", p->domain);
  bus_pack_kv_str(&pk, "cidr", p->cidr);
  bus_pack_kv_str(&pk, "cluster", cluster);
  bus_pack_kv_str(&pk, "pod", p->name);
  bus_pack_kv_str(&pk, "ip", p->vip);
  bus_pack_kv_str(&pk, "realIP", p->real);
  bus_pack_kv_str(&pk, "node", node);
  bus_pack_kv_str(&pk, "podCluster", pc);
  bus_pack_kv_str(&pk, "via", strcmp(pc, cluster) ? "hub" : "local");
  snprintf(subject, sizeof subject, "lark.route.%s.%s.%s", p->domain, cluster,
           p->name);
  bus_event_new_id(id);
  bus_event ev = {.type = "route.set",
                  .id = id,
                  .ts = 1,
                  .actor = "ipam",
                  .cause = "",
                  .data_mp = sb.data,
                  .data_mp_len = sb.size};
  int rc =
      bus_append(rn->conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL) == 0
          ? 0
          : fail(rn, "route %s: %s", subject, bus_last_error());
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* d1 is in both clusters, d2 only in c2: each cluster sees every pod of
 * the Domains it has. */
static int
publish_routes(relaynet *rn) {
  for (int i = 0; i < RN_NPODS; i++) {
    rn_pod *p = &rn->pods[i];
    if (route_row(rn, p, "c2") ||
        (!strcmp(p->domain, "d1") && route_row(rn, p, "c1")))
      return -1;
  }
  return 0;
}

/* -------------------------------------------------------- certificates */

/* certs<n>/<domain>.key and -cert.pub for cluster c<n>, which it names. */
static int
domain_cert(relaynet *rn, int n, const char *domain, int serial) {
  if (relaynet_sh(rn,
                  "cd %s && mkdir -p certs%d && cd certs%d && "
                  "ssh-keygen -q -t ed25519 -N '' -f %s.key && "
                  "ssh-keygen -q -s ../ca -I 'relay-c%d role=domain "
                  "domain=%s' -n domain:%s -z %d -V -1m:+1h "
                  "-O extension:cluster@larkbus=c%d %s.key.pub && "
                  "mv %s.key-cert.pub %s-cert.pub",
                  rn->dir, n, n, domain, n, domain, domain, serial, n, domain,
                  domain, domain))
    return fail(rn, "certificate c%d %s: %s", n, domain, rn->errout);
  return 0;
}

/* ------------------------------------------------------------ processes */

int
relaynet_start_hub(relaynet *rn, int port) {
  char bin[512], ca[512], key[512], pf[512], listen[64];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(ca, sizeof ca, "%s/ca.pub", rn->dir);
  snprintf(key, sizeof key, "%s/hostkey", rn->dir);
  snprintf(pf, sizeof pf, "%s/hub.port", rn->dir);
  snprintf(listen, sizeof listen, "0.0.0.0:%d", port);
  unlink(pf);
  char *argv[] = {bin,
                  (char *)"hub",
                  (char *)"--listen",
                  listen,
                  (char *)"--ca",
                  ca,
                  (char *)"--host-key",
                  key,
                  (char *)"--url",
                  rn->nats.url,
                  (char *)"--port-file",
                  pf,
                  NULL};
  rn->hub_pid = lt_spawn(argv, rn->hub_log);
  if (rn->hub_pid <= 0) {
    rn->hub_pid = 0;
    return fail(rn, "cannot start %s", bin);
  }
  rn->hub_port = 0;
  for (int i = 0; i < 200 && !rn->hub_port; i++) {
    FILE *f = fopen(pf, "r");
    if (f) {
      if (fscanf(f, "%d", &rn->hub_port) != 1)
        rn->hub_port = 0;
      fclose(f);
    }
    if (!rn->hub_port)
      relaynet_sleep_ms(50);
  }
  return rn->hub_port > 0
             ? 0
             : fail(rn, "the hub did not start (see %s)", rn->hub_log);
}

int
relaynet_stop_hub(relaynet *rn) {
  int st = lt_kill(rn->hub_pid, SIGTERM);
  rn->hub_pid = 0;
  return st;
}

int
relaynet_start_relay(relaynet *rn, int n) {
  char bin[512], hub[64], key[512], certs[512], url[96], cl[8], nd[8], wl[64];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(hub, sizeof hub, "10.99.%d.1:%d", n, rn->hub_port);
  snprintf(key, sizeof key, "%s/hostkey.pub", rn->dir);
  snprintf(certs, sizeof certs, "%s/certs%d", rn->dir, n);
  snprintf(url, sizeof url, "nats://10.99.%d.1:%d", n, rn->nats.port);
  snprintf(cl, sizeof cl, "c%d", n);
  snprintf(nd, sizeof nd, "n%d", n);
  snprintf(wl, sizeof wl, "10.99.%d.2:%d", n, RELAYNET_WEIGHTS_PORT);
  char *argv[] = {(char *)"/usr/sbin/ip",
                  (char *)"netns",
                  (char *)"exec",
                  rn->node_ns[n],
                  bin,
                  (char *)"node",
                  (char *)"--cluster",
                  cl,
                  (char *)"--node",
                  nd,
                  (char *)"--hub",
                  hub,
                  (char *)"--hub-key",
                  key,
                  (char *)"--certs",
                  certs,
                  (char *)"--url",
                  url,
                  (char *)"--weights-listen",
                  wl,
                  NULL};
  rn->relay_pid[n] = lt_spawn(argv, rn->relay_log[n]);
  if (rn->relay_pid[n] <= 0) {
    rn->relay_pid[n] = 0;
    return fail(rn, "cannot start the relay of c%d", n);
  }
  return 0;
}

int
relaynet_stop_relay(relaynet *rn, int n) {
  int st = lt_kill(rn->relay_pid[n], SIGTERM);
  rn->relay_pid[n] = 0;
  return st;
}

int
relaynet_log_says(relaynet *rn, const char *file, const char *what,
                  int seconds) {
  for (int i = 0; i < seconds * 10; i++) {
    if (relaynet_sh(rn, "grep -F -q -- '%s' %s", what, file) == 0)
      return 1;
    relaynet_sleep_ms(100);
  }
  return 0;
}

/* ---------------------------------------------------------------- public */

int
relaynet_start(relaynet *rn, const char *tag) {
  memset(rn, 0, sizeof *rn);
  memcpy(rn->pods, pod_table, sizeof pod_table);
  if (geteuid() != 0)
    return fail(rn, "needs root (network namespaces, nftables): run it as "
                    "root, as CI does");
  if (enter_core(rn))
    return -1;
  lt_tmpdir(rn->dir, sizeof rn->dir, tag);
  snprintf(rn->hub_log, sizeof rn->hub_log, "%s/hub.log", rn->dir);
  for (int n = 1; n <= 2; n++) {
    snprintf(rn->relay_log[n], sizeof rn->relay_log[n], "%s/relay%d.log",
             rn->dir, n);
    if (make_node(rn, n))
      return -1;
  }
  for (int i = 0; i < RN_NPODS; i++)
    if (make_pod(rn, &rn->pods[i]))
      return -1;
  const char *extra[] = {"-a", "0.0.0.0", NULL};
  if (lt_natsd_start(&rn->nats, NULL, extra))
    return fail(rn, "nats-server did not start");
  if (lt_connect(&rn->nats, &rn->conn) || lt_streams(rn->conn, 1000))
    return fail(rn, "broker: %s", bus_last_error());
  if (relaynet_sh(rn,
                  "cd %s && ssh-keygen -q -t ed25519 -N '' -f ca && "
                  "ssh-keygen -q -t ed25519 -N '' -f hostkey",
                  rn->dir))
    return fail(rn, "ssh-keygen: %s", rn->errout);
  if (domain_cert(rn, 1, "d1", 101) || domain_cert(rn, 2, "d1", 201) ||
      domain_cert(rn, 2, "d2", 202) || publish_routes(rn) ||
      relaynet_start_hub(rn, 0) || relaynet_start_relay(rn, 1) ||
      relaynet_start_relay(rn, 2))
    return -1;
  for (int n = 1; n <= 2; n++) {
    if (!relaynet_log_says(rn, rn->relay_log[n], "registered cluster", 20))
      return fail(rn, "relay %d did not register with the hub (see %s)", n,
                  rn->relay_log[n]);
    if (!relaynet_log_says(rn, rn->relay_log[n], "capturing", 20))
      return fail(rn, "relay %d does not capture (see %s)", n,
                  rn->relay_log[n]);
  }
  return 0;
}

void
relaynet_cleanup(relaynet *rn) {
  for (int n = 1; n <= 2; n++)
    if (rn->relay_pid[n] > 0)
      lt_kill(rn->relay_pid[n], SIGKILL);
  if (rn->hub_pid > 0)
    lt_kill(rn->hub_pid, SIGKILL);
  rn->relay_pid[1] = rn->relay_pid[2] = rn->hub_pid = 0;
  bus_conn_close(rn->conn);
  rn->conn = NULL;
  if (rn->nats.pid > 0)
    lt_natsd_stop(&rn->nats);
  rn->nats.pid = 0;
  for (int i = 0; i < RN_NPODS; i++) {
    if (rn->pods[i].ns[0])
      podnet_ns_delete(rn->pods[i].ns);
    rn->pods[i].ns[0] = 0;
  }
  for (int n = 1; n <= 2; n++) {
    if (rn->node_ns[n][0])
      podnet_ns_delete(rn->node_ns[n]);
    rn->node_ns[n][0] = 0;
  }
  if (rn->core_ns[0])
    podnet_ns_delete(rn->core_ns);
  rn->core_ns[0] = 0;
  if (rn->dir[0] && getenv("LARK_KEEP_TEST_DIR"))
    fprintf(stderr, "relaynet: kept %s\n", rn->dir);
  else if (rn->dir[0])
    lt_rmtree(rn->dir);
  rn->dir[0] = 0;
}
