/*
 * pods.h - private to edge/: the node's processes brought in line with
 * its desired states (pods.c). Loop.
 */
#ifndef LARK_EDGE_PODS_H
#define LARK_EDGE_PODS_H

#include "agent.h"

/* Bring the processes in line with every desired state. */
void edge_pods_reconcile(edge_agent *a);
/* The same for one pod (edge_agent.pod_ended). */
void edge_pods_reconcile_one(edge_agent *a, const char *pod);

#endif
