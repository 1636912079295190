/*
 * outbox.c - decisions written with the view, published after commit.
 *
 * decide() emits into the _outbox table inside the same transaction that
 * applies its cause, so a decision exists exactly when the state it was
 * made from does. Publishing happens later, from a read of the outbox:
 * - each entry is appended with the broker's check and a deterministic id,
 *   so publishing twice (a crash between publish and delete) is refused by
 *   the dedupe window or by the check;
 * - on a conflict we read the subject's last message: our own id there
 *   means the effect already landed, even after the dedupe window passed;
 *   anything else means the world moved on: the entry is dropped, and the
 *   view decides again when it applies the newer event;
 * - a timeout or lost connection stops the drain; the entry stays and is
 *   tried again, with the same id.
 * Entries go out a flight at a time, without waiting for each answer
 * (pipe.c); their answers are then taken in emit order and each entry is
 * settled by its own, as above. The broker stores one stream's appends
 * in the order they were sent, so a checked entry flies only with
 * entries of its own stream (publish_run): it meets the same log, and
 * keeps the same place among the other streams' entries, as one append
 * at a time gave it. The first entry kept or failed stops the drain: it
 * and those after it stay in the outbox, and those of them that did land
 * are duplicates the next time (same id), or found landed by the check.
 *
 * An unchecked entry for a node's stream (lark.node.<node>.>) is also sent,
 * just before its run is appended, as a core message on the node's push subject
 * (push_copies): the node has its desired state at the cost of a core
 * message, and the stored copy follows as the node's reliable path.
 *
 * A chain (a checked entry and the BUS_APPEND_CHAIN entries after it on
 * its subject: several decisions of one pass on one checked subject) goes
 * out at once on its own (outbox_chain.c), each entry checked on top of
 * the one before; what lands of it is done, the rest dropped or kept.
 *
 * bus_txn_emit_decided and bus_txn_emit_once are decide's usual emit: the
 * id derived from what was decided, so a second decision is the same one.
 *
 * Entry: key u64be (emit order); value
 *   u8 flags | u16be len(subject) | u8 len(id) | subject | id | event
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nats-int.h"
#include "pipe.h"
#include "view-int.h"

#define DRAIN_CHUNK 1024

int
bus_txn_emit(bus_txn *t, const char *subject, const bus_event *ev, int flags) {
  size_t slen = strlen(subject);
  if (!t->txn || slen == 0 || slen > 0xffff)
    return BUS_ERR(BUS_EINVAL, "emit needs a write transaction and a subject");
  bus_event e = *ev;
  char id[33];
  const char *cause_id = t->cause ? t->cause->id : "";
  if (!e.cause)
    e.cause = cause_id;
  if (!e.id) {
    bus_event_derive_id(e.cause, t->emit_index++, id);
    e.id = id;
  }
  if (e.ts == 0)
    e.ts = t->cause ? t->cause->ts : t->now_ns;
  if (!e.v)
    e.v = BUS_SCHEMA_VERSION;
  size_t idlen = strlen(e.id);
  if (idlen > 0xff)
    return BUS_ERR(BUS_EINVAL, "event id too long");

  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  unsigned char head[4] = {(unsigned char)flags, (unsigned char)(slen >> 8),
                           (unsigned char)slen, (unsigned char)idlen};
  msgpack_sbuffer_write(&sb, (const char *)head, sizeof head);
  msgpack_sbuffer_write(&sb, subject, slen);
  msgpack_sbuffer_write(&sb, e.id, idlen);
  int rc = bus_event_encode(&e, &sb);
  if (rc == 0) {
    unsigned char key[8];
    bus_put_be64(key, ++t->c.outbox_next);
    rc = bus_txn_put(t, BUS__T_OUTBOX, key, sizeof key, sb.data, sb.size);
  }
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
emit_decided(bus_txn *t, const bus_decider *by, const char *subject,
             bus_type type, const void *data, const char *id, uint64_t prev,
             int flags) {
  bus_event ev = {.t = type,
                  .typed = data,
                  .id = id,
                  .ts = by->ts,
                  .actor = by->actor,
                  .cause = by->cause,
                  .prev = prev};
  return bus_txn_emit(t, subject, &ev, flags);
}

int
bus_txn_emit_decided(bus_txn *t, const bus_decider *by, const char *subject,
                     bus_type type, const void *data, const char *id_src,
                     uint64_t prev, int flags) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  return emit_decided(t, by, subject, type, data, id, prev, flags);
}

int
bus_txn_emit_once(bus_txn *t, const bus_decider *by, const char *subject,
                  bus_type type, const void *data, const char *id_src,
                  uint64_t prev) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  if (bus_txn_marked(t, id, strlen(id)) == 1)
    return 0;
  int rc = emit_decided(t, by, subject, type, data, id, prev, BUS_APPEND_CHECK);
  return rc ? rc : bus_txn_mark(t, id, strlen(id));
}

/* An entry as read: its value copied once, subject and id NUL-ended in
 * the copy, the event after them. */
