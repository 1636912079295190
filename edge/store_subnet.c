/*
 * store_subnet.c - the addresses raw+netns pods hold on their robots'
 * subnets (store.h): one record per pod, every subnet it reaches with the
 * address it got there from the node's range, claimed and freed in
 * single transactions.
 *
 * An address is the node's, not a subnet's: no two pods' records ever
 * hold the same address text (texts are canonical, written from the
 * parsed bytes), so one freed is handed out again only after the pod that
 * held it let it go. A pod that holds a record gets the same record
 * again: a re-adopted pod, or a claim retried after a crash, keeps its
 * addresses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

static int
subnets_of(const MDB_val *v, void *out) {
  edge_subnets *r = out;
  if (v->mv_size != sizeof *r)
    return 0;
  memcpy(r, v->mv_data, sizeof *r);
  if (r->n < 0 || r->n > EDGE_SUBNETS_MAX)
    return 0;
  for (int i = 0; i < r->n; i++) {
    edge_subnet_addr *a = &r->v[i];
    a->ifname[sizeof a->ifname - 1] = a->parent[sizeof a->parent - 1] = 0;
    a->cidr[sizeof a->cidr - 1] = a->addr[sizeof a->addr - 1] = 0;
  }
  return 1;
}

/* ------------------------------------------------------------ ranges */

/* A wanted subnet read and checked: its network, and its range's ends. */
typedef struct range {
  bus_cidr net, first, last;
  int bytes; /* 4 or 16 */
} range;

static int
range_of(const edge_subnet_want *w, range *r) {
  char why[256];
  if (!w->parent || !*w->parent || strlen(w->parent) >= EDGE_SUBNET_IF_SZ)
    return bus_error(BUS_EINVAL, "robot subnet %s: invalid parent interface",
                     w->cidr ? w->cidr : "(none)");
  if (bus_cidr_parse(w->cidr, BUS_CIDR_NETWORK, &r->net) ||
      bus_cidr_parse(w->first, BUS_CIDR_BARE, &r->first) ||
      bus_cidr_parse(w->last, BUS_CIDR_BARE, &r->last)) {
    snprintf(why, sizeof why, "%s", bus_last_error());
    return bus_error(BUS_EINVAL, "robot subnet %s: %s",
                     w->cidr ? w->cidr : "(none)", why);
  }
  r->bytes = r->net.family == 4 ? 4 : 16;
  if (!bus_cidr_contains(&r->net, &r->first) ||
      !bus_cidr_contains(&r->net, &r->last) ||
      memcmp(r->first.addr, r->last.addr, (size_t)r->bytes) > 0)
    return bus_error(BUS_EINVAL,
                     "robot subnet %s: the range %s-%s is not an ascending "
                     "range inside it",
                     w->cidr, w->first, w->last);
  return 0;
}

/* The next address (big-endian bytes); 0 when it passed last. */
static int
next_addr(bus_cidr *a, const range *r) {
  for (int i = r->bytes - 1; i >= 0 && ++a->addr[i] == 0; i--)
    ;
  return memcmp(a->addr, r->last.addr, (size_t)r->bytes) <= 0 &&
         memcmp(a->addr, r->first.addr, (size_t)r->bytes) >= 0;
}

typedef struct taken_walk {
  const char *pod, *addr;
} taken_walk;

static int
taken_row(const MDB_val *k, const MDB_val *v, void *ud) {
  const taken_walk *w = ud;
  edge_subnets r;
  if (!subnets_of(v, &r) ||
      (k->mv_size == strlen(w->pod) && !memcmp(k->mv_data, w->pod, k->mv_size)))
    return 0;
  for (int i = 0; i < r.n; i++)
    if (!strcmp(r.v[i].addr, w->addr))
      return 1;
  return 0;
}

/* The lowest address of w's range no other pod holds, into a. */
static int
pick(MDB_txn *t, MDB_dbi dbi, const char *pod, const edge_subnet_want *w,
     edge_subnet_addr *a) {
  range r;
  int rc = range_of(w, &r), mrc = 0;
  if (rc)
    return rc;
  bus_cidr c = r.first;
  c.prefix = r.bytes * 8;
  for (;;) {
    bus_cidr_format_addr(&c, a->addr, sizeof a->addr);
    taken_walk tw = {pod, a->addr};
    int taken = edge_store__walk_in(t, dbi, taken_row, &tw, &mrc);
    if (mrc)
      return edge_store__fail(mrc, "subnets");
    if (!taken)
      break;
    if (!next_addr(&c, &r))
      return bus_error(-ENOSPC, "robot subnet %s: no free address in %s-%s",
                       w->cidr, w->first, w->last);
  }
  snprintf(a->parent, sizeof a->parent, "%s", w->parent);
  bus_cidr_format(&r.net, a->cidr, sizeof a->cidr);
  a->plen = r.net.prefix;
  return 0;
}

/* ------------------------------------------------------------ claims */

int
edge_store_subnet_claim(edge_store *s, const char *pod,
                        const edge_subnet_want *want, int n,
                        edge_subnets *out) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  edge_subnets r;
  int rc;
  if (n < 0 || n > EDGE_SUBNETS_MAX)
    return bus_error(BUS_EINVAL, "a pod reaches at most %d robot subnets",
                     EDGE_SUBNETS_MAX);
  if ((rc = mdb_txn_begin(s->env, NULL, 0, &t)))
    return edge_store__fail(rc, "begin");
  if (mdb_get(t, s->subnets, &k, &v) == 0 && subnets_of(&v, out)) {
    mdb_txn_abort(t); /* it holds them already: the same again */
    return 0;
  }
  memset(&r, 0, sizeof r);
  for (int i = 0; i < n; i++, r.n++) {
    snprintf(r.v[i].ifname, sizeof r.v[i].ifname, "rb%d", i);
    if ((rc = pick(t, s->subnets, pod, &want[i], &r.v[i]))) {
      mdb_txn_abort(t);
      return rc;
    }
  }
  v.mv_size = sizeof r;
  v.mv_data = &r;
  if ((rc = mdb_put(t, s->subnets, &k, &v, 0))) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "claim subnet addresses");
  }
  if ((rc = mdb_txn_commit(t)))
    return edge_store__fail(rc, "commit");
  *out = r;
  return 0;
}

int
edge_store_subnet_get(edge_store *s, const char *pod, edge_subnets *out) {
  return edge_store__get(s, s->subnets, pod, subnets_of, out, "get subnets");
}

int
edge_store_subnet_del(edge_store *s, const char *pod) {
  return edge_store__write(s, &s->subnets, 1, key_of(pod), NULL, NULL, 0,
                           "free subnet addresses");
}

int
edge_store_subnet_each(edge_store *s, edge_row_cb cb, void *ud) {
  return edge_store__each(s, s->subnets, sizeof(edge_subnets), subnets_of, cb,
                          ud);
}
