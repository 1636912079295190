/*
 * view.c - a view's LMDB environment: open and close, its tables, the
 * counters in _meta, and the write and read transactions that load and
 * save those counters. Applying events (versions, apply, decide) is
 * view_apply.c's; reading and writing rows of the tables, marks and notes
 * are view_rows.c's.
 *
 * The tables and the applied sequence always describe the same prefix of
 * the stream: both change only inside one write transaction, which commits
 * whole or not at all (bus__txn_commit saves the counters with the rows).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "view-int.h"

#define META_NAME "view"
#define META_COUNTERS "counters"
#define META_LAYOUT "layout"

int
bus__mdb_err(int rc, const char *what) {
  if (rc == 0)
    return 0;
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  if (rc > 0) /* a system errno; LMDB's own codes are negative */
    return BUS_ERR(-rc, "%s: %s", what, mdb_strerror(rc));
  return BUS_ERR(BUS_ESTORE, "%s: %s", what, mdb_strerror(rc));
}

void
bus_view_opts_init(bus_view_opts *o) {
  memset(o, 0, sizeof *o);
  o->map_size = (size_t)1 << 30;
  o->effects = 1;
}

int
bus__table_dbi(bus_view *v, const char *name, MDB_dbi *dbi) {
  for (int i = 0; i < v->ntables; i++)
    if (v->tables[i].name == name || !strcmp(v->tables[i].name, name)) {
      *dbi = v->tables[i].dbi;
      return 0;
    }
  return BUS_ERR(BUS_EINVAL, "view %s has no table %s", v->def.name, name);
}

/* ----------------------------------------------------------- counters */

#define NCOUNTERS 7

/* A view written before applied_ns existed has six counters: the missing
 * one reads 0, "not known", and the start check then skips the time. */
static void
counters_encode(const bus__counters *c, unsigned char out[8 * NCOUNTERS]) {
  const uint64_t f[NCOUNTERS] = {c->applied_seq,
                                 c->applied,
                                 c->stale,
                                 c->rejected,
                                 c->outbox_next,
                                 c->dropped,
                                 (uint64_t)c->applied_ns};
  for (int i = 0; i < NCOUNTERS; i++)
    bus_put_be64(out + 8 * i, f[i]);
}

static void
counters_decode(const unsigned char *in, size_t len, bus__counters *c) {
  uint64_t f[NCOUNTERS] = {0};
  for (size_t i = 0; i < NCOUNTERS && 8 * (i + 1) <= len; i++)
    f[i] = bus_get_be64(in + 8 * i);
  c->applied_seq = f[0];
  c->applied = f[1];
  c->stale = f[2];
  c->rejected = f[3];
  c->outbox_next = f[4];
  c->dropped = f[5];
  c->applied_ns = (int64_t)f[6];
}

static int
counters_load(MDB_txn *txn, MDB_dbi meta, bus__counters *c) {
  MDB_val k = {strlen(META_COUNTERS), (void *)META_COUNTERS}, val;
  memset(c, 0, sizeof *c);
  int rc = mdb_get(txn, meta, &k, &val);
  if (rc == MDB_NOTFOUND)
    return 0;
  if (rc)
    return bus__mdb_err(rc, "read view counters");
  counters_decode(val.mv_data, val.mv_size, c);
  return 0;
}

static int
counters_save(MDB_txn *txn, MDB_dbi meta, const bus__counters *c) {
  unsigned char buf[8 * NCOUNTERS];
  counters_encode(c, buf);
  MDB_val k = {strlen(META_COUNTERS), (void *)META_COUNTERS};
  MDB_val val = {sizeof buf, buf};
  return bus__mdb_err(mdb_put(txn, meta, &k, &val, 0), "save view counters");
}

/* --------------------------------------------------------------- open */

static int
mkdir_p(const char *dir) {
  char path[4096];
  if (strlen(dir) >= sizeof path)
    return BUS_ERR(-ENAMETOOLONG, "view directory name too long");
  strcpy(path, dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
      return BUS_ERR(-errno, "mkdir %s", path);
    *p = '/';
  }
  if (mkdir(path, 0700) < 0 && errno != EEXIST)
    return BUS_ERR(-errno, "mkdir %s", path);
  return 0;
}

static int
add_table(bus_view *v, MDB_txn *txn, const char *name) {
  if (v->ntables >= BUS__VIEW_MAX_TABLES)
    return BUS_ERR(BUS_EINVAL, "view %s: too many tables", v->def.name);
  bus__table *t = &v->tables[v->ntables];
  int rc = mdb_dbi_open(txn, name, MDB_CREATE, &t->dbi);
  if (rc)
    return bus__mdb_err(rc, name);
  t->name = name;
  v->ntables++;
  return 0;
}

