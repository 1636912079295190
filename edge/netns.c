/*
 * netns.c - the network of a raw+netns pod: its own namespace
 * (podnet_ns_name(pod)), a veth from the node (host end "lk" + 8 hex
 * digits) to eth0 inside, and a /30 of the node's pod CIDR (node end .1,
 * the pod's localIP .2 of the /30), with a default route via the node's
 * end. A pod that holds robots with a subnet (edge/devices.h) also gets,
 * for each such subnet, a macvlan "rb<i>" on the subnet's parent inside
 * its namespace, with an address from the node's range for that subnet
 * and the on-link route to it.
 *
 * The store's "nets" record is the truth: it is claimed before anything
 * is made and freed only after the veth and namespace are gone, so a
 * crash at any point leaves a record that the next agent's sweep (or the
 * pod's end) removes, and a /30 is never handed to a second pod while an
 * interface may still carry it. The "subnets" record (the pod's subnet
 * addresses) is claimed after it and freed before it, once the macvlans
 * are gone, so it never outlives the nets record, and an address on a
 * robot's segment is never held by two pods either.
 */
#include <stdio.h>
#include <string.h>

#include "devices.h"
#include "log.h"
#include "netns.h"
#include "podnet.h"
#include "proc.h"

int
edge_net_wants(const edge_devices *devs, const bus_ev_pod_desired *d,
               edge_subnet_want *out, int max) {
  char name[EDGE_DEV_NAME_SZ + 16];
  int n = 0;
  for (uint32_t i = 0; devs && d->has_boundDevices && i < d->boundDevices.n;
       i++) {
    const edge_device *r = edge_devices_bound(
        devs, bus_str_copy(d->boundDevices.v[i], name, sizeof name));
    if (!r || r->kind == EDGE_DEV_CAMERA || !r->subnet.set)
      continue;
    const edge_dev_subnet *sn = &r->subnet;
    int k = 0;
    while (k < n && (strcmp(out[k].parent, sn->parent) ||
                     strcmp(out[k].cidr, sn->cidr))) /* once per subnet */
      k++;
    if (k < n)
      continue;
    if (n == max)
      return bus_error(BUS_EINVAL,
                       "the pod holds robots on more than %d "
                       "subnets",
                       max);
    out[n++] = (edge_subnet_want){sn->parent, sn->cidr, sn->first, sn->last};
  }
  return n;
}

/* The macvlans of the pod's subnet addresses, inside its namespace. */
static int
subnets_up(const char *pod, const edge_net *n, const edge_subnets *sn) {
  int rc = 0;
  for (int i = 0; !rc && i < sn->n; i++) {
    const edge_subnet_addr *s = &sn->v[i];
    podnet_macvlan m = {n->ns, s->parent, s->ifname, s->addr, s->plen, s->cidr};
    if ((rc = podnet_macvlan_add(&m)))
      rc = bus_error(rc, "robot subnet %s: %s", s->cidr, bus_last_error());
    else
      edge_logf("info", pod, "robot subnet %s: %s %s/%d on %s", s->cidr,
                s->ifname, s->addr, s->plen, s->parent);
  }
  return rc;
}

int
edge_net_setup(edge_agent *a, const char *pod, const edge_subnet_want *want,
               int nwant, edge_net *n) {
  char why[1024];
  edge_subnets sn = {0};
  int rc = edge_store_net_claim(a->store, pod, a->cfg.pod_cidr, n);
  if (rc)
    return rc;
  if (nwant)
    rc = edge_store_subnet_claim(a->store, pod, want, nwant, &sn);
  if (!rc) {
    rc = podnet_ns_create(n->ns);
    if (rc == BUS_EEXISTS && !(rc = podnet_ns_delete(n->ns)))
      rc = podnet_ns_create(n->ns); /* left over: this pod's name */
  }
  if (!rc) {
    podnet_veth v = {n->ns, n->host_if, n->host_ip, n->pod_ip, n->plen};
    if (!(rc = podnet_veth_add(&v)))
      rc = subnets_up(pod, n, &sn);
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

/* The pod's macvlans removed (one that is gone, or a namespace that is,
 * is 0), then its subnet addresses freed. */
static int
subnets_down(edge_agent *a, const char *pod, const char *ns) {
  edge_subnets sn;
  int rc = edge_store_subnet_get(a->store, pod, &sn);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  for (int i = 0; !rc && i < sn.n; i++)
    rc = podnet_link_del(ns, sn.v[i].ifname);
  return rc;
}

int
edge_net_teardown(edge_agent *a, const char *pod) {
  edge_net n;
  int rc = edge_store_net_get(a->store, pod, &n);
  if (rc == BUS_ENOT_FOUND) /* no namespace: no macvlan either */
    return edge_store_subnet_del(a->store, pod);
  if (rc)
    return rc;
  if ((rc = subnets_down(a, pod, n.ns)) || (rc = podnet_veth_del(n.host_if)) ||
      (rc = podnet_ns_delete(n.ns)) ||
      (rc = edge_store_subnet_del(a->store, pod)) ||
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
