/*
 * tail.c - the audit trail: LARK_EVENTS and LARK_RUNS read in order and
 * filtered, for `larkctl tail` and the gateway's events feed.
 *
 * Without a filter both streams are read, each with its own bus_reader,
 * and merged by stored time (a tie goes to LARK_EVENTS): a message is
 * handed out only when every stream that may still give one has one
 * waiting, or has nothing within the wait, so a bounded tail is in
 * stored-time order exactly and a following one as nearly as arrival
 * allows. A filter under lark.ev. or lark.run. reads its one stream.
 * Type and actor are matched here, after decoding; a message that does
 * not decode passes only when neither is asked for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"

typedef struct tail_src {
  const char *stream;
  bus_reader *r;
  bus_batch *b;
  size_t i;
  int eof;
} tail_src;

struct bus_tail {
  tail_src src[2];
  int nsrc;
  int follow;
  char type[128];
  char actor[BUS_DERIVED_NAME_MAX + 1];
};

void
bus_tail_opts_init(bus_tail_opts *o) {
  memset(o, 0, sizeof *o);
}

int
bus_type_matches(const char *want, const char *type) {
  if (!want || !*want)
    return 1;
  if (!type)
    return 0;
  size_t n = strlen(want);
  if (n >= 2 && !strcmp(want + n - 2, ".*")) /* "job.*" */
    return !strncmp(type, want, n - 1);
  return !strcmp(want, type);
}

static int
open_src(bus_conn *c, tail_src *s, const char *stream, const char *filter,
         const bus_tail_opts *t) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = stream;
  o.filter = filter;
  o.from_seq = t->from_seq ? t->from_seq : 1;
  o.since_ns = t->since_ns;
  o.follow = t->follow;
  o.direct = t->direct;
  s->stream = stream;
  int rc = bus_batch_new(&s->b);
  return rc ? rc : bus_reader_open(c, &o, &s->r);
}

static int
open_all(bus_conn *c, bus_tail *t, const bus_tail_opts *o) {
  const char *f = o->filter;
  int rc;
  if (!f) {
    rc = open_src(c, &t->src[t->nsrc++], "LARK_EVENTS", "lark.ev.>", o);
    return rc ? rc
              : open_src(c, &t->src[t->nsrc++], "LARK_RUNS", "lark.run.>", o);
  }
  if (!strncmp(f, "lark.ev.", 8))
    return open_src(c, &t->src[t->nsrc++], "LARK_EVENTS", f, o);
  if (!strncmp(f, "lark.run.", 9))
    return open_src(c, &t->src[t->nsrc++], "LARK_RUNS", f, o);
  return BUS_ERR(BUS_EINVAL,
                 "a filter starts with lark.ev. or lark.run. (e.g. "
                 "lark.ev.job.>, lark.run.train-1): %s",
                 f);
}

int
bus_tail_open(bus_conn *c, const bus_tail_opts *o, bus_tail **out) {
  bus_tail *t = NULL;
  *out = NULL;
  if ((o->type && strlen(o->type) >= sizeof t->type) ||
      (o->actor && strlen(o->actor) >= sizeof t->actor))
    return BUS_ERR(BUS_EINVAL, "type or actor too long");
  t = calloc(1, sizeof *t);
  if (!t)
    return BUS_ERR(-ENOMEM, "out of memory");
  t->follow = o->follow;
  snprintf(t->type, sizeof t->type, "%s", o->type ? o->type : "");
  snprintf(t->actor, sizeof t->actor, "%s", o->actor ? o->actor : "");
  int rc = open_all(c, t, o);
  if (rc) {
    bus_tail_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

void
bus_tail_close(bus_tail *t) {
  if (!t)
    return;
  for (int k = 0; k < t->nsrc; k++) {
    bus_reader_close(t->src[k].r);
    bus_batch_free(t->src[k].b);
  }
  free(t);
}

/* Make sure s has a message at s->i, unless it has ended or none came
 * within timeout_ms. */
static int
refill(bus_tail *t, tail_src *s, int timeout_ms) {
  if (s->eof || !s->r || s->i < bus_batch_len(s->b))
    return 0;
  s->i = 0;
  int rc = bus_reader_next(s->r, s->b, timeout_ms);
  if (rc == BUS_EEOF && !t->follow)
    s->eof = bus_batch_len(s->b) == 0;
  else if (rc < 0 && rc != BUS_EEOF && rc != BUS_ETIMEOUT)
    return rc;
  return 0;
}

static int64_t
head_time(const tail_src *s) {
  int64_t stored;
  bus_batch_meta(s->b, s->i, NULL, NULL, &stored);
  return stored;
}

static tail_src *
earliest(bus_tail *t) {
  tail_src *best = NULL;
  for (int k = 0; k < t->nsrc; k++) {
    tail_src *s = &t->src[k];
    if (s->i < bus_batch_len(s->b) && (!best || head_time(s) < head_time(best)))
      best = s;
  }
  return best;
}

static int
matches(const bus_tail *t, const bus_event *ev) {
  if (!t->type[0] && !t->actor[0])
    return 1;
  return ev && bus_type_matches(t->type, ev->type) &&
         (!t->actor[0] || !strcmp(t->actor, ev->actor));
}

/* Take s's head into m; 1 when it passes the filters. */
static int
take(bus_tail *t, tail_src *s, bus_tail_msg *m) {
  memset(m, 0, sizeof *m);
  m->stream = s->stream;
  bus_batch_meta(s->b, s->i, &m->subject, &m->seq, &m->stored_ns);
  m->ev = bus_batch_event(s->b, s->i);
  m->status = bus_batch_status(s->b, s->i);
  s->i++;
  return matches(t, m->ev);
}

int
bus_tail_next(bus_tail *t, bus_tail_msg *m, int timeout_ms) {
  int64_t start = bus_mono_ms();
  for (;;) {
    int live = 0, left = timeout_ms - (int)(bus_mono_ms() - start);
    if (left < 0)
      left = 0;
    for (int k = 0; k < t->nsrc; k++) {
      int rc = refill(t, &t->src[k], t->nsrc > 1 ? left / t->nsrc : left);
      if (rc)
        return rc;
      live += !t->src[k].eof;
    }
    tail_src *s = earliest(t);
    if (s) {
      if (take(t, s, m))
        return 1;
      continue;
    }
    if (!live)
      return BUS_EEOF;
    if (left == 0)
      return 0;
  }
}
