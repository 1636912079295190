/*
 * view_embed.c - the views the gateway embeds: copies of the scheduler's,
 * dag's and ipam's, each in <gateway dir>/embedded/<name>, fed every event
 * the gateway applies (decide off), so an object is rendered by its
 * owner's own query code at exactly the event that changed it.
 *
 * A batch of the gateway's is one write transaction on each embedded view
 * too: opened at the batch's first event, each event applied into it and
 * the renders read through it (they see exactly the events fed so far),
 * committed by the gateway view's commit hook just before the gateway's
 * own commit, dropped by its abort hook. One commit per view per batch,
 * not per event.
 *
 * Invariant: each embedded view has applied exactly the events the
 * gateway's apply was given, no more. They commit on their own (LMDB
 * environments of their own, without fsync: the check below catches what
 * a crash loses), just before the gateway does, so the invariant is
 * checked when they are opened (their applied sequence equals the
 * gateway's "seq") and while feeding (an event at or below the last one
 * they may have committed means the gateway's commit failed after theirs:
 * the hook counts a batch as theirs before it commits them). Broken, the
 * gateway view reports BUS_ECORRUPT; gw_view_prepare, run before the view
 * is opened, removes both stores (nothing else of the directory) so the
 * service rebuilds from sequence 1.
 */
#include <ftw.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dag.h"
#include "ipam.h"
#include "scheduler.h"
#include "view-int.h"

struct gw_embed {
  bus_view *v[GW_NEMB];
  bus_txn *w[GW_NEMB]; /* the batch's write transactions, or all NULL */
  uint64_t fed;        /* the last sequence given to them */
  uint64_t kept;       /* the last they may have committed */
};

static void (*const defs[GW_NEMB])(bus_view_def *) = {
    sched_view_def, dag_view_def, ipam_view_def};
static const char *const names[GW_NEMB] = {"scheduler", "dag", "ipam"};

/* The batch's transactions dropped, the feed back at what they kept. */
static void
drop(gw_embed *e) {
  for (int i = 0; i < GW_NEMB; i++) {
    bus_txn_end(e->w[i]);
    e->w[i] = NULL;
  }
  e->fed = e->kept;
}

static void
embed_free(void *p) {
  gw_embed *e = p;
  if (e)
    drop(e);
  for (int i = 0; e && i < GW_NEMB; i++)
    bus_view_close(e->v[i]);
  free(e);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(path);
}

/* Remove path and everything under it; absent is fine. */
static int
rm_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0)
    return 0;
  if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
    return bus_error(BUS_ESTORE, "cannot remove %s", path);
  return 0;
}

/* The gateway view's store and its embedded views, and nothing else the
 * directory may hold. */
static int
forget(const char *dir) {
  static const char *const parts[] = {"data.mdb", "lock.mdb", "embedded"};
  char path[4096];
  int rc = 0;
  for (size_t i = 0; !rc && i < sizeof parts / sizeof *parts; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, parts[i]);
    rc = rm_tree(path);
  }
  return rc;
}

static int
open_all(gw_embed *e, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/embedded", dir);
  mkdir(path, 0700);
  for (int i = 0; i < GW_NEMB; i++) {
    bus_view_def def;
    bus_view_opts o;
    defs[i](&def);
    def.decide = NULL;
    def.ud = NULL;
    bus_view_opts_init(&o);
    snprintf(path, sizeof path, "%s/embedded/%s", dir, names[i]);
    o.dir = path;
    o.nosync = 1;
    int rc = bus_view_open(&e->v[i], &def, &o);
    if (rc)
      return rc;
  }
  return 0;
}

static void
close_all(gw_embed *e) {
  for (int i = 0; i < GW_NEMB; i++) {
    bus_view_close(e->v[i]);
    e->v[i] = NULL;
  }
}

/* 1 when every embedded view has applied exactly seq. */
static int
agree(gw_embed *e, uint64_t seq) {
  for (int i = 0; i < GW_NEMB; i++) {
    bus_view_stats st;
    if (bus_view_stats_get(e->v[i], &st) || st.applied_seq != seq)
      return 0;
  }
  return 1;
}

