/*
 * netns.c - the network of a raw+netns pod: its own namespace
 * (podnet_ns_name(pod)), a veth from the node (host end "lk" + 8 hex
 * digits) to eth0 inside, and a /30 of the node's pod CIDR (node end .1,
 * the pod's localIP .2 of the /30), with a default route via the node's
 * end.
 *
 * The store's "nets" record is the truth: it is claimed before anything
 * is made and freed only after the veth and namespace are gone, so a
 * crash at any point leaves a record that the next agent's sweep (or the
 * pod's end) removes, and a /30 is never handed to a second pod while an
 * interface may still carry it.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "netns.h"
#include "podnet.h"
#include "proc.h"

int
edge_net_setup(edge_agent *a, const char *pod, edge_net *n) {
  char why[1024];
  int rc = edge_store_net_claim(a->store, pod, a->cfg.pod_cidr, n);
  if (rc)
    return rc;
  rc = podnet_ns_create(n->ns);
  if (rc == BUS_EEXISTS && !(rc = podnet_ns_delete(n->ns)))
    rc = podnet_ns_create(n->ns); /* left over: this pod's name */
  if (!rc) {
    podnet_veth v = {n->ns, n->host_if, n->host_ip, n->pod_ip, n->plen};
    rc = podnet_veth_add(&v);
  }
  if (rc) {
    snprintf(why, sizeof why, "%s", bus_last_error());
    edge_net_teardown(a, pod);
    return bus_error(rc, "%s", why);
  }
  edge_logf("info", pod, "network: namespace %s, %s %s/%d, pod %s", n->ns,
            n->host_if, n->host_ip, n->plen, n->pod_ip);
  return 0;
}

int
edge_net_teardown(edge_agent *a, const char *pod) {
  edge_net n;
  int rc = edge_store_net_get(a->store, pod, &n);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  if ((rc = podnet_veth_del(n.host_if)) || (rc = podnet_ns_delete(n.ns)) ||
      (rc = edge_store_net_del(a->store, pod)))
    edge_logf("error", pod, "cannot remove its network (kept for later): %s",
              bus_last_error());
  return rc;
}

static void
sweep_one(const char *pod, const void *n, void *ud) {
  edge_agent *a = ud;
  (void)n;
  if (!edge_proc_find_live(a, pod))
    edge_net_teardown(a, pod);
}

void
edge_net_sweep(edge_agent *a) {
  edge_store_net_each(a->store, sweep_one, a);
}
