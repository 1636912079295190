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
edge_store__queue_in(edge_store *s, MDB_txn *t, const edge_msg *m) {
  char id[33];
  unsigned char kb[8];
  int64_t now = bus_wall_ns();
  bus_event_new_id(id);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 5);
  msgpack_pack_str_with_body(&pk, m->subject, strlen(m->subject));
  msgpack_pack_str_with_body(&pk, m->type, strlen(m->type));
  msgpack_pack_str_with_body(&pk, id, strlen(id));
  msgpack_pack_int64(&pk, now);
  msgpack_pack_bin_with_body(&pk, m->data, m->len);
  pthread_mutex_lock(&s->mu);
  uint64_t key = s->next_key++;
  pthread_mutex_unlock(&s->mu);
  put_be64(kb, key);
  MDB_val k = {8, kb}, v = {sb.size, sb.data};
  int rc = mdb_put(t, s->outbox, &k, &v, 0);
  msgpack_sbuffer_destroy(&sb);
  return rc ? edge_store__fail(rc, "queue") : 0;
}

int
edge_store_enqueue_n(edge_store *s, const edge_msg *msgs, size_t n) {
  MDB_txn *t;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  for (size_t i = 0; i < n; i++)
    if ((rc = edge_store__queue_in(s, t, &msgs[i]))) {
      mdb_txn_abort(t);
      return rc;
    }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
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

int
edge_store_peek_n(edge_store *s, edge_queued *q, size_t max, size_t *n) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  *n = 0;
  memset(q, 0, sizeof *q);
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return edge_store__fail(rc, "read");
  if ((rc = mdb_cursor_open(t, s->outbox, &c))) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "cursor");
  }
  MDB_cursor_op op = MDB_FIRST;
  int dec = 0; /* an unreadable one is handed over only first */
  while (*n < max && !dec) {
    rc = mdb_cursor_get(c, &k, &v, op);
    op = MDB_NEXT;
    if (rc || k.mv_size != 8)
      break;
    edge_queued *e = &q[*n];
    memset(e, 0, sizeof *e);
    e->key = get_be64(k.mv_data);
    if (!(dec = decode_queued(v.mv_data, v.mv_size, e)))
      ++*n;
  }
  if (*n)
    rc = 0;
  else if (dec)
    rc = dec;
  else
    rc = rc && rc != MDB_NOTFOUND ? edge_store__fail(rc, "peek")
                                  : BUS_ENOT_FOUND;
  mdb_cursor_close(c);
  mdb_txn_abort(t);
  return rc;
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
  MDB_txn *t;
  unsigned char kb[8];
  put_be64(kb, key);
  MDB_val k = {8, kb};
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  if ((rc = mdb_del(t, s->outbox, &k, NULL)) && rc != MDB_NOTFOUND) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "drop");
  }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
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
         get_be64(k.mv_data) <= key)
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
