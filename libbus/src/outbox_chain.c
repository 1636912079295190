/*
 * outbox_chain.c - a chain of outbox entries on one checked subject,
 * published in one round trip.
 *
 * A decide pass may put several events on one subject whose every event
 * carries the version it was decided on (the scheduler's placement log:
 * one job.placed per Job, each on top of the one before). The first is
 * checked at the version the pass saw; each next one's prev is the
 * sequence of the one before it, which only the broker gives. One append
 * after the other would cost a round trip per event. Instead the stream's
 * last sequence L is read once and the chain is sent at once (pipe.c),
 * each event predicting that it follows the one before with nothing
 * between: the first checked at its own prev, event i (i > 0) with prev
 * L + i and two checks by the broker: the subject's last sequence is
 * L + i, and the stream's last message is event i - 1 (by its id). Both
 * hold exactly when event i - 1 landed at L + i, so every event that
 * lands is on top of the one before, as if each had waited for the
 * other's answer; another writer's event where event i - 1 should be (a
 * second scheduler's placement) does not satisfy them.
 *
 * When another writer appends to the stream meanwhile, the prediction
 * fails from there on: what landed before stays (each of it checked),
 * the rest is refused and dropped, and the view decides it again on top
 * of what landed. Fates, per entry, for the outbox: 1 landed, 2 dropped
 * (refused, not ours there), 0 kept (no answer: sent again with the same
 * ids). A refusal looks once at the subject's last event: one of the
 * chain's own (a chain sent before a crash) means it and those before it
 * landed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"
#include "pipe.h"

/* The index in ids[from..n) of the subject's last event, or -1. */
static int
last_of_ours(bus_conn *c, const char *stream, const char *subject,
             const char *const *ids, size_t from, size_t n) {
  msgpack_zone zone;
  bus_event last;
  int at = -1;
  memset(&last, 0, sizeof last);
  msgpack_zone_init(&zone, 1024);
  if (bus_last_event(c, stream, subject, &last, &zone) == 0 && last.id)
    for (size_t i = from; i < n && at < 0; i++)
      if (!strcmp(last.id, ids[i]))
        at = (int)i;
  msgpack_zone_destroy(&zone);
  return at;
}

/* Send an event of the chain, its prev set, after the event whose id is
 * after (NULL for the first); its slot or < 0. */
static int
send_one(bus__pipe *p, const char *subject, const char *id, const char *after,
         bus_event *ev, msgpack_sbuffer *sb) {
  const char *type = ev->type ? ev->type : bus_type_name(ev->t);
  msgpack_sbuffer_clear(sb);
  int rc = type ? bus_event_encode(ev, sb)
                : BUS_ERR(BUS_ECORRUPT, "chained event %s has no type", id);
  return rc < 0 ? rc
                : bus__pipe_send_after(p, subject, id, type, sb->data, sb->size,
                                       BUS_APPEND_CHECK, ev->prev, after);
}

/* Send what can be sent of the chain; how many were. */
static size_t
send_chain(bus__pipe *p, const char *subject, const char *const *ids,
           bus_event *evs, size_t n, uint64_t last) {
  msgpack_sbuffer sb;
  size_t sent = 0;
  msgpack_sbuffer_init(&sb);
  bus__pipe_round(p);
  for (; sent < n; sent++) {
    if (sent)
      evs[sent].prev = last + sent; /* the one before lands at last + i */
    if (send_one(p, subject, ids[sent], sent ? ids[sent - 1] : NULL, &evs[sent],
                 &sb) < 0)
      break;
  }
  msgpack_sbuffer_destroy(&sb);
  return sent;
}

/* Settle the answers of the sent events into fate; < 0 on an error that
 * is not a refusal nor a missing answer. */
static int
settle_chain(bus__pipe *p, bus_conn *c, const char *stream, const char *subject,
             const char *const *ids, size_t sent, size_t n, int *fate) {
  bus__ack a;
  size_t i = 0;
  int rc = 0;
  for (; i < sent && (rc = bus__pipe_ack(p, (int)i, &a)) == 0; i++)
    fate[i] = 1;
  for (size_t k = i; k < n; k++)
    fate[k] = 0; /* kept unless settled below */
  if (i == sent || rc == BUS_ETIMEOUT || rc == BUS_ECONN)
    return 0;
  if (rc != BUS_ECONFLICT)
    return rc;
  int ours = last_of_ours(c, stream, subject, ids, i, n);
  for (size_t k = i; k < n; k++)
    fate[k] = ours >= 0 && k <= (size_t)ours ? 1 : 2;
  return 0;
}

int
bus__chain_publish(bus__pipe *p, bus_conn *c, const char *stream,
                   const char *subject, const char *const *ids,
                   const void *const *bodies, const size_t *lens, size_t n,
                   int *fate) {
  msgpack_zone zone;
  uint64_t last = 0;
  bus_event *evs = calloc(n ? n : 1, sizeof *evs);
  int rc = evs ? 0 : BUS_ERR(-ENOMEM, "out of memory publishing a chain");
  for (size_t i = 0; i < n; i++)
    fate[i] = 0;
  msgpack_zone_init(&zone, 4096);
  for (size_t i = 0; !rc && i < n; i++)
    rc = bus_event_decode(bodies[i], lens[i], &evs[i], &zone);
  if (!rc)
    rc = bus_stream_last_seq(c, stream, &last);
  if (!rc) {
    size_t sent = send_chain(p, subject, ids, evs, n, last);
    rc = settle_chain(p, c, stream, subject, ids, sent, n, fate);
  }
  if (rc == BUS_ETIMEOUT || rc == BUS_ECONN)
    rc = 0; /* every fate left 0: kept */
  msgpack_zone_destroy(&zone);
  free(evs);
  return rc;
}
