/*
 * view_nodes.c - the node streams of the nodes a view knows: a service
 * that writes desired states or projections into nodes' streams
 * (lark-scheduler, lark-devices, lark-engine) makes the ones missing when
 * its outbox finds no stream for a subject, after a reconnection and at
 * start, from the table of its view whose keys are node names; and sends
 * again what a stream made anew lacks (bus_view_node_streams_repair, in
 * bus.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

typedef struct names {
  char (*v)[BUS_NAME_MAX + 1];
  size_t n, cap;
  const char **list; /* v's names, for bus_node_streams_* */
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

/* The keys of v's table into ns (names_free it), read in a transaction
 * ended before any network call. */
static int
read_names(bus_view *v, const char *table, names *ns) {
  bus_txn *t;
  memset(ns, 0, sizeof *ns);
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = bus_txn_scan(t, table, NULL, 0, add_name, ns);
  bus_txn_end(t);
  if (!rc && !(ns->list = calloc(ns->n + 1, sizeof *ns->list)))
    rc = bus_error(-ENOMEM, "out of memory listing nodes");
  for (size_t i = 0; !rc && i < ns->n; i++)
    ns->list[i] = ns->v[i];
  return rc;
}

static void
names_free(names *ns) {
  free(ns->list);
  free(ns->v);
}

int
bus_view_node_streams_ensure(bus_conn *c, bus_view *v, const char *table,
                             int *made) {
  names ns;
  *made = 0;
  int rc = read_names(v, table, &ns);
  if (!rc && ns.n)
    rc = bus_node_streams_ensure(c, ns.list, ns.n, made);
  names_free(&ns);
  return rc;
}

/* ------------------------------------------------------------- repair */

/* Streams found made anew: their nodes' remembered creation times are
 * written, and the send queue rewound, in one transaction. */
typedef struct born_list {
  const char **nodes;
  int64_t *born;
  unsigned char *made;
  size_t n;
} born_list;

/* node's stream born at born (made now: made): remembered in t; *anew
 * counts it when it lost what was sent into it. */
static int
note_born(bus_txn *t, const char *node, int64_t born, int made, int *anew) {
  char key[4 + BUS_NAME_MAX];
  unsigned char val[8];
  const void *had;
  size_t kl = (size_t)snprintf(key, sizeof key, "sc:%s", node), hl = 0;
  int rc = bus_txn_note_get(t, key, kl, &had, &hl);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  int known = rc == 0 && hl == 8;
  if (known && (int64_t)bus_get_be64(had) == born && !made)
    return 0;
  *anew += known || made; /* unknown and there: first seen, nothing lost */
  bus_put_be64(val, (uint64_t)born);
  return bus_txn_note_put(t, key, kl, val, sizeof val);
}

static int
remember(bus_view *v, const born_list *bl, const char *queue_note, int *anew) {
  bus_txn *t;
  int rc = bus_view_write(v, &t);
  for (size_t i = 0; !rc && i < bl->n; i++)
    if (bl->born[i])
      rc = note_born(t, bl->nodes[i], bl->born[i], bl->made[i], anew);
  if (!rc && *anew && queue_note) {
    rc = bus_txn_unmark(t, queue_note, strlen(queue_note));
    if (rc == BUS_ENOT_FOUND)
      rc = 0;
  }
  if (rc) {
    bus_txn_end(t);
    return rc;
  }
  return bus_txn_commit(t);
}

int
bus_view_node_streams_repair(bus_conn *c, bus_view *v, const char *table,
                             const char *queue_note, int *made, int *anew) {
  names ns;
  *made = *anew = 0;
  int rc = read_names(v, table, &ns);
  born_list bl = {ns.list, calloc(ns.n + 1, sizeof *bl.born),
                  calloc(ns.n + 1, sizeof *bl.made), ns.n};
  if (!rc && (!bl.born || !bl.made))
    rc = bus_error(-ENOMEM, "out of memory listing nodes");
  /* what was made before a failure is remembered and sent again */
  int erc =
      rc ? rc
         : bus_node_streams_born(c, bl.nodes, bl.n, bl.born, bl.made, made);
  if (!rc)
    rc = remember(v, &bl, queue_note, anew);
  if (!rc && *anew)
    rc = bus_view_tick(v, bus_wall_ns());
  free(bl.born);
  free(bl.made);
  names_free(&ns);
  return erc ? erc : rc;
}
