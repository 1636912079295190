/*
 * apply_node.c - the scheduler's view follows its Nodes: node.registered
 * keeps the node's spec and record, node.ready / notready / cordoned /
 * uncordoned its state (a node gone notready fails its running pods, and
 * is told to stop them, for its return), and
 * node.deleted ends it: its running pods fail (placed again elsewhere by
 * their retry rules), those told to stop are taken as stopped, and its
 * record and spec go, so nothing is placed or sent there again. Its name
 * is left in `gone` for the scheduler to remove the node's stream
 * (gone.c); a node registered again under the name leaves `gone` and
 * starts afresh, a new generation.
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
  /* a deleted node back through its own registration is Ready at its
   * first heartbeat: a registration it sent before its deletion and read
   * after it (its key gone, it beats no more) then takes no pods */
  const void *g;
  size_t gl;
  int back = bus_txn_get(t, SCHED_GONE, name, strlen(name), &g, &gl) == 0;
  r.heartbeats = !strncmp(ev->actor, "node:", 5);
  r.ready = !(back && r.heartbeats);
  sched_copy(r.cluster, sizeof r.cluster, sn.cluster, strlen(sn.cluster));
  sched_node_clear(&sn);
  if (!rc)
    rc = sched_put_object(t, "nodespecs", name, &ev->data);
  if (!rc) /* a new generation of a deleted node keeps its new stream */
    rc = bus_txn_del(t, SCHED_GONE, name, strlen(name));
  return rc ? rc : sched_noderec_put(t, &r);
}

/* A pod on a lost node failed (and retries elsewhere when it may), and
 * the node is told to stop that attempt: a node cut off runs its pods on,
 * and back it must not keep one the scheduler has given up on. (A deleted
 * node is told nothing: its stream is to be removed, gone.c.) */
static int
lose_pod(bus_txn *t, pod_rec *p, void *ud) {
  const uint64_t *seq = ud; /* of the node.notready */
  if (strcmp(p->desired, "Running"))
    return 0;
  return sched_fail_pod(t, p, "NodeLost: the node stopped responding", *seq, 1);
}

static int node_deleted(bus_txn *t, const char *name, uint64_t seq);

int
sched_apply_node_state(bus_txn *t, const bus_event *ev, const void *data,
                       void *ud) {
  const char *name = sched_subject_id(ev);
  (void)data, (void)ud;
  node_rec r;
  int rc = sched_noderec_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL; /* a node never registered, or deleted */
  if (rc)
    return rc;
  if (ev->t == BUS_T_NODE_DELETED) /* admin only: the command checked */
    return node_deleted(t, name, ev->seq);
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
  uint64_t seq = ev->seq;
  return sched_each_node_pod(t, name, lose_pod, &seq);
}

/* ------------------------------------------------------------- deleted */

/* A pod told to stop on a deleted node, which will never say it did:
 * stopped now, its capacity given back. */
static int
stop_pod(bus_txn *t, pod_rec *p, const char *reason) {
  job_rec j;
  int rc = sched_pod_release(t, p);
  if (!rc && !sched_terminal(p->phase)) {
    strcpy(p->phase, "Stopped");
    sched_copy(p->reason, sizeof p->reason, reason, strlen(reason));
    if (!(rc = sched_job_get(t, p->job, &j))) {
      j.ended++;
      rc = sched_job_put(t, &j);
    }
  }
  if (!rc)
    rc = sched_pod_put(t, p);
  return rc ? rc : sched_touch(t, p->job);
}

static int
drop_pod(bus_txn *t, pod_rec *p, void *ud) {
  static const char why[] = "NodeDeleted: the node was decommissioned";
  const uint64_t *seq = ud; /* of the node.deleted */
  if (!strcmp(p->desired, "Running"))
    return sched_fail_pod(t, p, why, *seq, 0);
  return stop_pod(t, p, why);
}

/* The node's pods first (giving capacity back reads its record), then
 * the node itself; its name is left for its stream's removal. */
static int
node_deleted(bus_txn *t, const char *name, uint64_t seq) {
  unsigned char key[8];
  int rc = sched_each_node_pod(t, name, drop_pod, &seq);
  if (!rc)
    rc = bus_txn_del(t, "nodes", name, strlen(name));
  if (!rc)
    rc = bus_txn_del(t, "nodespecs", name, strlen(name));
  sched_seq_key(key, seq, "");
  return rc ? rc : bus_txn_put(t, SCHED_GONE, name, strlen(name), key, 8);
}
