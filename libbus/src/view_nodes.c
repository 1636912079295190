/*
 * view_nodes.c - the node streams of the nodes a view knows: a service
 * that writes desired states or projections into nodes' streams
 * (lark-devices, lark-engine) makes the ones missing when its outbox
 * finds no stream for a subject, from the table of its view whose keys are
 * node names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

typedef struct names {
  char (*v)[BUS_NAME_MAX + 1];
  size_t n, cap;
} names;

static int
add_name(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  names *ns = ud;
  if (kl > BUS_NAME_MAX)
    return 0;
  if (bus_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 16))
    return bus_error(-ENOMEM, "out of memory listing nodes");
  memcpy(ns->v[ns->n], k, kl);
  ns->v[ns->n++][kl] = 0;
  return 0;
}

int
bus_view_node_streams_ensure(bus_conn *c, bus_view *v, const char *table,
                             int *made) {
  names ns = {NULL, 0, 0};
  bus_txn *t;
  *made = 0;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = bus_txn_scan(t, table, NULL, 0, add_name, &ns);
  bus_txn_end(t);
  const char **list = rc ? NULL : calloc(ns.n + 1, sizeof *list);
  if (!rc && !list)
    rc = bus_error(-ENOMEM, "out of memory listing nodes");
  for (size_t i = 0; list && i < ns.n; i++)
    list[i] = ns.v[i];
  if (!rc && ns.n)
    rc = bus_node_streams_ensure(c, list, ns.n, made);
  free(list);
  free(ns.v);
  return rc;
}
