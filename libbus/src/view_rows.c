/*
 * view_rows.c - the rows of a view's tables inside a transaction: put, get,
 * delete and the two scans (from a prefix, after a key), the _effects
 * table's marks and notes, which decide writes to remember what it has
 * done, and a decide pass's queue of sends (its cursor a note). Each call
 * names its table; the name is looked up in the view's table list
 * (bus__table_dbi).
 */
#include <string.h>

#include "view-int.h"

int
bus_txn_put(bus_txn *t, const char *table, const void *key, size_t klen,
            const void *val, size_t vlen) {
  MDB_dbi dbi = 0;
  int rc = bus__table_dbi(t->v, table, &dbi);
  if (rc)
    return rc;
  MDB_val k = {klen, (void *)key}, d = {vlen, (void *)val};
  return bus__mdb_err(mdb_put(t->txn, dbi, &k, &d, 0), table);
}

int
bus_txn_get(bus_txn *t, const char *table, const void *key, size_t klen,
            const void **val, size_t *vlen) {
  MDB_dbi dbi = 0;
  int rc = bus__table_dbi(t->v, table, &dbi);
  if (rc)
    return rc;
  MDB_val k = {klen, (void *)key}, d;
  rc = mdb_get(t->txn, dbi, &k, &d);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  if (rc)
    return bus__mdb_err(rc, table);
  *val = d.mv_data;
  *vlen = d.mv_size;
  return 0;
}

int
bus_txn_del(bus_txn *t, const char *table, const void *key, size_t klen) {
  MDB_dbi dbi = 0;
  int rc = bus__table_dbi(t->v, table, &dbi);
  if (rc)
    return rc;
  MDB_val k = {klen, (void *)key};
  rc = mdb_del(t->txn, dbi, &k, NULL);
  return rc == MDB_NOTFOUND ? 0 : bus__mdb_err(rc, table);
}

/*
 * Walk table from key: the rows that start with it (after == 0), or every
 * row past it (after == 1), until cb returns non-zero.
 */
static int
cursor_open(bus_txn *t, const char *table, MDB_cursor **cur) {
  MDB_dbi dbi = 0;
  int rc = bus__table_dbi(t->v, table, &dbi);
  if (rc)
    return rc;
  if ((rc = mdb_cursor_open(t->txn, dbi, cur)))
    return bus__mdb_err(rc, table);
  return 0;
}

static int
scan(bus_txn *t, const char *table, const void *key, size_t klen, int after,
     bus_scan_cb cb, void *ud) {
  MDB_cursor *cur;
  int rc = cursor_open(t, table, &cur);
  if (rc)
    return rc;
  MDB_val k = {klen, (void *)key}, d;
  int mrc = mdb_cursor_get(cur, &k, &d, klen ? MDB_SET_RANGE : MDB_FIRST);
  if (after && mrc == 0 && klen && k.mv_size == klen &&
      !memcmp(k.mv_data, key, klen))
    mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT);
  while (mrc == 0) {
    if (!after && klen && (k.mv_size < klen || memcmp(k.mv_data, key, klen)))
      break;
    if ((rc = cb(k.mv_data, k.mv_size, d.mv_data, d.mv_size, ud)))
      break;
    mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  if (mrc && mrc != MDB_NOTFOUND)
    return bus__mdb_err(mrc, table);
  return rc;
}

int
bus_txn_scan(bus_txn *t, const char *table, const void *prefix, size_t plen,
             bus_scan_cb cb, void *ud) {
  return scan(t, table, prefix, plen, 0, cb, ud);
}

int
bus_txn_floor(bus_txn *t, const char *table, const void *key, size_t klen,
              const void **k, size_t *kl, const void **val, size_t *vlen) {
  MDB_cursor *cur;
  int rc = cursor_open(t, table, &cur);
  if (rc)
    return rc;
  MDB_val mk = {klen, (void *)key}, d;
  int mrc = mdb_cursor_get(cur, &mk, &d, MDB_SET_RANGE);
  if (mrc == MDB_NOTFOUND) /* every key is smaller: the last one */
    mrc = mdb_cursor_get(cur, &mk, &d, MDB_LAST);
  else if (mrc == 0 && (mk.mv_size != klen || memcmp(mk.mv_data, key, klen)))
    mrc = mdb_cursor_get(cur, &mk, &d, MDB_PREV); /* past it: step back */
  mdb_cursor_close(cur);
  if (mrc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  if (mrc)
    return bus__mdb_err(mrc, table);
  *k = mk.mv_data, *kl = mk.mv_size;
  *val = d.mv_data, *vlen = d.mv_size;
  return 0;
}

/* ------------------------------------------------------------- effects */

int
bus_txn_mark(bus_txn *t, const void *key, size_t klen) {
  return bus_txn_put(t, BUS__T_EFFECTS, key, klen, "", 0);
}

int
bus_txn_marked(bus_txn *t, const void *key, size_t klen) {
  const void *v;
  size_t n;
  int rc = bus_txn_get(t, BUS__T_EFFECTS, key, klen, &v, &n);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  return rc ? rc : 1;
}

int
bus_txn_unmark(bus_txn *t, const void *key, size_t klen) {
  return bus_txn_del(t, BUS__T_EFFECTS, key, klen);
}

int
bus_txn_note_put(bus_txn *t, const void *key, size_t klen, const void *val,
                 size_t vlen) {
  return bus_txn_put(t, BUS__T_EFFECTS, key, klen, val, vlen);
}

int
bus_txn_note_get(bus_txn *t, const void *key, size_t klen, const void **val,
                 size_t *vlen) {
  return bus_txn_get(t, BUS__T_EFFECTS, key, klen, val, vlen);
}

int
bus_txn_notes(bus_txn *t, const void *prefix, size_t plen, bus_scan_cb cb,
              void *ud) {
  return scan(t, BUS__T_EFFECTS, prefix, plen, 0, cb, ud);
}

int
bus_txn_scan_after(bus_txn *t, const char *table, const void *after,
                   size_t alen, bus_scan_cb cb, void *ud) {
  return scan(t, table, after, alen, 1, cb, ud);
}

/* The cursor is copied before the scan, since send moves it meanwhile;
 * written back only when it moved, so a pass that sent nothing writes
 * nothing. */
int
bus_txn_sendq(bus_txn *t, const char *table, const char *note, bus_sendq *q,
              bus_scan_cb send, void *ud) {
  const void *cur = NULL;
  size_t clen = 0;
  if (bus_txn_note_get(t, note, strlen(note), &cur, &clen) == 0 &&
      clen <= sizeof q->last) {
    memcpy(q->last, cur, clen);
    q->last_len = clen;
  }
  unsigned char after[sizeof q->last];
  size_t alen = q->last_len;
  memcpy(after, q->last, alen);
  int rc = bus_txn_scan_after(t, table, after, alen, send, ud);
  if (!rc && q->moved)
    rc = bus_txn_note_put(t, note, strlen(note), q->last, q->last_len);
  return rc;
}

void
bus_sendq_sent(bus_sendq *q, const void *key, size_t klen) {
  if (klen > sizeof q->last)
    return;
  memcpy(q->last, key, klen);
  q->last_len = klen;
  q->moved = 1;
}