/* The view's name is written once; another name means another view. */
static int
check_name(bus_view *v, MDB_txn *txn, MDB_dbi meta) {
  MDB_val k = {strlen(META_NAME), (void *)META_NAME}, val;
  int rc = mdb_get(txn, meta, &k, &val);
  if (rc == MDB_NOTFOUND) {
    MDB_val name = {strlen(v->def.name), (void *)v->def.name};
    return bus__mdb_err(mdb_put(txn, meta, &k, &name, 0), "write view name");
  }
  if (rc)
    return bus__mdb_err(rc, "read view name");
  if (val.mv_size != strlen(v->def.name) ||
      memcmp(val.mv_data, v->def.name, val.mv_size))
    return BUS_ERR(BUS_ECORRUPT, "%s holds view '%.*s', not '%s'", v->dir,
                   (int)val.mv_size, (const char *)val.mv_data, v->def.name);
  return 0;
}

/*
 * The layout the view was written with against def.layout: the same, or
 * no layout kept, leaves it; anything else empties every table and the
 * counters (meta keeps the view's name) and writes the new layout.
 */
static int
check_layout(bus_view *v, MDB_txn *txn, MDB_dbi meta) {
  if (!v->def.layout)
    return 0;
  unsigned char want[4] = {(unsigned char)(v->def.layout >> 24),
                           (unsigned char)(v->def.layout >> 16),
                           (unsigned char)(v->def.layout >> 8),
                           (unsigned char)v->def.layout};
  MDB_val k = {strlen(META_LAYOUT), (void *)META_LAYOUT}, val;
  MDB_val c = {strlen(META_COUNTERS), (void *)META_COUNTERS}, cval;
  int rc = mdb_get(txn, meta, &k, &val);
  if (rc && rc != MDB_NOTFOUND)
    return bus__mdb_err(rc, "read view layout");
  if (!rc && val.mv_size == 4 && !memcmp(val.mv_data, want, 4))
    return 0;
  rc = 0;
  if (mdb_get(txn, meta, &c, &cval) == 0) { /* it holds something */
    for (int i = 1; !rc && i < v->ntables; i++)
      rc = mdb_drop(txn, v->tables[i].dbi, 0);
    if (!rc)
      rc = mdb_del(txn, meta, &c, NULL);
    if (rc)
      return bus__mdb_err(rc, "empty a view of another layout");
    v->relaid = 1;
  }
  MDB_val lv = {sizeof want, want};
  return bus__mdb_err(mdb_put(txn, meta, &k, &lv, 0), "write view layout");
}

int
bus_view_relaid(const bus_view *v) {
  return v->relaid;
}

static int
open_tables(bus_view *v) {
  MDB_txn *txn;
  int rc = mdb_txn_begin(v->env, NULL, 0, &txn);
  if (rc)
    return bus__mdb_err(rc, "begin");
  rc = add_table(v, txn, BUS__T_META);
  if (!rc)
    rc = add_table(v, txn, BUS__T_VERSIONS);
  if (!rc)
    rc = add_table(v, txn, BUS__T_OUTBOX);
  if (!rc)
    rc = add_table(v, txn, BUS__T_EFFECTS);
  for (int i = 0; !rc && v->def.tables && v->def.tables[i]; i++) {
    if (v->def.tables[i][0] == '_')
      rc = BUS_ERR(BUS_EINVAL, "table names starting '_' are reserved");
    else
      rc = add_table(v, txn, v->def.tables[i]);
  }
  if (!rc)
    rc = check_name(v, txn, v->tables[0].dbi);
  if (!rc)
    rc = check_layout(v, txn, v->tables[0].dbi);
  if (!rc)
    rc = counters_load(txn, v->tables[0].dbi, &v->c);
  if (rc) {
    mdb_txn_abort(txn);
    return rc;
  }
  return bus__mdb_err(mdb_txn_commit(txn), "commit");
}

int
bus_view_open(bus_view **out, const bus_view_def *def, const bus_view_opts *o) {
  *out = NULL;
  if (!def || !def->name || !o || !o->dir)
    return BUS_ERR(BUS_EINVAL, "view needs a name and a directory");
  bus_view *v = calloc(1, sizeof *v);
  if (!v)
    return BUS_ERR(-ENOMEM, "out of memory opening view %s", def->name);
  v->def = *def;
  v->opts = *o;
  bus__view_applied_init(v);
  v->dir = strdup(o->dir);
  int rc = v->dir
               ? mkdir_p(o->dir)
               : BUS_ERR(-ENOMEM, "out of memory opening view %s", def->name);
  if (rc)
    goto out;
  if ((rc = mdb_env_create(&v->env))) {
    rc = bus__mdb_err(rc, "env create");
    goto out;
  }
  mdb_env_set_maxdbs(v->env, BUS__VIEW_MAX_TABLES);
  size_t map = o->map_size ? o->map_size : (size_t)1 << 30;
  mdb_env_set_mapsize(v->env, map > def->map_size ? map : def->map_size);
  /* A rebuild writes through the map and syncs once at the end. */
  unsigned flags = MDB_NOTLS;
  if (o->nosync)
    flags |= MDB_NOSYNC | MDB_WRITEMAP | MDB_MAPASYNC;
  if ((rc = mdb_env_open(v->env, o->dir, flags, 0600))) {
    rc = bus__mdb_err(rc, o->dir);
    goto out;
  }
  rc = open_tables(v);
out:
  if (rc) {
    bus_view_close(v);
    return rc;
  }
  v->opts.dir = v->dir;
  bus__view_applied_signal(v);
  *out = v;
  return 0;
}

