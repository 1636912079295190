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
sched_apply_node_registered(bus_txn *t, const bus_event *ev, const void *data,
                            void *ud) {
  const char *name = sched_subject_id(ev);
  const bus_node_res *res = data;
  (void)ud;
  sched_node sn;
  bus_field_err err;
  int n = 0;
  int rc = sched_node_read(res, &sn, &err, 1, &n);
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
  if (!rc)
    rc = sched_put_object(t, "nodespecs", name, &ev->data);
  return rc ? rc : sched_noderec_put(t, &r);
}

typedef struct lost {
  bus_txn *t;
  const char *node;
  uint64_t seq;
} lost;

/* A pod on a lost node failed (and retries elsewhere when it may). */
static int
lose_pod(void *rec, void *ud) {
  lost *l = ud;
  pod_rec *p = rec;
  if (!p->bound || p->released || strcmp(p->node, l->node) ||
      strcmp(p->desired, "Running"))
    return 0;
  return sched_fail_pod(l->t, p, "NodeLost: the node stopped responding",
                        l->seq);
}

int
sched_apply_node_state(bus_txn *t, const bus_event *ev, const void *data,
                       void *ud) {
  const char *name = sched_subject_id(ev);
  (void)data, (void)ud;
  node_rec r;
  int rc = sched_noderec_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL; /* a state change for a node never registered */
  if (rc)
    return rc;
  if (ev->t == BUS_T_NODE_READY)
    r.ready = 1;
  else if (ev->t == BUS_T_NODE_NOTREADY)
    r.ready = 0;
  else if (ev->t == BUS_T_NODE_CORDONED)
    r.cordoned = 1;
  else if (ev->t == BUS_T_NODE_UNCORDONED)
    r.cordoned = 0;
  if ((rc = sched_noderec_put(t, &r)))
    return rc;
  if (ev->t != BUS_T_NODE_NOTREADY)
    return 0;
  lost l = {t, name, ev->seq};
  return sched_each_rec(t, "pods", NULL, sizeof(pod_rec), 1, lose_pod, &l);
}
