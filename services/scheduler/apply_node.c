/*
 * apply_node.c - the scheduler's view follows its Nodes: node.registered
 * keeps the node's spec and record, node.ready / notready / cordoned /
 * uncordoned its state (a node gone notready fails its running pods), and
 * the capacity a bound pod books on its node and gives back once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "scheduler.h"

/* ----------------------------------------------------------- capacity */

int
sched_node_book(bus_txn *t, const pod_rec *p, int sign) {
  node_rec n;
  int rc = sched_noderec_get(t, p->node, &n);
  if (rc == BUS_ENOT_FOUND)
    return 0; /* the node is gone: nothing to give back */
  if (rc)
    return rc;
  if (sign > 0) {
    n.cpu_used_m += p->cpu_m;
    n.memory_used_mib += p->memory_mib;
    n.gpu_taken |= p->gpus;
    n.pods++;
  } else {
    n.cpu_used_m -= p->cpu_m < n.cpu_used_m ? p->cpu_m : n.cpu_used_m;
    n.memory_used_mib -=
        p->memory_mib < n.memory_used_mib ? p->memory_mib : n.memory_used_mib;
    n.gpu_taken &= ~p->gpus;
    n.pods -= n.pods ? 1 : 0;
  }
  for (uint32_t i = 0; i < p->ndev; i++) {
    uint32_t k = 0;
    while (k < n.ndev && strcmp(n.dev_name[k], p->dev_name[i]))
      k++;
    if (k == n.ndev) {
      if (sign < 0 || n.ndev == SCHED_POD_DEVICES * 2)
        continue;
      sched_copy(n.dev_name[k], SCHED_NAME_SZ, p->dev_name[i],
                 strlen(p->dev_name[i]));
      n.ndev++;
    }
    if (sign > 0)
      n.dev_used[k] += p->dev_count[i];
    else
      n.dev_used[k] -=
          p->dev_count[i] < n.dev_used[k] ? p->dev_count[i] : n.dev_used[k];
  }
  return sched_noderec_put(t, &n);
}

/* Give a bound pod's capacity back, once. */
int
sched_pod_release(bus_txn *t, pod_rec *p) {
  if (!p->bound || p->released)
    return 0;
  p->released = 1;
  return sched_node_book(t, p, -1);
}

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