void
bus_view_close(bus_view *v) {
  if (!v)
    return;
  if (v->attached_free)
    v->attached_free(v->attached);
  if (v->env)
    mdb_env_close(v->env);
  bus__view_applied_destroy(v);
  free(v->dir);
  free(v);
}

int
bus_view_sync(bus_view *v) {
  return bus__mdb_err(mdb_env_sync(v->env, 1), "sync");
}

const char *
bus_view_name(const bus_view *v) {
  return v->def.name;
}

const char *
bus_view_dir(const bus_view *v) {
  return v->dir;
}

bus_view *
bus_txn_view(bus_txn *t) {
  return t->v;
}

void
bus_view_attach(bus_view *v, void *p, void (*release)(void *p)) {
  v->attached = p;
  v->attached_free = release;
}

void *
bus_view_attached(const bus_view *v) {
  return v->attached;
}

/* ------------------------------------------------------- transactions */

int
bus__txn_begin_write(bus_view *v, bus_txn *t) {
  memset(t, 0, sizeof *t);
  t->v = v;
  int rc = mdb_txn_begin(v->env, NULL, 0, &t->txn);
  if (rc)
    return bus__mdb_err(rc, "begin write");
  t->c = v->c;
  return 0;
}

int
bus__txn_commit(bus_txn *t) {
  int rc = counters_save(t->txn, t->v->tables[0].dbi, &t->c);
  if (rc) {
    bus__txn_abort(t);
    return rc;
  }
  rc = mdb_txn_commit(t->txn);
  t->txn = NULL;
  if (rc)
    return bus__mdb_err(rc, "commit");
  t->v->c = t->c;
  t->v->again |= t->again;
  bus__view_applied_signal(t->v); /* wake who waits for this sequence */
  return 0;
}

void
bus__txn_abort(bus_txn *t) {
  if (t->txn)
    mdb_txn_abort(t->txn);
  t->txn = NULL;
}

int
bus_view_read(bus_view *v, bus_txn **out) {
  bus_txn *t = calloc(1, sizeof *t);
  if (!t)
    return BUS_ERR(-ENOMEM, "out of memory reading view %s", v->def.name);
  t->v = v;
  int rc = mdb_txn_begin(v->env, NULL, MDB_RDONLY, &t->txn);
  if (rc) {
    free(t);
    return bus__mdb_err(rc, "begin read");
  }
  rc = counters_load(t->txn, v->tables[0].dbi, &t->c);
  if (rc) {
    bus_txn_end(t);
    return rc;
  }
  *out = t;
  return 0;
}

void
bus_txn_end(bus_txn *t) {
  if (!t)
    return;
  if (t->txn)
    mdb_txn_abort(t->txn);
  free(t);
}

int
bus_view_read_with(bus_view *v, bus_read_fn fn, void *ud) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = fn(t, ud);
  bus_txn_end(t);
  return rc;
}

static int
stats_in(bus_txn *t, void *ud) {
  bus_view_stats *s = ud;
  MDB_stat st;
  MDB_dbi dbi = 0;
  bus__table_dbi(t->v, BUS__T_OUTBOX, &dbi);
  int rc = mdb_stat(t->txn, dbi, &st);
  memset(s, 0, sizeof *s);
  s->applied_seq = t->c.applied_seq;
  s->applied_ns = t->c.applied_ns;
  s->applied = t->c.applied;
  s->stale = t->c.stale;
  s->rejected = t->c.rejected;
  s->outbox = rc ? 0 : st.ms_entries;
  return rc ? bus__mdb_err(rc, "stat outbox") : 0;
}

int
bus_view_stats_get(bus_view *v, bus_view_stats *s) {
  return bus_view_read_with(v, stats_in, s);
}

int
bus_view_snapshot(bus_view *v, const char *path) {
  if (mkdir(path, 0700) < 0)
    return BUS_ERR(errno == EEXIST ? BUS_EEXISTS : -errno, "snapshot %s: %s",
                   path, strerror(errno));
  int rc = mdb_env_copy2(v->env, path, MDB_CP_COMPACT);
  return bus__mdb_err(rc, "snapshot");
}
