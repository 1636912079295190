/*
 * netns.h - private to edge/: a raw+netns pod's network (netns.c), made
 * with podnet and recorded in the store. Loop.
 */
#ifndef LARK_EDGE_NETNS_H
#define LARK_EDGE_NETNS_H

#include "agent.h"
#include "devices.h"

/* Claim pod's /30 (and, for want[0..nwant), its addresses on those
 * robot subnets), and make its namespace, veth and macvlans; on failure
 * nothing is left and what was claimed is free again. */
int edge_net_setup(edge_agent *a, const char *pod, const edge_subnet_want *want,
                   int nwant, edge_net *n);
/* The subnets of the robots d is bound to (devs: the node's devices;
 * NULL: none) that have one, each subnet once, into out: how many, or
 * BUS_EINVAL when there are more than max. The strings are devs'. */
int edge_net_wants(const edge_devices *devs, const bus_ev_pod_desired *d,
                   edge_subnet_want *out, int max);
/* Remove pod's macvlans, veth and namespace and free its subnet
 * addresses and /30; 0 when it held none.
 * On failure the /30 stays claimed (so it is never handed out while its
 * interface may be there) and a later sweep retries. */
int edge_net_teardown(edge_agent *a, const char *pod);
/* Remove the networks of pods that no longer run (after adopting). */
void edge_net_sweep(edge_agent *a);

#endif
