/*
 * store.c - the node's local LMDB: desired states, run records and the
 * outbox of reports not yet acknowledged.
 *
 * Tables: "desired" pod -> [8-byte big-endian stream seq][pod.desired map]
 * (kept only when newer, so a redelivery never rolls a pod back; a
 * forgotten pod's row is a tombstone, below, so nothing older than what
 * it was forgotten at starts it again); "runs"
 * pod -> edge_run; "outbox" 8-byte big-endian key -> msgpack
 * [subject, type, id, ts, data]. Outbox keys grow from the last key at
 * open, so the order of keys is the order reports were made, and a
 * report's id and ts are fixed when it is queued: a re-sent report is
 * the same message. "nets" pod -> edge_net: the network a raw+netns pod
 * holds, claimed and freed in single transactions, so no /30 is ever held
 * by two pods. "subnets" pod -> edge_subnets: the addresses it holds on
 * its robots' subnets, the same way. LMDB's codes are translated here
 * (BUS_ESTORE with the text in bus_last_error()). Write transactions
 * serialise on LMDB's own lock; the env is opened MDB_NOTLS so any
 * thread may read.
 *
 * This file: opening, desired states and run records; store_net.c: the
 * nets; store_subnet.c: the subnet addresses; store_queue.c: the outbox;
 * store_txn.c, below them all: the reads, walks and writes they share
 * (store_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_int.h"

static int
last_key(edge_store *s) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return edge_store__fail(rc, "read");
  rc = mdb_cursor_open(t, s->outbox, &c);
  if (!rc) {
    if (mdb_cursor_get(c, &k, &v, MDB_LAST) == 0 && k.mv_size == 8)
      s->next_key = bus_get_be64(k.mv_data) + 1;
    mdb_cursor_close(c);
  }
  mdb_txn_abort(t);
  return rc ? edge_store__fail(rc, "cursor") : 0;
}

int
edge_store_open(edge_store **out, const char *dir) {
  edge_store *s = calloc(1, sizeof *s);
  MDB_txn *t = NULL;
  int rc;
  if (!s)
    return -ENOMEM;
  s->next_key = 1;
  s->tomb_keep_s = EDGE_TOMB_KEEP_S;
  pthread_mutex_init(&s->mu, NULL);
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    rc = bus_error(-errno, "edge store: mkdir %s", dir);
    goto err;
  }
  if ((rc = mdb_env_create(&s->env)) || (rc = mdb_env_set_maxdbs(s->env, 16)) ||
      (rc = mdb_env_set_mapsize(s->env, (size_t)1 << 30)) ||
      (rc = mdb_env_open(s->env, dir, MDB_NOTLS, 0600)) ||
      (rc = mdb_txn_begin(s->env, NULL, 0, &t)) ||
      (rc = mdb_dbi_open(t, "desired", MDB_CREATE, &s->desired)) ||
      (rc = mdb_dbi_open(t, "runs", MDB_CREATE, &s->runs)) ||
      (rc = mdb_dbi_open(t, "outbox", MDB_CREATE, &s->outbox)) ||
      (rc = mdb_dbi_open(t, "nets", MDB_CREATE, &s->nets)) ||
      (rc = mdb_dbi_open(t, "subnets", MDB_CREATE, &s->subnets)) ||
      (rc = mdb_dbi_open(t, "robot_desired", MDB_CREATE, &s->robot_desired)) ||
      (rc = mdb_dbi_open(t, "robot_runs", MDB_CREATE, &s->robot_runs)) ||
      (rc = mdb_dbi_open(t, "weights", MDB_CREATE, &s->weights)) ||
      (rc = mdb_dbi_open(t, "engine", MDB_CREATE, &s->engine)) ||
      (rc = mdb_dbi_open(t, "engine_pods", MDB_CREATE, &s->engine_pods)) ||
      (rc = mdb_txn_commit(t))) {
    if (t && rc)
      mdb_txn_abort(t);
    rc = edge_store__fail(rc, dir);
    goto err;
  }
  if ((rc = last_key(s)))
    goto err;
  *out = s;
  return 0;
err:
  edge_store_close(s);
  return rc;
}

void
edge_store_close(edge_store *s) {
  if (!s)
    return;
  if (s->env)
    mdb_env_close(s->env);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ----------------------------------------------------------- desired */

/*
 * A forgotten pod's desired row is a tombstone: the version it was
 * forgotten at, a byte no msgpack value starts with, and when (unix s,
 * big-endian). A desired state older than it is never taken again (a
 * stored copy or a push that comes after the pod was forgotten through
 * a newer one); the same version is (the tombstone's own desired state
 * sent again: the pod is forgotten again and says so again). Tombstones
 * older than the store's tomb_keep_s (EDGE_TOMB_KEEP_S) go, in a sweep
 * every EDGE_TOMB_SWEEP forgets. A stale copy comes seconds late at most,
 * so an hour is ample; a node that forgets pods by the million keeps an
 * hour's tombstones, not its history.
 */
#define TOMB_MARK 0xc1
#define TOMB_LEN 17
#define EDGE_TOMB_SWEEP 256

static int
is_tomb(const MDB_val *v) {
  return v->mv_size == TOMB_LEN &&
         ((const unsigned char *)v->mv_data)[8] == TOMB_MARK;
}

