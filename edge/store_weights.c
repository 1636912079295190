/*
 * store_weights.c - the index of the node's weights cache (store.h): table
 * "weights", key [job]\0[be64 version] -> edge_wver. A version is put or
 * deleted in the same transaction as the weights.report that says so, so
 * the engine hears of every file the node holds or dropped exactly once,
 * across restarts. The files themselves are <data>/weights/<sha256>
 * (weights.c).
 */
#include <string.h>

#include "store_int.h"

enum { WKEY_MAX = BUS_NAME_MAX + 1 + 8 };

static MDB_val
wkey(unsigned char *buf, const char *job, uint64_t version) {
  size_t n = strnlen(job, BUS_NAME_MAX);
  memcpy(buf, job, n);
  buf[n] = 0;
  bus_put_be64(buf + n + 1, version);
  MDB_val k = {n + 9, buf};
  return k;
}

int
edge_store_weights_put(edge_store *s, const edge_wver *w, const edge_msg *msg) {
  unsigned char kb[WKEY_MAX];
  MDB_val v = {sizeof *w, (void *)w};
  return edge_store__write(s, &s->weights, 1, wkey(kb, w->job, w->version), &v,
                           msg, msg ? 1 : 0, "put weights");
}

int
edge_store_weights_del(edge_store *s, const char *job, uint64_t version,
                       const edge_msg *msg) {
  unsigned char kb[WKEY_MAX];
  return edge_store__write(s, &s->weights, 1, wkey(kb, job, version), NULL, msg,
                           msg ? 1 : 0, "drop weights");
}

static int
wver_of(const MDB_val *v, edge_wver *w) {
  if (v->mv_size != sizeof *w)
    return 0;
  memcpy(w, v->mv_data, sizeof *w);
  w->job[sizeof w->job - 1] = 0;
  w->sha256[sizeof w->sha256 - 1] = 0;
  return 1;
}

int
edge_store_weights_get(edge_store *s, const char *job, uint64_t version,
                       edge_wver *w) {
  unsigned char kb[WKEY_MAX];
  MDB_txn *t;
  MDB_val k = wkey(kb, job, version), v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return edge_store__fail(rc, "read");
  rc = mdb_get(t, s->weights, &k, &v);
  if (rc == 0 && !wver_of(&v, w))
    rc = MDB_NOTFOUND;
  mdb_txn_abort(t);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  return rc ? edge_store__fail(rc, "get weights") : 0;
}

typedef struct each_walk {
  edge_wver_cb cb;
  void *ud;
} each_walk;

static int
each_row(const MDB_val *k, const MDB_val *v, void *ud) {
  each_walk *e = ud;
  edge_wver w;
  (void)k;
  if (wver_of(v, &w))
    e->cb(&w, e->ud);
  return 0;
}

int
edge_store_weights_each(edge_store *s, edge_wver_cb cb, void *ud) {
  each_walk e = {cb, ud};
  return edge_store__walk(s, s->weights, "weights", each_row, &e);
}
