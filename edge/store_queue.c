/*
 * store_queue.c - the outbox (store.h): messages to send, under 8-byte
 * big-endian keys that grow from the last key at open, so their order is
 * the order they were made; each one's id and time are fixed when it is
 * queued, so a message sent again is the same message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_int.h"

int
edge_store_enqueue_n(edge_store *s, const edge_msg *msgs, size_t n) {
  MDB_val none = {0, NULL};
  return edge_store__write(s, NULL, 0, none, NULL, msgs, n, "queue");
}

int
edge_store_enqueue(edge_store *s, const edge_msg *msg) {
  return edge_store_enqueue_n(s, msg, 1);
}

static int
decode_queued(const void *buf, size_t len, edge_queued *q) {
  msgpack_zone z;
  msgpack_object o;
  int rc = BUS_EMALFORMED;
  msgpack_zone_init(&z, 1024);
  if (msgpack_unpack(buf, len, NULL, &z, &o) < 0 ||
      o.type != MSGPACK_OBJECT_ARRAY || o.via.array.size != 5)
    goto out;
  const msgpack_object *a = o.via.array.ptr;
  if (a[0].type != MSGPACK_OBJECT_STR || a[1].type != MSGPACK_OBJECT_STR ||
      a[2].type != MSGPACK_OBJECT_STR || a[4].type != MSGPACK_OBJECT_BIN ||
      a[0].via.str.size >= sizeof q->subject ||
      a[1].via.str.size >= sizeof q->type || a[2].via.str.size >= sizeof q->id)
    goto out;
  memcpy(q->subject, a[0].via.str.ptr, a[0].via.str.size);
  q->subject[a[0].via.str.size] = 0;
  memcpy(q->type, a[1].via.str.ptr, a[1].via.str.size);
  q->type[a[1].via.str.size] = 0;
  memcpy(q->id, a[2].via.str.ptr, a[2].via.str.size);
  q->id[a[2].via.str.size] = 0;
  q->ts =
      a[3].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)a[3].via.u64 : 0;
  q->len = a[4].via.bin.size;
  if (!(q->data = malloc(q->len + 1))) {
    rc = -ENOMEM;
    goto out;
  }
  memcpy(q->data, a[4].via.bin.ptr, q->len);
  rc = 0;
out:
  msgpack_zone_destroy(&z);
  return rc;
}

typedef struct peek_walk {
  edge_queued *q;
  size_t max, *n;
  int dec; /* an unreadable one is handed over only first */
} peek_walk;

static int
peek_row(const MDB_val *k, const MDB_val *v, void *ud) {
  peek_walk *w = ud;
  if (k->mv_size != 8)
    return 1;
  edge_queued *e = &w->q[*w->n];
  memset(e, 0, sizeof *e);
  e->key = bus_get_be64(k->mv_data);
  if ((w->dec = decode_queued(v->mv_data, v->mv_size, e)))
    return 1;
  return ++*w->n == w->max;
}

int
edge_store_peek_n(edge_store *s, edge_queued *q, size_t max, size_t *n) {
  *n = 0;
  memset(q, 0, sizeof *q);
  peek_walk w = {q, max, n, 0};
  int rc = max ? edge_store__walk(s, s->outbox, "peek", peek_row, &w) : 0;
  if (*n)
    return 0;
  if (w.dec)
    return w.dec;
  return rc < 0 ? rc : BUS_ENOT_FOUND;
}

int
edge_store_peek(edge_store *s, edge_queued *q) {
  size_t n;
  return edge_store_peek_n(s, q, 1, &n);
}

void
edge_queued_free(edge_queued *q) {
  free(q->data);
  q->data = NULL;
}

int
edge_store_drop(edge_store *s, uint64_t key) {
  unsigned char kb[8];
  bus_put_be64(kb, key);
  MDB_val k = {8, kb};
  return edge_store__write(s, &s->outbox, 1, k, NULL, NULL, 0, "drop");
}

int
edge_store_drop_upto(edge_store *s, uint64_t key) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  if ((rc = mdb_cursor_open(t, s->outbox, &c))) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "cursor");
  }
  while ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0 && k.mv_size == 8 &&
         bus_get_be64(k.mv_data) <= key)
    if ((rc = mdb_cursor_del(c, 0)))
      break;
  mdb_cursor_close(c);
  if (rc && rc != MDB_NOTFOUND) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "drop");
  }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
}

uint64_t
edge_store_queued(edge_store *s) {
  MDB_txn *t;
  MDB_stat st;
  uint64_t n = 0;
  if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t))
    return 0;
  if (mdb_stat(t, s->outbox, &st) == 0)
    n = st.ms_entries;
  mdb_txn_abort(t);
  return n;
}
