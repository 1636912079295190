/*
 * routes.c - part of apply: the route rows that follow the pods. A pod is
 * routed while it holds an address, is bound to a node of a known cluster
 * and has not ended (route_update); each change queues its route message
 * ('S' set, 'D' tombstone) for decide to publish.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

/* Queue the route message for <d>.<c>.<pod> ('S' set, 'D' tombstone). */
static int
queue_route(bus_txn *t, const char *d, const char *c, const char *pod,
            char what, uint64_t seq) {
  char tail[3 * IPAM_NAME_SZ + IPAM_DNAME_SZ];
  unsigned char key[8 + sizeof tail];
  int n = snprintf(tail, sizeof tail, "%s.%s.%s", d, c, pod);
  const void *old;
  size_t olen;
  int rc = bus_txn_get(t, "rtq", tail, (size_t)n, &old, &olen);
  if (rc == 0 && olen == 8) {
    memcpy(key, old, 8);
    memcpy(key + 8, tail, (size_t)n);
    if ((rc = bus_txn_del(t, "rtout", key, 8 + (size_t)n)))
      return rc;
  } else if (rc && rc != BUS_ENOT_FOUND) {
    return rc;
  }
  bus_put_be64(key, seq);
  memcpy(key + 8, tail, (size_t)n);
  if ((rc = bus_txn_put(t, "rtq", tail, (size_t)n, key, 8)))
    return rc;
  return bus_txn_put(t, "rtout", key, 8 + (size_t)n, &what, 1);
}

typedef struct fan {
  const char *d;
  const char *pod;     /* one pod to every cluster, or */
  const char *cluster; /* every routed pod to one cluster */
  char what;
  uint64_t seq;
  bus_txn *t;
} fan;

/* clusters <d>/<c>: queue f->pod for cluster c; or routes <d>/<pod>:
 * queue pod for f->cluster. */
static int
fan_out(const char *tail, void *ud) {
  fan *f = ud;
  return queue_route(f->t, f->d, f->pod ? tail : f->cluster,
                     f->pod ? f->pod : tail, f->what, f->seq);
}

/* Add delta to the routed-pod count of <d>/<c>; *now gets the new count. */
static int
count_cluster(bus_txn *t, const char *d, const char *c, int delta,
              uint32_t *now) {
  char key[2 * IPAM_NAME_SZ + 1];
  int n = snprintf(key, sizeof key, "%s/%s", d, c);
  const void *v;
  size_t len;
  uint32_t cnt = 0;
  if (bus_txn_get(t, "clusters", key, (size_t)n, &v, &len) == 0 && len == 4)
    cnt = (uint32_t)((const uint8_t *)v)[0] << 24 |
          (uint32_t)((const uint8_t *)v)[1] << 16 |
          (uint32_t)((const uint8_t *)v)[2] << 8 | ((const uint8_t *)v)[3];
  cnt = delta < 0 ? (cnt ? cnt - 1 : 0) : cnt + 1;
  *now = cnt;
  if (!cnt)
    return bus_txn_del(t, "clusters", key, (size_t)n);
  uint8_t b[4] = {(uint8_t)(cnt >> 24), (uint8_t)(cnt >> 16),
                  (uint8_t)(cnt >> 8), (uint8_t)cnt};
  return bus_txn_put(t, "clusters", key, (size_t)n, b, 4);
}

static int
unroute(bus_txn *t, pod_rec *p, uint64_t seq) {
  char key[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  int n = snprintf(key, sizeof key, "%s/%s", p->domain, p->pod);
  fan f = {p->domain, p->pod, NULL, 'D', seq, t};
  int rc = ipam__scan_domain(t, "clusters", p->domain, fan_out, &f);
  uint32_t left = 0;
  if (!rc)
    rc = bus_txn_del(t, "routes", key, (size_t)n);
  if (!rc)
    rc = count_cluster(t, p->domain, p->rcluster, -1, &left);
  if (!rc && !left) { /* the cluster left the domain: drop its table */
    fan g = {p->domain, NULL, p->rcluster, 'D', seq, t};
    rc = ipam__scan_domain(t, "routes", p->domain, fan_out, &g);
  }
  p->routed = 0;
  p->rcluster[0] = 0;
  return rc;
}

static int
route(bus_txn *t, pod_rec *p, const char *cluster, uint64_t seq) {
  char key[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  int n = snprintf(key, sizeof key, "%s/%s", p->domain, p->pod);
  uint32_t now = 0;
  int rc = count_cluster(t, p->domain, cluster, +1, &now);
  if (!rc && now == 1) { /* a new cluster: it gets every route so far */
    fan g = {p->domain, NULL, cluster, 'S', seq, t};
    rc = ipam__scan_domain(t, "routes", p->domain, fan_out, &g);
  }
  if (!rc)
    rc = bus_txn_put(t, "routes", key, (size_t)n, "", 0);
  p->routed = 1;
  ipam_copy(p->rcluster, sizeof p->rcluster, cluster, strlen(cluster));
  fan f = {p->domain, p->pod, NULL, 'S', seq, t};
  return rc ? rc : ipam__scan_domain(t, "clusters", p->domain, fan_out, &f);
}

/* Bring the pod's routes in line with its state (p is put by the caller). */
int
ipam__route_update(bus_txn *t, pod_rec *p, uint64_t seq) {
  char cluster[IPAM_NAME_SZ] = "";
  const void *v;
  size_t len;
  if (p->node[0] &&
      bus_txn_get(t, "nodes", p->node, strlen(p->node), &v, &len) == 0)
    ipam_copy(cluster, sizeof cluster, v, len);
  int want = p->held && !p->ended && cluster[0];
  int rc = 0;
  if (p->routed && (!want || strcmp(cluster, p->rcluster)))
    rc = unroute(t, p, seq);
  if (rc || !want)
    return rc;
  if (!p->routed)
    return route(t, p, cluster, seq);
  fan f = {p->domain, p->pod, NULL, 'S', seq, t}; /* a change: send again */
  return ipam__scan_domain(t, "clusters", p->domain, fan_out, &f);
}

void
ipam__route_of(const pod_rec *p, const char *c, bus_ev_route_set *e) {
  *e = (bus_ev_route_set){
      .domain = bus_str_of(p->domain),
      .cluster = bus_str_of(c),
      .pod = bus_str_of(p->pod),
      .ip = bus_str_of(p->vip),
      .has_realIP = 1,
      .realIP = bus_str_of(p->local_ip),
      .node = bus_str_of(p->node),
      .podCluster = bus_str_of(p->rcluster),
      .via = bus_str_of(strcmp(p->rcluster, c) ? "hub" : "local")};
}