static int
embed_open(const char *dir, uint64_t seq, gw_embed *e) {
  char path[4096];
  int rc = open_all(e, dir);
  if (!rc && agree(e, seq))
    return 0;
  close_all(e);
  if (seq)
    return bus_error(BUS_ECORRUPT,
                     "the gateway view in %s and its embedded views disagree "
                     "(an OS crash?): it is rebuilt at the next start",
                     dir);
  snprintf(path, sizeof path, "%s/embedded", dir); /* new gateway: start */
  if ((rc = rm_tree(path)))                        /* them again too */
    return rc;
  return open_all(e, dir);
}

int
gw_embed_of(bus_txn *t, gw_embed **out) {
  bus_view *gv = bus_txn_view(t);
  gw_embed *e = bus_view_attached(gv);
  if (!e) {
    if (!(e = calloc(1, sizeof *e)))
      return -ENOMEM;
    e->fed = e->kept = gw_meta_u64(t, "seq");
    int rc = embed_open(bus_view_dir(gv), e->fed, e);
    if (rc) {
      embed_free(e);
      return rc;
    }
    bus_view_attach(gv, e, embed_free);
  }
  *out = e;
  return 0;
}

/* The batch's write transactions, begun at its first event. */
static int
begin(gw_embed *e) {
  if (e->w[0])
    return 0;
  for (int i = 0; i < GW_NEMB; i++) {
    int rc = bus_view_write(e->v[i], &e->w[i]);
    if (rc) {
      drop(e);
      return rc;
    }
  }
  return 0;
}

int
gw_embed_feed(gw_embed *e, const bus_event *ev) {
  if (ev->seq <= e->fed)
    return bus_error(BUS_ECORRUPT,
                     "event %llu is at or below %llu, the last the embedded "
                     "views applied: the gateway view is rebuilt at the "
                     "next start",
                     (unsigned long long)ev->seq, (unsigned long long)e->fed);
  int rc = begin(e);
  for (int i = 0; !rc && i < GW_NEMB; i++)
    rc = bus_txn_apply(e->w[i], ev);
  if (!rc)
    e->fed = ev->seq;
  return rc; /* on error the gateway's batch aborts: the hook drops them */
}

void
gw_embed_txns(gw_embed *e, bus_txn *out[GW_NEMB]) {
  for (int i = 0; i < GW_NEMB; i++)
    out[i] = e->w[i];
}

/* def.commit: theirs just before the gateway's. Counted as kept before
 * committing, so a failure of any commit from here on (theirs or the
 * gateway's) leaves a feed check that reports the disagreement. */
static int
embed_commit(bus_txn *t, void *ud) {
  (void)ud;
  gw_embed *e = bus_view_attached(bus_txn_view(t));
  int rc = 0;
  if (!e || !e->w[0])
    return 0;
  e->kept = e->fed;
  for (int i = 0; i < GW_NEMB; i++) {
    int r = bus_txn_commit(e->w[i]);
    e->w[i] = NULL;
    if (r && !rc)
      rc = r;
  }
  return rc;
}

/* def.abort: the batch's transactions dropped. */
static void
embed_abort(bus_view *v, void *ud) {
  (void)ud;
  gw_embed *e = bus_view_attached(v);
  if (e)
    drop(e);
}

void
gw_embed_hooks(bus_view_def *def) {
  def->commit = embed_commit;
  def->abort = embed_abort;
}

int
gw_embed_prepare(const char *dir, const bus_view_def *def) {
  bus_view *gv = NULL;
  bus_view_opts o;
  struct stat st;
  if (stat(dir, &st) < 0)
    return 0; /* a new view: nothing to check */
  bus_view_opts_init(&o);
  o.dir = dir;
  int rc = bus_view_open(&gv, def, &o);
  if (rc)
    return rc;
  bus_txn *t = NULL;
  uint64_t seq = 0;
  if (!(rc = bus_view_read(gv, &t))) {
    seq = gw_meta_u64(t, "seq");
    bus_txn_end(t);
  }
  bus_view_close(gv);
  gw_embed e = {.fed = seq};
  if (rc || (!(rc = open_all(&e, dir)) && agree(&e, seq))) {
    close_all(&e);
    return rc;
  }
  close_all(&e);
  return forget(dir); /* rebuilt from sequence 1 */
}