typedef struct entry {
  unsigned char key[8];
  int flags;
  char *copy; /* subject \0 id \0 event */
  const char *subject, *id;
  const void *body;
  size_t len;
} entry;

typedef struct chunk {
  entry e[DRAIN_CHUNK];
  int n;
} chunk;

static int
take_entry(const void *key, size_t klen, const void *val, size_t vlen,
           void *ud) {
  chunk *c = ud;
  const unsigned char *p = val;
  if (klen != 8 || vlen < 4)
    return BUS_ERR(BUS_ECORRUPT, "outbox entry malformed");
  size_t slen = ((size_t)p[1] << 8) | p[2], idlen = p[3];
  if (4 + slen + idlen > vlen || slen >= BUS_SUBJECT_MAX)
    return BUS_ERR(BUS_ECORRUPT, "outbox entry malformed");
  entry *e = &c->e[c->n];
  if (!(e->copy = malloc(vlen - 4 + 2)))
    return BUS_ERR(-ENOMEM, "out of memory reading the outbox");
  memcpy(e->key, key, 8);
  e->flags = p[0];
  memcpy(e->copy, p + 4, slen);
  e->copy[slen] = 0;
  memcpy(e->copy + slen + 1, p + 4 + slen, idlen);
  e->copy[slen + 1 + idlen] = 0;
  e->len = vlen - 4 - slen - idlen;
  memcpy(e->copy + slen + idlen + 2, p + 4 + slen + idlen, e->len);
  e->subject = e->copy;
  e->id = e->copy + slen + 1;
  e->body = e->copy + slen + idlen + 2;
  return ++c->n == DRAIN_CHUNK ? 1 : 0;
}

static int
read_chunk(bus_view *v, chunk *c) {
  bus_txn *t;
  c->n = 0;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = bus_txn_scan(t, BUS__T_OUTBOX, NULL, 0, take_entry, c);
  bus_txn_end(t);
  return rc == 1 ? 0 : rc;
}

/*
 * After a conflict: did our own event land? 1 yes, 0 no (someone else's
 * write is there), negative on error.
 */
static int
landed(bus_conn *c, const char *stream, const entry *e) {
  uint64_t seq;
  int rc = bus__last_is(c, stream, e->subject, e->id, &seq);
  return rc == BUS_ENOT_FOUND || rc == BUS_EMALFORMED ? 0 : rc;
}

/* Send an entry's event as it was encoded at emit, with its check: its
 * slot in the pipe, or < 0. */
static int
send_entry(bus__pipe *p, const entry *e) {
  msgpack_zone zone;
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  msgpack_zone_init(&zone, 1024);
  int rc = bus_event_decode(e->body, e->len, &ev, &zone);
  const char *type = ev.type ? ev.type : bus_type_name(ev.t);
  if (rc == 0 && !type)
    rc = BUS_ERR(BUS_ECORRUPT, "outbox entry %s has no type", e->id);
  if (rc == 0)
    rc = bus__pipe_send(p, e->subject, e->id, type, e->body, e->len, e->flags,
                        ev.prev);
  msgpack_zone_destroy(&zone);
  return rc;
}

/* An entry's fate from its answer: 1 done (delete it), 2 dropped (the
 * world moved on), 0 keep (tried again, same id), < 0 an error. */
static int
settle(bus_conn *c, const char *stream, const entry *e, int rc) {
  if (rc == 0)
    return 1;
  if (rc == BUS_ECONFLICT) {
    int l = landed(c, stream, e);
    return l < 0 ? 0 : (l ? 1 : 2);
  }
  if (rc == BUS_ETIMEOUT || rc == BUS_ECONN)
    return 0;
  return rc;
}

/* How much of a subject names its stream, as far as order goes:
 * "lark.node.<node>" for a node's stream, else its first two tokens
 * ("lark.ev", "lark.run", ...). */
static size_t
stream_part(const char *subject) {
  int dots = strncmp(subject, "lark.node.", 10) ? 2 : 3;
  size_t i = 0;
  while (subject[i] && !(subject[i] == '.' && --dots == 0))
    i++;
  return i;
}

/*
 * The entries in flight, unanswered: sending one more must not let it
 * overtake, or be overtaken by, a checked entry. The broker stores one
 * stream's appends in the order they came, but streams apart, so a
 * checked entry goes out only behind entries of its own stream, and
 * nothing of another stream goes out behind it (the order one synchronous
 * append at a time gave them: a checked decision is in the log before
 * anything decided after it is sent, and after everything before it).
 */
