/*
 * services.c - the platform's services and edge agents under `larkctl up`:
 * every service binary found next to larkctl runs as
 *   lark-<name> --url URL --creds <data>/creds/lark-<name>.nk
 *               --data <data>/views/lark-<name>
 * and each local node as `lark-edge ... --node node-<i>` with the node's own
 * credentials (and, with a device file, `--device-file FILE
 * --device-share i/N`: its share of the robots and cameras), logs in
 * <data>/logs/<name>.log. The nodes start after the services, once each
 * has its certificate from the signer (nodecerts.c): `--tls-dir
 * <data>/tls/node-<i> --weights-listen 127.0.0.1:0`, what Jobs' weights go
 * between nodes over; without a signer they start without (and a line
 * says so). Ready means answering:
 * every service started here answers its status request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deploy-int.h"

const char *const lark_up_services[] = {"lark-catalog", "lark-scheduler",
                                        "lark-dag",     "lark-ipam",
                                        "lark-signer",  "lark-logs",
                                        "lark-reports", "lark-devices",
                                        "lark-engine",  NULL};

lark_proc *
lark_up_add_service(lark_up *u, const char *name, const char *log,
                    const char *bin, const char *node) {
  char path[PATH_MAX + 64];
  lark_proc *k = lark_sup_add(&u->sup, name, log);
  if (!k)
    return NULL;
  snprintf(path, sizeof path, "%s/%s", u->bin_dir, bin);
  lark_proc_arg(k, path);
  lark_proc_arg(k, "--url");
  lark_proc_arg(k, u->url);
  lark_proc_arg(k, "--creds");
  lark_creds_path(u->data, name, path, sizeof path);
  lark_proc_arg(k, path);
  lark_proc_arg(k, "--data");
  snprintf(path, sizeof path, "%s/views/%s", u->data, name);
  lark_proc_arg(k, path);
  if (node) {
    lark_proc_arg(k, "--node");
    lark_proc_arg(k, node);
  }
  return k;
}

/* With --relay, node i is cluster c<i>, labelled so, with its pod range. */
static void
edge_pod_network(lark_up *u, lark_proc *k, int i) {
  char v[64];
  if (!k || !u->relay)
    return;
  snprintf(v, sizeof v, "c%d", i);
  lark_proc_arg(k, "--cluster");
  lark_proc_arg(k, v);
  snprintf(v, sizeof v, "rlark.io/cluster=c%d", i);
  lark_proc_arg(k, "--labels");
  lark_proc_arg(k, v);
  snprintf(v, sizeof v, "%u.%u.%d.0/24", u->pod_a, u->pod_b, i);
  lark_proc_arg(k, "--pod-cidr");
  lark_proc_arg(k, v);
}

/* With a device file, node i of N takes device j when j mod N == i-1. */
static void
edge_devices(lark_up *u, lark_proc *k, int i) {
  char v[32];
  if (!k || !u->device_file)
    return;
  lark_proc_arg(k, "--device-file");
  lark_proc_arg(k, u->device_file);
  snprintf(v, sizeof v, "%d/%d", i, u->nodes);
  lark_proc_arg(k, "--device-share");
  lark_proc_arg(k, v);
}

/* A port free now on 127.0.0.1 (0 when none): for node i's relay, which
 * starts after the nodes. */
static int
free_port(void) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;
  if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
      !getsockname(fd, (struct sockaddr *)&a, &n))
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

/* The node's certificate directory and its weights server, when the
 * node has a certificate; with the pod network, its cluster's relay for
 * weights from other clusters. */
static void
edge_tls(lark_up *u, lark_proc *k, int i, int certs) {
  char dir[PATH_MAX], relay[32];
  if (!k || !certs)
    return;
  lark_up_tls_dir(u, i, dir, sizeof dir);
  lark_proc_arg(k, "--tls-dir");
  lark_proc_arg(k, dir);
  lark_proc_arg(k, "--weights-listen");
  lark_proc_arg(k, "127.0.0.1:0");
  if (!u->relay ||
      i >= (int)(sizeof u->wrelay_port / sizeof u->wrelay_port[0]) ||
      !(u->wrelay_port[i] = free_port()))
    return;
  snprintf(relay, sizeof relay, "127.0.0.1:%d", u->wrelay_port[i]);
  lark_proc_arg(k, "--weights-relay");
  lark_proc_arg(k, relay);
}

