/*
 * store_int.h - private to the store's files (store.c, store_net.c,
 * store_subnet.c, store_queue.c, store_txn.c, store_robot.c,
 * store_engine.c): the store's handle, LMDB's codes
 * translated, keys, and the helpers more than one of them uses.
 */
#ifndef LARK_EDGE_STORE_INT_H
#define LARK_EDGE_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <string.h>

#include "edge.h"
#include "store.h"

struct edge_store {
  MDB_env *env;
  MDB_dbi desired, runs, outbox, nets, subnets;
  MDB_dbi robot_desired, robot_runs; /* store_robot.c */
  MDB_dbi weights;                   /* store_weights.c */
  MDB_dbi engine, engine_pods;       /* store_engine.c */
  pthread_mutex_t mu;                /* next_key */
  uint64_t next_key;
  unsigned forgets;     /* under LMDB's writer lock: in a write txn only */
  unsigned tomb_keep_s; /* how long a forgotten pod's tombstone stays */
};

/* BUS_ESTORE with LMDB's text for rc in bus_last_error(). */
static inline int
edge_store__fail(int rc, const char *what) {
  return bus_error(BUS_ESTORE, "edge store: %s: %s", what, mdb_strerror(rc));
}

static inline MDB_val
key_of(const char *pod) {
  MDB_val k = {strlen(pod), (void *)pod};
  return k;
}

/*
 * Every (pod, value) of a table, copied out of one read transaction so
 * the caller may write the store while it goes through them. conv turns
 * a stored value into vsize bytes (0: skip the record). Each item is
 * ITEM_VAL_OFF + vsize bytes, rounded up: the pod's name, then the value.
 */
#define ITEM_VAL_OFF ((EDGE_POD_SZ + 15) / 16 * 16)

typedef int (*conv_fn)(const MDB_val *v, void *out);

typedef struct table_copy {
  unsigned char *items;
  size_t n, stride;
} table_copy;

int edge_store__copy_table(edge_store *s, MDB_dbi dbi, size_t vsize,
                           conv_fn conv, table_copy *all);
/* The copy, then cb for each item. */
int edge_store__each(edge_store *s, MDB_dbi dbi, size_t vsize, conv_fn conv,
                     edge_row_cb cb, void *ud);

/* One row of a walk: 0 goes on, anything else stops it. */
typedef int (*walk_fn)(const MDB_val *k, const MDB_val *v, void *ud);

/* Walk dbi in t from its first row; returns what stopped it (0: the end)
 * and LMDB's code for a failure in *mrc (0 when none). */
int edge_store__walk_in(MDB_txn *t, MDB_dbi dbi, walk_fn fn, void *ud,
                        int *mrc);
/* The same in a read transaction of its own. A failure to read is
 * returned as an error; one met on the way (what: its name) too, unless
 * what is NULL, then it only ends the walk. */
int edge_store__walk(edge_store *s, MDB_dbi dbi, const char *what, walk_fn fn,
                     void *ud);

/* pod's row in dbi through conv (0 from conv: as if there were none):
 * BUS_ENOT_FOUND when there is none; what names it in an error. */
int edge_store__get(edge_store *s, MDB_dbi dbi, const char *pod, conv_fn conv,
                    void *out, const char *what);

/* One write transaction, all or nothing: key k put as v (or deleted when
 * v is NULL) in each of n tables, then nmsgs messages queued. what names
 * the change in an error. */
int edge_store__write(edge_store *s, const MDB_dbi *tables, size_t n, MDB_val k,
                      const MDB_val *v, const edge_msg *msgs, size_t nmsgs,
                      const char *what);

/* Put [be64 seq][data] as key's row of dbi when seq is newer than the
 * row there; *stored (may be NULL) says whether it was. */
int edge_store__put_newer(edge_store *s, MDB_dbi dbi, const char *key,
                          uint64_t seq, const void *data, size_t len,
                          int *stored);

/* Queue m in t: a new id and the time now, fixed from
 * here on. */
int edge_store__queue_in(edge_store *s, MDB_txn *t, const edge_msg *m);

#endif