typedef struct flight {
  const char *subject; /* the first one's */
  size_t part;         /* stream_part of it */
  int n, checked, mixed;
} flight;

static int
may_join(flight *f, const entry *e) {
  int checked = e->flags & BUS_APPEND_CHECK;
  size_t part = stream_part(e->subject);
  int same = f->n && part == f->part && !strncmp(e->subject, f->subject, part);
  if (!f->n)
    *f = (flight){e->subject, part, 0, checked, 0};
  else if (!(same && !f->mixed) && (checked || f->checked))
    return 0;
  f->mixed |= f->n && !same;
  f->checked |= checked;
  f->n++;
  return 1;
}

/* The longest a run's appends are held back behind its pushes. */
#define PUSH_LEAD_MAX_MS 25

/*
 * A run's appends wait for its pushes to be routed (a flush: the broker
 * answers it once it has handed every push to its node's connection),
 * and then as long again (at most PUSH_LEAD_MAX_MS in all). Each append
 * sets off the broker's store, answer, delivery and ack work for the same
 * nodes; sent at once, that work shares the broker's CPU with writing the
 * pushes out: a gang's last push followed its first by 25-27 ms on
 * average, 18-22 with the lead (docs/BENCHMARKS.md, "The pushes' lead").
 * The flush's time is the broker's work of routing them: near nothing
 * when no node listens, so a run nobody is pushed to waits for little
 * more than a round trip.
 */
static void
push_lead(bus_conn *c) {
  int64_t t0 = bus_mono_ns();
  if (natsConnection_FlushTimeout(c->nc, PUSH_LEAD_MAX_MS) != NATS_OK)
    return; /* the appends wait for their answers anyway */
  int64_t took = bus_mono_ns() - t0;
  int64_t left = PUSH_LEAD_MAX_MS * 1000000LL - took;
  struct timespec ts = {0, (long)(took < left ? took : left)};
  if (ts.tv_nsec > 0)
    nanosleep(&ts, NULL);
}

/*
 * The node-stream entries of ch->e[from..to), each as a core message on
 * its node's push subject (bus_node_push_subject) before any of them is
 * appended: the broker reads a connection's messages in order, and an
 * append costs it far more than a core message. Then the appends wait a
 * little (push_lead). Best effort: what is not delivered reaches the node
 * through its stream, and what comes twice is the same version
 * (edge/slice.c keeps only newer ones). Unchecked entries only: they are
 * never dropped, so each push is stored after it (now, or by a later
 * drain); a checked one may lose its conflict. None while the connection
 * is down: they would only fill nats.c's reconnect buffer, each drain
 * tried meanwhile adding the run again.
 */
static void
push_copies(bus_conn *c, const chunk *ch, int from, int to) {
  char push[BUS_SUBJECT_MAX];
  int n = 0;
  if (natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED)
    return;
  for (int i = from; i < to; i++)
    if (!(ch->e[i].flags & BUS_APPEND_CHECK) &&
        bus_node_push_subject(ch->e[i].subject, push, sizeof push) == 0) {
      bus_conn_publish(c, push, ch->e[i].body, ch->e[i].len);
      n++;
    }
  if (n)
    push_lead(c);
}

/*
 * Publish ch->e[from..to) a flight at a time (as many entries as may go
 * out together, above), settling each flight's entries in order from
 * their answers, each as a synchronous append would be (see the top).
 * Stops at the first entry kept or failed: it and every entry after it
 * stay, and are sent again with the same ids (duplicates of those that
 * landed are dropped by the broker, or found landed by the check).
 * Returns how many entries are settled; *err is the failure that stopped
 * it (BUS_ENO_STREAM when a subject had no stream: the service may make
 * it, bus_service_opts.repair).
 */
static int
publish_run(bus__pipe *p, bus_conn *c, const char *stream, const chunk *ch,
            int from, int to, int *fate, uint64_t *pub, uint64_t *drop,
            int *err) {
  int sent = from, done = from;
  bus__ack a;
  bus__pipe_round(p);
  *err = 0;
  push_copies(c, ch, from, to);
  while (done < to && *err >= 0) {
    flight f = {0};
    while (sent < to && may_join(&f, &ch->e[sent]) &&
           (*err = send_entry(p, &ch->e[sent])) >= 0)
      sent++;
    for (; done < sent; done++) {
      fate[done] =
          settle(c, stream, &ch->e[done], bus__pipe_ack(p, done - from, &a));
      if (fate[done] <= 0) {
        *err = fate[done];
        return done;
      }
      fate[done] == 1 ? (*pub)++ : (*drop)++;
    }
  }
  if (*err == BUS_ECONN || *err == BUS_ETIMEOUT)
    *err = 0; /* not sent: kept for the next drain */
  return done;
}

/* Does a chain (BUS_APPEND_CHAIN) start at ch->e[i]: a checked entry with
 * chained ones after it on its subject, or a chained entry alone? */
