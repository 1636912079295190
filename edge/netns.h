/*
 * netns.h - private to edge/: a raw+netns pod's network (netns.c), made
 * with podnet and recorded in the store. Loop.
 */
#ifndef LARK_EDGE_NETNS_H
#define LARK_EDGE_NETNS_H

#include "agent.h"

/* Claim pod's /30 and make its namespace and veth; on failure nothing is
 * left and the /30 is free again. */
int edge_net_setup(edge_agent *a, const char *pod, edge_net *n);
/* Remove pod's veth and namespace and free its /30; 0 when it held none.
 * On failure the /30 stays claimed (so it is never handed out while its
 * interface may be there) and a later sweep retries. */
int edge_net_teardown(edge_agent *a, const char *pod);
/* Remove the networks of pods that no longer run (after adopting). */
void edge_net_sweep(edge_agent *a);

#endif
