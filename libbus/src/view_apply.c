/*
 * view_apply.c - applying events to a view: a batch of events in one write
 * transaction, the applied sequence advanced with it, each aggregate's
 * version kept in _versions and checked against the event's `prev`, then
 * apply and decide; and the tick that runs decide on its own.
 *
 * Invariants, and why they hold:
 * - The tables and the applied sequence always describe the same prefix of
 *   the stream: both change only inside one write transaction, which
 *   commits whole or not at all. A crash before commit loses the batch,
 *   and the consumer redelivers it; a crash after commit but before the ack
 *   redelivers events whose seq <= applied, which are skipped. Nothing is
 *   applied twice.
 * - An aggregate's version (the seq of its last accepted event) is kept in
 *   _versions by this file, not by apply, so every view checks `prev` the
 *   same way: an event whose prev is not the current version is ignored
 *   and counted. Live and replay see the same stream order, hence the same
 *   winner (docs/design.md section 3).
 * - apply and decide see the version as it is after the event: the record
 *   is updated before apply runs and restored when apply refuses the event.
 * - A batch's def.commit runs inside its transaction before the commit, and
 *   def.abort after any abort (its commit's failure too), so what a view
 *   holds beside its own store ends with the batch either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view-int.h"

#define VERSION_LEN 25

/* ----------------------------------------------------------- versions */

static void
version_encode(const bus_version *ver, unsigned char out[VERSION_LEN]) {
  bus_put_be64(out, ver->seq);
  bus_put_be64(out + 8, ver->generation);
  bus_put_be64(out + 16, ver->count);
  out[24] = (unsigned char)(ver->deleted ? 1 : 0);
}

int
bus_txn_version(bus_txn *t, const char *subject, bus_version *ver) {
  const void *val;
  size_t len;
  if (t->cur_subject && !strcmp(subject, t->cur_subject)) {
    *ver = t->cur_ver; /* apply asks for its own event's: just written */
    return 0;
  }
  memset(ver, 0, sizeof *ver);
  int rc =
      bus_txn_get(t, BUS__T_VERSIONS, subject, strlen(subject), &val, &len);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc)
    return rc;
  if (len != VERSION_LEN)
    return BUS_ERR(BUS_ECORRUPT, "version record of %s", subject);
  const unsigned char *p = val;
  ver->seq = bus_get_be64(p);
  ver->generation = bus_get_be64(p + 8);
  ver->count = bus_get_be64(p + 16);
  ver->deleted = p[24];
  return 0;
}

static int
version_put(bus_txn *t, const char *subject, const bus_version *ver) {
  unsigned char buf[VERSION_LEN];
  version_encode(ver, buf);
  return bus_txn_put(t, BUS__T_VERSIONS, subject, strlen(subject), buf,
                     sizeof buf);
}

static int
is_delete(const char *type) {
  const char *dot = strrchr(type, '.');
  return dot && !strcmp(dot, ".deleted");
}

static int
is_aggregate(const char *subject) {
  return subject && !strncmp(subject, "lark.ev.", 8);
}

/* ---------------------------------------------------------------- apply */

static int
run_decide(bus_txn *t, const bus_event *cause) {
  if (!t->v->opts.effects || !t->v->def.decide)
    return 0;
  t->cause = cause;
  t->emit_index = 0;
  int rc = t->v->def.decide(t, cause, t->now_ns, t->v->def.ud);
  t->cause = NULL;
  return rc;
}

static int
refused(int rc) {
  return rc == BUS_EINVAL || rc == BUS_EFIELD || rc == BUS_EMISSING ||
         rc == BUS_ENAME || rc == BUS_EUNKNOWN_TYPE;
}

/*
 * One event inside the batch's transaction. Returns 0 when applied,
 * skipped, stale or refused (all counted), a negative code to abort.
 */
static int
apply_one(bus_txn *t, const bus_event *ev) {
  bus_version old, now;
  int agg = is_aggregate(ev->subject);
  if (agg) {
    int rc = bus_txn_version(t, ev->subject, &old);
    if (rc)
      return rc;
    if (ev->prev != old.seq) {
      t->c.stale++;
      return 0;
    }
    now.seq = ev->seq;
    now.count = old.count + 1;
    now.deleted = is_delete(ev->type);
    now.generation = old.generation == 0 ? 1 : old.generation;
    if (old.deleted && !now.deleted)
      now.generation++;
    if ((rc = version_put(t, ev->subject, &now)))
      return rc;
  }
  if (agg) {
    t->cur_subject = ev->subject;
    t->cur_ver = now;
  }
  bus_event named; /* built by hand, not decoded: its type by name, here */
  if (ev->t == BUS_T_UNKNOWN && ev->type) {
    named = *ev;
    named.t = bus_type_of(ev->type);
    ev = &named;
  }
  int rc = t->v->def.apply ? t->v->def.apply(t, ev, t->v->def.ud) : 0;
  t->cur_subject = NULL;
  if (refused(rc)) {
    t->c.rejected++;
    if (agg)
      return old.seq ? version_put(t, ev->subject, &old)
                     : bus_txn_del(t, BUS__T_VERSIONS, ev->subject,
                                   strlen(ev->subject));
    return 0;
  }
  if (rc)
    return rc;
  t->c.applied++;
  return run_decide(t, ev);
}

