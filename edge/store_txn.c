/*
 * store_txn.c - what the store's files share (store_int.h), below them
 * all: a row read, a walk of a table, a table copied out of one read
 * transaction, and one write transaction that puts or deletes a key and
 * queues messages in the outbox, all or nothing (an outbox row is
 * [subject, type, id, ts, data], read back by store_queue.c).
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
edge_store__queue_in(edge_store *s, MDB_txn *t, const edge_msg *m) {
  char id[33];
  unsigned char kb[8];
  int64_t now = bus_wall_ns();
  bus_event_new_id(id);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_array(&b.pk, 5);
  bus_pack_str(&b.pk, m->subject);
  bus_pack_str(&b.pk, m->type);
  bus_pack_str(&b.pk, id);
  msgpack_pack_int64(&b.pk, now);
  msgpack_pack_bin_with_body(&b.pk, m->data, m->len);
  pthread_mutex_lock(&s->mu);
  uint64_t key = s->next_key++;
  pthread_mutex_unlock(&s->mu);
  bus_put_be64(kb, key);
  MDB_val k = {8, kb}, v = {b.sb.size, b.sb.data};
  int rc = mdb_put(t, s->outbox, &k, &v, 0);
  bus_packbuf_destroy(&b);
  return rc ? edge_store__fail(rc, "queue") : 0;
}

int
edge_store__walk_in(MDB_txn *t, MDB_dbi dbi, walk_fn fn, void *ud, int *mrc) {
  MDB_cursor *c;
  MDB_val k, v;
  int stop = 0;
  if ((*mrc = mdb_cursor_open(t, dbi, &c)))
    return 0;
  for (int op = MDB_FIRST; !stop && !(*mrc = mdb_cursor_get(c, &k, &v, op));
       op = MDB_NEXT)
    stop = fn(&k, &v, ud);
  if (*mrc == MDB_NOTFOUND)
    *mrc = 0;
  mdb_cursor_close(c);
  return stop;
}

int
edge_store__walk(edge_store *s, MDB_dbi dbi, const char *what, walk_fn fn,
                 void *ud) {
  MDB_txn *t;
  int mrc, rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return edge_store__fail(rc, "read");
  rc = edge_store__walk_in(t, dbi, fn, ud, &mrc);
  mdb_txn_abort(t);
  return mrc && what ? edge_store__fail(mrc, what) : rc;
}

int
edge_store__get(edge_store *s, MDB_dbi dbi, const char *pod, conv_fn conv,
                void *out, const char *what) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return edge_store__fail(rc, "read");
  rc = mdb_get(t, dbi, &k, &v);
  if (rc == 0 && !conv(&v, out))
    rc = MDB_NOTFOUND;
  mdb_txn_abort(t);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  return rc ? edge_store__fail(rc, what) : 0;
}

int
edge_store__write(edge_store *s, const MDB_dbi *tables, size_t n, MDB_val k,
                  const MDB_val *v, const edge_msg *msgs, size_t nmsgs,
                  const char *what) {
  MDB_txn *t;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  for (size_t i = 0; !rc && i < n; i++)
    if (v)
      rc = mdb_put(t, tables[i], &k, (MDB_val *)v, 0);
    else if ((rc = mdb_del(t, tables[i], &k, NULL)) == MDB_NOTFOUND)
      rc = 0;
  if (rc) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, what);
  }
  for (size_t i = 0; i < nmsgs; i++)
    if ((rc = edge_store__queue_in(s, t, &msgs[i]))) {
      mdb_txn_abort(t);
      return rc;
    }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
}

typedef struct copy_walk {
  table_copy *all;
  size_t cap;
  conv_fn conv;
} copy_walk;

static int
copy_row(const MDB_val *k, const MDB_val *v, void *ud) {
  copy_walk *w = ud;
  table_copy *all = w->all;
  if (k->mv_size >= EDGE_POD_SZ)
    return 0;
  if (bus_grow(&all->items, all->n, &w->cap, all->stride, 16))
    return 0;
  unsigned char *it = all->items + all->n * all->stride;
  if (!w->conv(v, it + ITEM_VAL_OFF))
    return 0;
  memcpy(it, k->mv_data, k->mv_size);
  it[k->mv_size] = 0;
  all->n++;
  return 0;
}

int
edge_store__copy_table(edge_store *s, MDB_dbi dbi, size_t vsize, conv_fn conv,
                       table_copy *all) {
  memset(all, 0, sizeof *all);
  all->stride = (ITEM_VAL_OFF + vsize + 15) / 16 * 16;
  copy_walk w = {all, 0, conv};
  return edge_store__walk(s, dbi, "cursor", copy_row, &w);
}

int
edge_store__each(edge_store *s, MDB_dbi dbi, size_t vsize, conv_fn conv,
                 edge_row_cb cb, void *ud) {
  table_copy all;
  int rc = edge_store__copy_table(s, dbi, vsize, conv, &all);
  for (size_t i = 0; !rc && i < all.n; i++) {
    unsigned char *it = all.items + i * all.stride;
    cb((const char *)it, it + ITEM_VAL_OFF, ud);
  }
  free(all.items);
  return rc;
}