int
edge_store__put_newer(edge_store *s, MDB_dbi dbi, const char *key, uint64_t seq,
                      const void *data, size_t len, int *stored) {
  MDB_txn *t;
  MDB_val k = key_of(key), v;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (stored)
    *stored = 0;
  if (rc)
    return edge_store__fail(rc, "begin");
  rc = mdb_get(t, dbi, &k, &v);
  if (rc == 0 && v.mv_size >= 8 &&
      bus_get_be64(v.mv_data) + !is_tomb(&v) > seq) {
    mdb_txn_abort(t);
    return 0;
  }
  v.mv_size = 8 + len;
  if ((rc = mdb_put(t, dbi, &k, &v, MDB_RESERVE))) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "put desired");
  }
  bus_put_be64(v.mv_data, seq);
  memcpy((unsigned char *)v.mv_data + 8, data, len);
  if ((rc = mdb_txn_commit(t)))
    return edge_store__fail(rc, "commit");
  if (stored)
    *stored = 1;
  return 0;
}

int
edge_store_desired_put(edge_store *s, const char *pod, uint64_t seq,
                       const void *data, size_t len, int *stored) {
  return edge_store__put_newer(s, s->desired, pod, seq, data, len, stored);
}

/* A desired state's map, copied out (its seq cut off). */
typedef struct blob {
  void *data;
  size_t len;
} blob;

static int
desired_of(const MDB_val *v, void *out) {
  blob *b = out;
  if (v->mv_size < 8 || is_tomb(v) || !(b->data = malloc(v->mv_size - 8 + 1)))
    return 0;
  b->len = v->mv_size - 8;
  memcpy(b->data, (unsigned char *)v->mv_data + 8, b->len);
  return 1;
}

int
edge_store_desired_each(edge_store *s, edge_desired_cb cb, void *ud) {
  table_copy all;
  int rc =
      edge_store__copy_table(s, s->desired, sizeof(blob), desired_of, &all);
  for (size_t i = 0; i < all.n; i++) {
    unsigned char *it = all.items + i * all.stride;
    blob *b = (blob *)(void *)(it + ITEM_VAL_OFF);
    cb((const char *)it, b->data, b->len, ud);
    free(b->data);
  }
  free(all.items);
  return rc;
}

int
edge_store_desired_get(edge_store *s, const char *pod, void **data,
                       size_t *len) {
  blob b;
  int rc = edge_store__get(s, s->desired, pod, desired_of, &b, "get desired");
  if (rc == 0)
    *data = b.data, *len = b.len;
  return rc;
}

/* -------------------------------------------------------------- runs */

static int
run_of(const MDB_val *v, void *out) {
  if (v->mv_size != sizeof(edge_run))
    return 0;
  memcpy(out, v->mv_data, sizeof(edge_run));
  return 1;
}

int
edge_store_run_get(edge_store *s, const char *pod, edge_run *r) {
  return edge_store__get(s, s->runs, pod, run_of, r, "get run");
}

int
edge_store_run_put(edge_store *s, const char *pod, const edge_run *r,
                   const edge_msg *msg) {
  MDB_val v = {sizeof *r, (void *)r};
  return edge_store__write(s, &s->runs, 1, key_of(pod), r ? &v : NULL, msg,
                           msg != NULL, "put run");
}

void
edge_store_tomb_keep(edge_store *s, unsigned seconds) {
  s->tomb_keep_s = seconds;
}

/* Tombstones forgotten more than s->tomb_keep_s ago, deleted in t. */
static int
sweep_tombs(edge_store *s, MDB_txn *t) {
  MDB_cursor *c;
  MDB_val k, v;
  uint64_t before = (uint64_t)time(NULL) - s->tomb_keep_s;
  int rc = mdb_cursor_open(t, s->desired, &c);
  for (int op = MDB_FIRST; !rc && !(rc = mdb_cursor_get(c, &k, &v, op));
       op = MDB_NEXT)
    if (is_tomb(&v) &&
        bus_get_be64((const unsigned char *)v.mv_data + 9) < before)
      rc = mdb_cursor_del(c, 0);
  if (!rc || rc == MDB_NOTFOUND)
    mdb_cursor_close(c);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* In t: pod's run and engine row deleted, its desired row made a
 * tombstone (deleted when it had none). */
static int
forget_in(edge_store *s, MDB_txn *t, const char *pod) {
  MDB_val k = key_of(pod), v;
  MDB_dbi gone[] = {s->runs, s->engine_pods};
  unsigned char tomb[TOMB_LEN];
  int rc = 0;
  for (size_t i = 0; !rc && i < 2; i++)
    if ((rc = mdb_del(t, gone[i], &k, NULL)) == MDB_NOTFOUND)
      rc = 0;
  if (rc || mdb_get(t, s->desired, &k, &v) || v.mv_size < 8)
    return rc;
  memcpy(tomb, v.mv_data, 8);
  tomb[8] = TOMB_MARK;
  bus_put_be64(tomb + 9, (uint64_t)time(NULL));
  MDB_val tv = {sizeof tomb, tomb};
  return mdb_put(t, s->desired, &k, &tv, 0);
}

int
edge_store_forget(edge_store *s, const char *pod, const edge_msg *msg) {
  MDB_txn *t;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  if (!(rc = forget_in(s, t, pod)) && ++s->forgets % EDGE_TOMB_SWEEP == 0)
    rc = sweep_tombs(s, t);
  if (rc) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "forget");
  }
  if (msg && (rc = edge_store__queue_in(s, t, msg))) {
    mdb_txn_abort(t);
    return rc;
  }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
}

int
edge_store_run_each(edge_store *s, edge_row_cb cb, void *ud) {
  return edge_store__each(s, s->runs, sizeof(edge_run), run_of, cb, ud);
}
