/*
 * sites_up.c - `larkctl up --sites N`: N edge sites on this machine, each
 * its own leaf nats-server, supervised, and the nodes spread over them
 * round-robin (node i behind site-((i - 1) mod N + 1)). For a demo and
 * for tests of what a real site does: the same `larkctl site add` makes
 * each site (its certificate from the signer, so after the services),
 * and the nodes start once their site's server listens.
 *
 * Invariants:
 * - The hub has a leaf listener whenever sites exist, on every server of a
 *   cluster (their ports kept in <data>/broker/leaf.port, leaf-2.port,
 *   ... across runs), and a site dials all of them; with TLS as soon as its
 *   certificate exists. At the first run the hub starts before the signer
 *   that issues it, so it is restarted once with TLS before any site
 *   dials: nats-server 2.15 takes TLS added to a leaf listener by a
 *   reload, yet then fails every leaf handshake.
 * - A site keeps its port once chosen, so a node restarted by the
 *   supervisor finds its server where it was.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy-int.h"

/* "site-<s>" into out. */
static void
site_name(int s, char *out, size_t cap) {
  snprintf(out, cap, "site-%d", s);
}

/* `larkctl site add site-<s> --hub HUB --nodes ...`: its nodes
 * round-robin, the hub's leaf listeners on this machine (one per server),
 * a port for the site's server chosen the first time. */
static int
add_site(lark_up *u, int s, const char *hub) {
  char name[32], nodes[2048] = "", port[16], path[PATH_MAX];
  size_t len = 0;
  site_name(s, name, sizeof name);
  for (int i = s; i <= u->nodes && len < sizeof nodes - 32; i += u->sites)
    len += (size_t)snprintf(nodes + len, sizeof nodes - len, "%snode-%d",
                            len ? "," : "", i);
  lark_site_path(u->data, name, "site", path, sizeof path);
  int fresh = access(path, F_OK) != 0, p = fresh ? lark_free_port() : 0;
  snprintf(port, sizeof port, "%d", p);
  const char *args[12] = {"site", "add", name, "--hub", hub};
  size_t a = 5;
  if (len) {
    args[a++] = "--nodes";
    args[a++] = nodes;
  }
  if (fresh) {
    args[a++] = "--port";
    args[a++] = port;
  }
  args[a] = NULL;
  if (lark_up_larkctl(u, args, "sites.log") < 0)
    return dpl_fail(BUS_EINVAL, "cannot make site %s: see %s/logs/sites.log",
                    name, u->data);
  return 0;
}

/* Start site s's leaf server, supervised, and wait for it to listen. */
static int
start_leaf(lark_up *u, int s) {
  char name[32], proc[48], conf[PATH_MAX], server[PATH_MAX];
  char ports[PATH_MAX + 64];
  site_name(s, name, sizeof name);
  snprintf(proc, sizeof proc, "leaf-%s", name);
  lark_site_path(u->data, name, "leaf.conf", conf, sizeof conf);
  if (dpl_find_server(server, sizeof server) < 0)
    return dpl_fail(BUS_EINVAL, "nats-server not found on PATH");
  lark_proc *k = lark_sup_add(&u->sup, proc, proc);
  if (!k)
    return dpl_fail(BUS_EINVAL, "too many processes for %s", proc);
  k->broker = 1;
  lark_proc_arg(k, server);
  lark_proc_arg(k, "-c");
  lark_proc_arg(k, conf);
  if (lark_proc_start(k) < 0)
    return dpl_fail(BUS_EINVAL, "cannot start %s: %s", proc, strerror(errno));
  snprintf(ports, sizeof ports, "%s/sites/%s/run/nats-server_%d.ports", u->data,
           name, (int)k->pid);
  if (lark_wait_file(ports, k, 10000) < 0)
    return dpl_fail(BUS_EINVAL, "%s did not start: see %s", proc, k->log);
  return 0;
}

/* Hub server k (0-based) restarted on its config rendered again (same
 * ports; the services reconnect by themselves). */
static int
restart_server(lark_up *u, int idx) {
  char name[32], ports[PATH_MAX + 64];
  snprintf(name, sizeof name, "nats-server-%d", idx + 1);
  lark_proc *k = NULL;
  for (size_t i = 0; i < u->sup.n && !k; i++)
    if (u->sup.procs[i].broker && !strcmp(u->sup.procs[i].name, name))
      k = &u->sup.procs[i];
  int rc = dpl_up_render_hub(u, idx);
  if (rc < 0 || !k || k->pid <= 0)
    return rc < 0 ? rc : dpl_fail(BUS_EINVAL, "no hub server %s", name);
  kill(k->pid, SIGTERM);
  waitpid(k->pid, NULL, 0);
  k->pid = 0;
  if (lark_proc_start(k) < 0)
    return dpl_fail(BUS_EINVAL, "cannot restart %s: %s", name, strerror(errno));
  snprintf(ports, sizeof ports, "%s/run/nats-server_%d.ports", u->data,
           (int)k->pid);
  if (lark_wait_file(ports, k, 30000) < 0)
    return dpl_fail(BUS_EINVAL, "%s did not come back: see %s", name, k->log);
  return 0;
}

/* The hub's servers restarted one at a time on their configs with the
 * leaf listener's TLS: nats-server 2.15 takes TLS added to a leaf
 * listener by a reload, yet then fails every leaf handshake. A cluster
 * keeps its quorum meanwhile: a server is back (listening) before the
 * next goes. */
static int
restart_hub(lark_up *u) {
  int n = u->nservers > 1 ? u->nservers : 1, rc = 0;
  for (int i = 0; rc == 0 && i < n; i++) {
    rc = restart_server(u, i);
    if (rc == 0 && i + 1 < n)
      bus_sleep_ms(2000); /* its routes and JetStream rejoin */
  }
  if (rc == 0) {
    printf("larkctl up: the hub restarted once, its leaf listener%s with "
           "TLS\n",
           n > 1 ? "s" : "");
    fflush(stdout);
  }
  return rc;
}

int
dpl_up_sites_start(lark_up *u) {
  char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX], hub[1024];
  const char *host = strcmp(u->listen, "0.0.0.0") ? u->listen : "127.0.0.1";
  int had_tls = lark_hub_leaf_tls(u->data, cert, key, ca), rc = 0;
  if (lark_hub_leaf_urls(u->data, host, hub, sizeof hub) <= 0)
    return dpl_fail(BUS_EINVAL, "the hub has no leaf listener for sites");
  for (int s = 1; rc == 0 && s <= u->sites; s++)
    rc = add_site(u, s, hub);
  if (rc == 0 && !had_tls) /* its certificate exists now */
    rc = restart_hub(u);
  for (int s = 1; rc == 0 && s <= u->sites; s++)
    rc = start_leaf(u, s);
  if (rc == 0) {
    printf("larkctl up: %d edge site%s (leaf servers) dialling %s\n", u->sites,
           u->sites == 1 ? "" : "s", hub);
    fflush(stdout);
  }
  return rc;
}

void
dpl_up_edge_url(lark_up *u, lark_proc *k, int i) {
  char name[32], url[256];
  if (!k || u->sites <= 0 || k->argc < 3 || strcmp(k->args[1], "--url"))
    return;
  site_name((i - 1) % u->sites + 1, name, sizeof name);
  if (lark_site_client_url(u->data, name, url, sizeof url) == 0)
    snprintf(k->args[2], sizeof k->args[2], "%s", url);
}
