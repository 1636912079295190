/*
 * store_net.c - the networks raw+netns pods hold (store.h): each pod's
 * /30 of the node's pod CIDR and its names, claimed and freed in single
 * transactions, so no /30 is ever held by two pods.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "podnet.h"
#include "store_int.h"

/* -------------------------------------------------------------- nets */

int
edge_cidr_parse(const char *cidr, uint32_t *base, int *plen) {
  bus_cidr c, net;
  char why[256], t[BUS_CIDR_TEXT_MAX];
  if (bus_cidr_parse(cidr, BUS_CIDR_IPV4, &c)) {
    snprintf(why, sizeof why, "%s", bus_last_error());
    return bus_error(BUS_EINVAL, "pod CIDR %s: expected a.b.c.d/len (%s)",
                     cidr ? cidr : "(none)", why);
  }
  if (c.prefix < 8 || c.prefix > 30)
    return bus_error(BUS_EINVAL,
                     "pod CIDR %s: the length must be 8 to 30 (a /30 per pod)",
                     cidr);
  net = c;
  if (bus_cidr_mask(&net)) {
    bus_cidr_format(&net, t, sizeof t);
    return bus_error(BUS_EINVAL,
                     "pod CIDR %s has host bits set (the network is %s)", cidr,
                     t);
  }
  *base = (uint32_t)c.addr[0] << 24 | (uint32_t)c.addr[1] << 16 |
          (uint32_t)c.addr[2] << 8 | c.addr[3];
  *plen = c.prefix;
  return 0;
}

static void
ip_text(uint32_t a, char out[16]) {
  struct in_addr in = {htonl(a)};
  inet_ntop(AF_INET, &in, out, 16);
}

static int
net_of(const MDB_val *v, void *out) {
  edge_net *n = out;
  if (v->mv_size != sizeof *n)
    return 0;
  memcpy(n, v->mv_data, sizeof *n);
  n->ns[sizeof n->ns - 1] = n->host_if[sizeof n->host_if - 1] = 0;
  n->host_ip[sizeof n->host_ip - 1] = n->pod_ip[sizeof n->pod_ip - 1] = 0;
  return 1;
}

typedef struct taken_walk {
  const char *pod, *pod_ip, *host_if;
} taken_walk;

static int
taken_row(const MDB_val *k, const MDB_val *v, void *ud) {
  const taken_walk *w = ud;
  edge_net n;
  if (!net_of(v, &n) ||
      (k->mv_size == strlen(w->pod) && !memcmp(k->mv_data, w->pod, k->mv_size)))
    return 0;
  return (w->pod_ip && !strcmp(n.pod_ip, w->pod_ip)) ||
         (w->host_if && !strcmp(n.host_if, w->host_if));
}

/* Whether another pod's record (than pod) holds this pod address or host
 * interface. */
static int
net_taken(MDB_txn *t, MDB_dbi dbi, const char *pod, const char *pod_ip,
          const char *host_if, int *err) {
  taken_walk w = {pod, pod_ip, host_if};
  int taken = edge_store__walk_in(t, dbi, taken_row, &w, err);
  return taken || *err;
}

int
edge_store_net_claim(edge_store *s, const char *pod, const char *cidr,
                     edge_net *out) {
  uint32_t base;
  int plen, err = 0;
  int rc = edge_cidr_parse(cidr, &base, &plen);
  if (rc)
    return rc;
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  if ((rc = mdb_txn_begin(s->env, NULL, 0, &t)))
    return edge_store__fail(rc, "begin");
  if (mdb_get(t, s->nets, &k, &v) == 0 && net_of(&v, out)) {
    mdb_txn_abort(t); /* it holds one already: the same again */
    return 0;
  }
  edge_net n;
  memset(&n, 0, sizeof n);
  uint32_t blocks = 1u << (30 - plen), i;
  for (i = 0; i < blocks; i++) {
    ip_text(base + 4 * i + 2, n.pod_ip);
    if (!net_taken(t, s->nets, pod, n.pod_ip, NULL, &err) || err)
      break;
  }
  if (err || i == blocks) {
    mdb_txn_abort(t);
    return err ? edge_store__fail(err, "nets")
               : bus_error(-ENOSPC, "pod CIDR %s has no free /30 (%u in use)",
                           cidr, blocks);
  }
  ip_text(base + 4 * i + 1, n.host_ip);
  n.plen = 30;
  podnet_ns_name(pod, n.ns);
  for (unsigned salt = 0;; salt++) {
    podnet_host_ifname(pod, salt, n.host_if);
    if (!net_taken(t, s->nets, pod, NULL, n.host_if, &err) || err)
      break;
  }
  v.mv_size = sizeof n;
  v.mv_data = &n;
  if (err || (err = mdb_put(t, s->nets, &k, &v, 0))) {
    mdb_txn_abort(t);
    return edge_store__fail(err, "claim a network");
  }
  if ((rc = mdb_txn_commit(t)))
    return edge_store__fail(rc, "commit");
  *out = n;
  return 0;
}

int
edge_store_net_get(edge_store *s, const char *pod, edge_net *n) {
  return edge_store__get(s, s->nets, pod, net_of, n, "get net");
}

int
edge_store_net_del(edge_store *s, const char *pod) {
  return edge_store__write(s, &s->nets, 1, key_of(pod), NULL, NULL, 0,
                           "free a network");
}

int
edge_store_net_each(edge_store *s, edge_row_cb cb, void *ud) {
  return edge_store__each(s, s->nets, sizeof(edge_net), net_of, cb, ud);
}
