/*
 * view-int.h - the inside of a view, shared by view.c, view_apply.c,
 * view_rows.c, applied.c, outbox.c and digest.c.
 *
 * A view is one LMDB environment with named tables: the definition's own,
 * and three of ours: _meta (name, applied sequence, counters), _versions
 * (per aggregate subject: version, generation, count) and _outbox
 * (decisions not yet published).
 */
#ifndef LARK_VIEW_INT_H
#define LARK_VIEW_INT_H

#include <lmdb.h>
#include <pthread.h>

#include "bus-int.h"

#define BUS__VIEW_MAX_TABLES 32

#define BUS__T_META "_meta"
#define BUS__T_VERSIONS "_versions"
#define BUS__T_OUTBOX "_outbox"
#define BUS__T_EFFECTS "_effects"

typedef struct bus__table {
  const char *name;
  MDB_dbi dbi;
} bus__table;

typedef struct bus__counters {
  uint64_t applied_seq, applied, stale, rejected, outbox_next, dropped;
  int64_t applied_ns; /* the stream's stored time of applied_seq */
} bus__counters;

struct bus_view {
  bus_view_def def;
  bus_view_opts opts;
  char *dir;
  MDB_env *env;
  bus__table tables[BUS__VIEW_MAX_TABLES];
  int ntables;
  bus__counters c; /* as last committed */
  int again;       /* a committed decide asked for another pass */
  int relaid;      /* emptied at open for def.layout */
  /* applied.c: the applied sequence as last committed, for waiters */
  pthread_mutex_t applied_mu;
  pthread_cond_t applied_cv;
  uint64_t applied_seq; /* under applied_mu */
  /* bus_view_attach: state of the definition's own, freed at close */
  void *attached;
  void (*attached_free)(void *p);
};

struct bus_txn {
  bus_view *v;
  MDB_txn *txn;
  bus__counters c;         /* working copy inside a write txn */
  const bus_event *cause;  /* decide: the cause, or NULL on a tick */
  unsigned emit_index;     /* decide: emits so far for this cause */
  const char *cur_subject; /* apply: the event's subject, and */
  bus_version cur_ver;     /* its version as apply sees it */
  int64_t now_ns;
  uint64_t applied_before; /* bus_view_write: c.applied when begun */
  int again;               /* decide: bus_txn_decide_again */
};

/* Translate an LMDB return code to ours (-errno or BUS_ESTORE). */
int bus__mdb_err(int rc, const char *what);
/* The dbi of a table by name; BUS_EINVAL when the view has no such table. */
int bus__table_dbi(bus_view *v, const char *name, MDB_dbi *dbi);
/* Begin / commit a write transaction with counters loaded and saved. */
int bus__txn_begin_write(bus_view *v, bus_txn *t);
int bus__txn_commit(bus_txn *t);
void bus__txn_abort(bus_txn *t);

/* applied.c: set up and tear down the waiters' lock (at open, close);
 * publish v->c.applied_seq to them (after each commit). */
void bus__view_applied_init(bus_view *v);
void bus__view_applied_destroy(bus_view *v);
void bus__view_applied_signal(bus_view *v);

/* Big-endian u64 keys sort numerically. */

#endif