/* Start sup.procs[from..] and list their names in out from *len. */
static int
start_from(lark_up *u, size_t from, size_t first, char *out, size_t cap,
           size_t *len) {
  for (size_t i = from; i < u->sup.n; i++) {
    if (lark_proc_start(&u->sup.procs[i]) < 0)
      return dpl_fail(BUS_EINVAL, "cannot start %s: %s", u->sup.procs[i].name,
                      strerror(errno));
    *len += (size_t)snprintf(out + *len, *len < cap ? cap - *len : 0, "%s%s",
                             i > first ? ", " : "", u->sup.procs[i].name);
  }
  return 0;
}

/* The nodes, each with its certificate when the signer gives one. */
static int
start_edges(lark_up *u, size_t first, char *out, size_t cap, size_t *len) {
  char node[32];
  if (u->nodes < 1 || !lark_bin_exists(u->bin_dir, LARK_EDGE_BINARY))
    return 0;
  int certs = lark_up_node_certs(u) == 0;
  if (!certs) {
    printf("larkctl up: nodes without certificates (no weights between "
           "them): %s\n",
           lark_cfg_error());
    fflush(stdout);
  }
  if (u->sites && dpl_up_sites_start(u) < 0) /* the sites' servers first */
    return -1;
  size_t from = u->sup.n;
  for (int i = 1; i <= u->nodes; i++) {
    snprintf(node, sizeof node, "node-%d", i);
    lark_proc *k = lark_up_add_service(u, node, node, LARK_EDGE_BINARY, node);
    dpl_up_edge_url(u, k, i);
    edge_pod_network(u, k, i);
    edge_devices(u, k, i);
    edge_tls(u, k, i, certs);
  }
  return start_from(u, from, first, out, cap, len);
}

/* Start what exists next to larkctl, the services first; list the names
 * in out. */
int
lark_up_services_start(lark_up *u, char *out, size_t cap) {
  size_t first = u->sup.n, len = 0;
  for (size_t i = 0; lark_up_services[i]; i++)
    if (lark_bin_exists(u->bin_dir, lark_up_services[i]))
      lark_up_add_service(u, lark_up_services[i], lark_up_services[i],
                          lark_up_services[i], NULL);
  snprintf(out, cap, "none");
  int rc = start_from(u, first, first, out, cap, &len);
  return rc ? rc : start_edges(u, first, out, cap, &len);
}

/*
 * Ready means answering: every service started here answers its status
 * request (it serves its commands before its status, so an answer means
 * both are served). Waits up to a minute, while the supervisor's restarts
 * go on; says which services stayed silent.
 */
int
lark_up_wait_ready(lark_up *u) {
  char creds[PATH_MAX], silent[512] = "";
  bus_conn_opts co;
  bus_conn *c = NULL;
  bus_conn_opts_init(&co);
  lark_creds_path(u->data, "admin", creds, sizeof creds);
  co.url = u->url;
  co.creds = creds;
  co.name = "larkctl-up";
  int rc = bus_conn_open(&c, &co);
  if (rc < 0)
    return dpl_fail_bus(rc, "cannot connect to %s", u->url);
  int64_t deadline = bus_mono_ms() + 60000;
  do {
    size_t len = 0;
    silent[0] = 0;
    for (size_t i = 0; i < u->sup.n && !lark_sup_stopping(); i++) {
      const lark_proc *k = &u->sup.procs[i];
      bus_status st;
      if (k->broker || strncmp(k->name, "lark-", 5) ||
          bus_status_query(c, k->name + 5, 500, &st) == 0)
        continue;
      len += (size_t)snprintf(silent + len,
                              len < sizeof silent ? sizeof silent - len : 0,
                              "%s%s", len ? ", " : "", k->name);
    }
    if (!silent[0] || lark_sup_stopping())
      break;
    lark_sup_reap(&u->sup);
    lark_sup_restart_due(&u->sup);
    bus_sleep_ms(200);
  } while (bus_mono_ms() < deadline);
  bus_conn_close(c);
  if (silent[0] && !lark_sup_stopping())
    return dpl_fail(BUS_EINVAL,
                    "no status answer after 60 s from: %s (see their "
                    "logs in %s/logs)",
                    silent, u->data);
  return 0;
}
