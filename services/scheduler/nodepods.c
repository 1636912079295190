/*
 * nodepods.c - the pods booked on each node, in the view's `nodepods`
 * table: key "<node>/<pod>", empty value.
 *
 * A row is written when a pod books its node's capacity and deleted when
 * it gives it back (sched_node_book), so the rows follow the log alone
 * and a replay rebuilds them byte for byte. A node lost (node.notready)
 * or deleted visits its own pods through them, not every pod of the
 * view: in a fleet of thousands of nodes a site cut off makes each of its
 * nodes NotReady at once. A node name holds no '/', so the prefix
 * "<node>/" is exactly that node's rows.
 *
 * The rows are an index, the pods table the truth: a visit reads each
 * pod and passes over (and drops) a row whose pod is gone, released or
 * bound elsewhere, which the bookkeeping never leaves but a visit need
 * not trust.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

#define KEY_SZ (SCHED_NAME_SZ + SCHED_DNAME_SZ)

/* "<node>/<pod>" into key; its length, 0 when it does not fit. */
static size_t
row_key(char *key, const char *node, const char *pod) {
  int n = snprintf(key, KEY_SZ, "%s/%s", node, pod);
  return n > 0 && n < KEY_SZ ? (size_t)n : 0;
}

int
sched_nodepod_mark(bus_txn *t, const pod_rec *p, int booked) {
  char key[KEY_SZ];
  size_t kl = p->node[0] ? row_key(key, p->node, p->name) : 0;
  if (!kl)
    return 0; /* names are bounded: never so long */
  if (booked)
    return bus_txn_put(t, SCHED_NODEPODS, key, kl, "", 0);
  int rc = bus_txn_del(t, SCHED_NODEPODS, key, kl);
  return rc == BUS_ENOT_FOUND ? 0 : rc;
}

/* One row's pod, when it is still booked on node; else its row goes. */
static int
visit_one(bus_txn *t, const char *node, const char *pod, sched_pod_cb cb,
          void *ud) {
  pod_rec p;
  int rc = sched_pod_get(t, pod, &p);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  if (!rc && p.bound && !p.released && !strcmp(p.node, node))
    return cb(t, &p, ud);
  char key[KEY_SZ];
  size_t kl = row_key(key, node, pod);
  rc = kl ? bus_txn_del(t, SCHED_NODEPODS, key, kl) : 0;
  return rc == BUS_ENOT_FOUND ? 0 : rc;
}

int
sched_each_node_pod(bus_txn *t, const char *node, sched_pod_cb cb, void *ud) {
  char prefix[SCHED_NAME_SZ + 1];
  sched_keys pods;
  snprintf(prefix, sizeof prefix, "%s/", node);
  /* collected first: cb deletes rows under what would be the cursor */
  int rc = sched_key_tails(t, SCHED_NODEPODS, prefix, &pods);
  for (size_t i = 0; !rc && i < pods.n; i++)
    rc = visit_one(t, node, pods.v[i], cb, ud);
  free(pods.v);
  return rc;
}
