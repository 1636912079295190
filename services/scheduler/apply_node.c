/*
 * apply_node.c - the scheduler's view follows its Nodes: node.registered
 * keeps the node's spec and record, node.ready / notready / cordoned /
 * uncordoned its state (a node gone notready fails its running pods).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "scheduler.h"

/* ---------------------------------------------------------------- nodes */

int
sched_apply_node_registered(bus_txn *t, const bus_event *ev, const char *name) {
  sched_node sn;
  bus_field_err err;
  int n = 0;
  int rc = sched_node_from_msgpack(&ev->data, &sn, &err, 1, &n);
  if (rc) {
    sched_node_clear(&sn);
    return BUS_EINVAL;
  }
  node_rec r;
  if ((rc = sched_noderec_get(t, name, &r)) == BUS_ENOT_FOUND) {
    memset(&r, 0, sizeof r);
    r.version = SCHED_REC_VERSION;
    sched_copy(r.name, sizeof r.name, name, strlen(name));
    rc = 0;
  }
  r.ready = 1;
  r.heartbeats = !strncmp(ev->actor, "node:", 5);
  sched_copy(r.cluster, sizeof r.cluster, sn.cluster, strlen(sn.cluster));
  sched_node_clear(&sn);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  sched_repack(&ev->data, &sb);
  if (!rc)
    rc = bus_txn_put(t, "nodespecs", name, strlen(name), sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return rc ? rc : sched_noderec_put(t, &r);
}

typedef struct lost {
  bus_txn *t;
  const char *node;
  uint64_t seq;
} lost;

/* A pod on a lost node failed (and retries elsewhere when it may). */
static int
lose_pod(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  lost *l = ud;
  pod_rec p;
  if (vl != sizeof p)
    return BUS_ECORRUPT;
  memcpy(&p, v, sizeof p);
  if (!p.bound || p.released || strcmp(p.node, l->node) ||
      strcmp(p.desired, "Running"))
    return 0;
  return sched_fail_pod(l->t, &p, "NodeLost: the node stopped responding",
                        l->seq);
}

int
sched_apply_node_state(bus_txn *t, const bus_event *ev, const char *name,
                       const char *verb) {
  node_rec r;
  int rc = sched_noderec_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL; /* a state change for a node never registered */
  if (rc)
    return rc;
  if (!strcmp(verb, "ready"))
    r.ready = 1;
  else if (!strcmp(verb, "notready"))
    r.ready = 0;
  else if (!strcmp(verb, "cordoned"))
    r.cordoned = 1;
  else if (!strcmp(verb, "uncordoned"))
    r.cordoned = 0;
  if ((rc = sched_noderec_put(t, &r)))
    return rc;
  if (strcmp(verb, "notready"))
    return 0;
  lost l = {t, name, ev->seq};
  return bus_txn_scan(t, "pods", NULL, 0, lose_pod, &l);
}
