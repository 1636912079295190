/*
 * slices.c - each node's own stream, where the scheduler writes the
 * node's desired states (bus_node_stream_*, docs/design.md sections 2 and 6).
 *
 * The scheduler makes a node's stream when it first learns of the node
 * (a registration on the ingress, or an applied Node), before the event
 * that makes the node placeable is appended, so nothing is dispatched to
 * a node without one. At start it makes sure again for every node its
 * view holds, and when the outbox finds one missing (someone deleted it)
 * it does the same before the outbox tries again. Making a stream that
 * exists with its settings is a no-op, so every path may repeat it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

int
sched_slice_ensure(bus_conn *c, const char *node) {
  int created = 0;
  int rc = bus_node_stream_ensure(c, node, &created);
  if (rc < 0)
    return rc;
  return created;
}

typedef struct names {
  char (*v)[SCHED_NAME_SZ];
  size_t n, cap;
} names;

static int
collect(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  names *ns = ud;
  if (kl == 0 || kl >= SCHED_NAME_SZ)
    return 0;
  if (bus_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 64))
    return bus_error(-ENOMEM, "out of memory listing the nodes");
  sched_copy(ns->v[ns->n++], SCHED_NAME_SZ, k, kl);
  return 0;
}

int
sched_slices_ensure(bus_conn *c, bus_view *v, int *created) {
  names ns = {0};
  bus_txn *t;
  int rc = bus_view_read(v, &t), made = 0;
  if (rc == 0) {
    rc = bus_txn_scan(t, "nodes", NULL, 0, collect, &ns);
    bus_txn_end(t); /* no read transaction open across network calls */
  }
  const char **list = ns.n ? calloc(ns.n, sizeof *list) : NULL;
  if (!rc && ns.n && !list)
    rc = bus_error(BUS_EINVAL, "out of memory");
  for (size_t i = 0; list && i < ns.n; i++)
    list[i] = ns.v[i];
  if (!rc) /* LARK_EVENTS' settings are read once for all of them */
    rc = bus_node_streams_ensure(c, list, ns.n, &made);
  free(list);
  free(ns.v);
  if (created)
    *created = made;
  return rc < 0 ? rc : 0;
}