/* Undecodable messages (ev == NULL) are counted and passed over. */
static int
apply_seq(bus_txn *t, const bus_event *ev, uint64_t seq, int64_t stored_ns) {
  if (seq <= t->c.applied_seq)
    return 0; /* redelivered: already in the view */
  int rc = 0;
  if (ev)
    rc = apply_one(t, ev);
  else
    t->c.rejected++;
  if (rc == 0) {
    t->c.applied_seq = seq;
    t->c.applied_ns = stored_ns;
  }
  return rc;
}

/* After a batch that applied something: decide on the whole view. */
static int
end_batch(bus_txn *t, uint64_t applied_before) {
  if (t->c.applied == applied_before)
    return 0;
  return run_decide(t, NULL);
}

/* Apply n events in one transaction: evs[i], or when evs is NULL, the
 * batch's i-th with its delivery metadata. */
static int
apply_n(bus_view *v, const bus_event *const *evs, const bus_batch *b,
        size_t n) {
  bus_txn t;
  int rc = bus__txn_begin_write(v, &t);
  if (rc)
    return rc;
  t.now_ns = v->opts.effects ? bus_wall_ns() : 0;
  uint64_t before = t.c.applied;
  for (size_t i = 0; i < n && !rc; i++) {
    const bus_event *ev = evs ? evs[i] : bus_batch_event(b, i);
    uint64_t seq = ev ? ev->seq : 0;
    int64_t stored_ns = ev ? ev->stored_ns : 0;
    if (!evs)
      bus_batch_meta(b, i, NULL, &seq, &stored_ns);
    rc = apply_seq(&t, ev, seq, stored_ns);
  }
  if (!rc)
    rc = end_batch(&t, before);
  if (!rc && v->def.commit)
    rc = v->def.commit(&t, v->def.ud);
  if (!rc)
    rc = bus__txn_commit(&t);
  if (rc) {
    bus__txn_abort(&t);
    if (v->def.abort)
      v->def.abort(v, v->def.ud);
  }
  return rc;
}

int
bus_view_apply(bus_view *v, const bus_event *const *evs, size_t n) {
  return apply_n(v, evs, NULL, n);
}

int
bus_view_apply_batch(bus_view *v, const bus_batch *b) {
  size_t n = bus_batch_len(b);
  return n ? apply_n(v, NULL, b, n) : 0;
}

int
bus_view_write(bus_view *v, bus_txn **out) {
  bus_txn *t = calloc(1, sizeof *t);
  if (!t)
    return BUS_ERR(-ENOMEM, "out of memory writing view %s", v->def.name);
  int rc = bus__txn_begin_write(v, t);
  if (rc) {
    free(t);
    return rc;
  }
  t->now_ns = v->opts.effects ? bus_wall_ns() : 0;
  t->applied_before = t->c.applied;
  *out = t;
  return 0;
}

int
bus_txn_apply(bus_txn *t, const bus_event *ev) {
  return apply_seq(t, ev, ev->seq, ev->stored_ns);
}

int
bus_txn_commit(bus_txn *t) {
  int rc = end_batch(t, t->applied_before);
  if (!rc && t->v->def.commit)
    rc = t->v->def.commit(t, t->v->def.ud);
  if (!rc)
    rc = bus__txn_commit(t);
  bus_txn_end(t); /* aborts what did not commit */
  return rc;
}

void
bus_txn_decide_again(bus_txn *t) {
  t->again = 1;
}

int
bus_view_take_again(bus_view *v) {
  int again = v->again;
  v->again = 0;
  return again;
}

int
bus_view_tick(bus_view *v, int64_t now) {
  if (!v->opts.effects || !v->def.decide)
    return 0;
  bus_txn t;
  int rc = bus__txn_begin_write(v, &t);
  if (rc)
    return rc;
  t.now_ns = now;
  if ((rc = run_decide(&t, NULL))) {
    bus__txn_abort(&t);
    return rc;
  }
  return bus__txn_commit(&t);
}
