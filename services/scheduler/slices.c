/*
 * slices.c - each node's own stream, where the scheduler writes the
 * node's desired states (bus_node_stream_*, docs/design.md sections 2 and 6).
 *
 * The scheduler makes a node's stream when it first learns of the node
 * (a registration on the ingress, or an applied Node), before the event
 * that makes the node placeable is appended, so nothing is dispatched to
 * a node without one. At start, after a reconnection, and when the outbox
 * finds one missing, it makes sure again for every node its view holds
 * and sends again what a stream made anew lacks (svc_node_streams_repair:
 * node streams are kept in memory, and a restarted broker has none).
 * Making a stream that exists with its settings is a no-op, so every path
 * may repeat it.
 */
#include "scheduler.h"

int
sched_slice_ensure(bus_conn *c, const char *node) {
  int created = 0;
  int rc = bus_node_stream_ensure(c, node, &created);
  if (rc < 0)
    return rc;
  return created;
}