static int
chain_at(const chunk *ch, int i) {
  return (ch->e[i].flags & BUS_APPEND_CHAIN) ||
         (i + 1 < ch->n && (ch->e[i + 1].flags & BUS_APPEND_CHAIN) &&
          !strcmp(ch->e[i + 1].subject, ch->e[i].subject));
}

/* The end of the chain at ch->e[from]: its chained entries after it. */
static int
chain_end(const chunk *ch, int from) {
  int to = from + 1;
  while (to < ch->n && (ch->e[to].flags & BUS_APPEND_CHAIN) &&
         !strcmp(ch->e[to].subject, ch->e[from].subject))
    to++;
  return to;
}

/*
 * Publish the chain ch->e[from..to) at once (outbox_chain.c), its fates
 * into fate. A chained entry whose head is not before it (an earlier
 * drain settled the head) is settled as a conflict is: found landed, or
 * dropped.
 */
static int
publish_chain(bus__pipe *p, bus_conn *c, const char *stream, const chunk *ch,
              int from, int to, int *fate) {
  const char *ids[DRAIN_CHUNK];
  const void *bodies[DRAIN_CHUNK];
  size_t lens[DRAIN_CHUNK];
  if (ch->e[from].flags & BUS_APPEND_CHAIN) {
    fate[from] = settle(c, stream, &ch->e[from], BUS_ECONFLICT);
    return fate[from] < 0 ? fate[from] : 0;
  }
  for (int i = from; i < to; i++) {
    ids[i - from] = ch->e[i].id;
    bodies[i - from] = ch->e[i].body;
    lens[i - from] = ch->e[i].len;
  }
  return bus__chain_publish(p, c, stream, ch->e[from].subject, ids, bodies,
                            lens, (size_t)(to - from), fate + from);
}

/*
 * Publish ch: runs of entries at once (publish_run), a chain at once on
 * its own (publish_chain). Returns how many entries are settled,
 * *err as publish_run's.
 */
static int
publish_chunk(bus__pipe *p, bus_conn *c, const char *stream, const chunk *ch,
              int *fate, uint64_t *pub, uint64_t *drop, int *err) {
  int done = 0;
  *err = 0;
  while (done < ch->n) {
    if (!chain_at(ch, done)) {
      int to = done + 1;
      while (to < ch->n && !chain_at(ch, to))
        to++;
      int at = publish_run(p, c, stream, ch, done, to, fate, pub, drop, err);
      if (at < to)
        return at;
      done = to;
      continue;
    }
    int to =
        (ch->e[done].flags & BUS_APPEND_CHAIN) ? done + 1 : chain_end(ch, done);
    if ((*err = publish_chain(p, c, stream, ch, done, to, fate)) < 0)
      return done;
    for (; done < to; done++) {
      if (fate[done] == 0)
        return done; /* kept, with what follows it */
      fate[done] == 1 ? (*pub)++ : (*drop)++;
    }
  }
  return done;
}

static int
delete_done(bus_view *v, const chunk *ch, const int *fate, int upto) {
  bus_txn t;
  int rc = bus__txn_begin_write(v, &t);
  for (int i = 0; !rc && i < upto; i++) {
    if (fate[i] == 2)
      t.c.dropped++;
    rc = bus_txn_del(&t, BUS__T_OUTBOX, ch->e[i].key, 8);
  }
  if (rc) {
    bus__txn_abort(&t);
    return rc;
  }
  return bus__txn_commit(&t);
}

int
bus_outbox_drain(bus_view *v, bus_conn *c, const char *stream,
                 uint64_t *published, uint64_t *dropped) {
  uint64_t pub = 0, drop = 0;
  chunk *ch = calloc(1, sizeof *ch);
  int *fate = calloc(DRAIN_CHUNK, sizeof *fate);
  bus__pipe *p = NULL;
  int rc = ch && fate ? 0 : BUS_ERR(-ENOMEM, "out of memory draining"),
      more = 1;
  while (!rc && more) {
    if ((rc = read_chunk(v, ch)) || ch->n == 0)
      break;
    if (!p && (rc = bus__pipe_open(c, &p)))
      break;
    int err = 0;
    int done = publish_chunk(p, c, stream ? stream : "LARK_EVENTS", ch, fate,
                             &pub, &drop, &err);
    more = done == ch->n;
    rc = err < 0 ? err : 0;
    int drc = done ? delete_done(v, ch, fate, done) : 0;
    if (!rc)
      rc = drc;
    for (int i = 0; i < ch->n; i++)
      free(ch->e[i].copy);
  }
  bus__pipe_close(p);
  free(fate);
  free(ch);
  if (published)
    *published = pub;
  if (dropped)
    *dropped = drop;
  return rc;
}
