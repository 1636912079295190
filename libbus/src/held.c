/*
 * held.c - a pull that stays open across messages (bus_consumer_opts.held),
 * the way a node reads its slice.
 *
 * nats.c's fetch sends a pull request per call, which the broker ends with
 * a status once it has handed over what there was: a node given one
 * desired state at a time costs the broker a request, the message, a
 * status and an ack for each, six messages with the writer's append and
 * its answer. Here one request for up to HELD_BATCH messages, expiring
 * after the caller's wait, stays open: the broker pushes each message
 * into the consumer's own inbox as it is stored, and a fetch hands over
 * whatever has come, and what the broker says is still pending right
 * behind it (a consumer made anew hands over every pod's state at once:
 * one batch, one ack); a delivery is then the message and its ack.
 *
 * A new request goes out only when the last one is over: expired (408),
 * its batch used up, or given up on: the connection reconnected (the
 * broker may be a restarted one that forgot it; a wait is cut into
 * HELD_TICK_MS slices to notice), or no end came HELD_GRACE_MS after its
 * expiry. A consumer deleted under an open request (its stream made anew)
 * is told by the broker at once ("409 Consumer Deleted"), a request to a
 * consumer that is gone is answered 503: both are BUS_ENOT_FOUND, so the
 * reader opens the consumer again at once instead of waiting out its
 * request.
 *
 * The messages carry their $JS.ACK reply subject as a fetch's do: the
 * batch reads their delivery numbering (the ordered check) and stored
 * time from it. One thread uses a consumer, so no lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "nats-int.h"

#define HELD_BATCH 1000
#define HELD_TICK_MS 1000
#define HELD_GRACE_MS 2000

struct bus__held {
  natsSubscription *sub;
  char inbox[192];
  int open;                 /* a request is outstanding */
  int left;                 /* messages it may still bring */
  int64_t ends_ms;          /* its expiry, monotonic */
  unsigned long reconnects; /* the connection's count when it was sent */
  unsigned long mark;       /* the denials count when it was sent */
};

static int
held_new(bus_consumer *k) {
  unsigned char rnd[12];
  char hex[25];
  bus__held *h = calloc(1, sizeof *h);
  if (!h)
    return BUS_ERR(-ENOMEM, "out of memory");
  randombytes_buf(rnd, sizeof rnd);
  sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
  snprintf(h->inbox, sizeof h->inbox, "%s.%s", k->c->inbox_prefix, hex);
  natsStatus s = natsConnection_SubscribeSync(&h->sub, k->c->nc, h->inbox);
  if (s != NATS_OK) {
    natsSubscription_Destroy(h->sub);
    free(h);
    return bus__nats_err(s, 0, "the slice's inbox");
  }
  k->held = h;
  return 0;
}

void
bus__held_free(bus_conn *c, bus__held *h) {
  if (!h)
    return;
  /* its request may still be open: the broker delivering into it */
  bus__sub_done(c, h->sub);
  free(h);
}

/* Send a request for up to HELD_BATCH messages, held wait_ms. */
static int
request(bus_consumer *k, bus__held *h, int wait_ms) {
  char subject[BUS_SUBJECT_MAX], body[96];
  snprintf(subject, sizeof subject, "$JS.API.CONSUMER.MSG.NEXT.%s.%s",
           k->stream, k->name);
  snprintf(body, sizeof body, "{\"batch\":%d,\"expires\":%lld}", HELD_BATCH,
           (long long)wait_ms * 1000000LL);
  h->mark = atomic_load(&k->c->denied);
  natsStatus s =
      natsConnection_PublishRequestString(k->c->nc, subject, h->inbox, body);
  if (s != NATS_OK)
    return bus__nats_err(s, 0, subject);
  h->open = 1;
  h->left = HELD_BATCH;
  h->ends_ms = bus_mono_ms() + wait_ms;
  h->reconnects = atomic_load(&k->c->reconnects);
  return 0;
}

/*
 * One thing that came on the inbox: a message into list (owned by it
 * then), or a status about the request. 1 when a message was taken, 0
 * otherwise, BUS_ENOT_FOUND when the consumer is gone.
 */
static int
take(bus__held *h, natsMsg *m, natsMsgList *list) {
  const char *st = NULL, *why = NULL;
  if (natsMsgHeader_Get(m, "Status", &st) != NATS_OK || !st) {
    list->Msgs[list->Count++] = m;
    h->open = --h->left > 0;
    return 1;
  }
  natsMsgHeader_Get(m, "Description", &why);
  int gone = !strcmp(st, "409") && bus__pull_end(why) == BUS_ENOT_FOUND;
  if (strcmp(st, "100")) /* anything but a heartbeat ends the request */
    h->open = 0;
  natsMsg_Destroy(m);
  return gone ? BUS_ERR(BUS_ENOT_FOUND, "the consumer was deleted") : 0;
}

/* Wait up to ms for the next thing on the inbox and take it; 0 with
 * nothing when the time passed. */
static int
next(bus__held *h, int ms, natsMsgList *list) {
  natsMsg *m = NULL;
  natsStatus s = natsSubscription_NextMsg(&m, h->sub, ms > 0 ? ms : 1);
  if (s == NATS_TIMEOUT)
    return 0;
  if (s == NATS_NO_RESPONDERS) {
    h->open = 0;
    return BUS_ERR(BUS_ENOT_FOUND, "fetch: no responders (the consumer is "
                                   "gone, or JetStream is not answering)");
  }
  if (s != NATS_OK)
    return bus__nats_err(s, 0, "the slice's inbox");
  return take(h, m, list);
}

/* Take what already waits on the inbox, up to max messages in all. */
static int
take_queued(bus__held *h, int max, natsMsgList *list) {
  int queued = 0, rc = 0;
  if (natsSubscription_GetPending(h->sub, &queued, NULL) != NATS_OK)
    queued = 0;
  for (; queued > 0 && list->Count < max && rc >= 0; queued--)
    rc = next(h, 1, list);
  return rc < 0 ? rc : 0;
}

/* Has the open request been lost: a reconnection since it was sent, or
 * no end long after its expiry? */
static void
check_lost(bus_consumer *k, bus__held *h) {
  if (h->open && (atomic_load(&k->c->reconnects) != h->reconnects ||
                  bus_mono_ms() > h->ends_ms + HELD_GRACE_MS))
    h->open = 0;
}

/* The broker's count of messages still pending behind the last one
 * taken (from its $JS.ACK reply). */
static uint64_t
pending_after(const natsMsgList *list) {
  bus__meta m = {0};
  const char *reply =
      list->Count ? natsMsg_GetReply(list->Msgs[list->Count - 1]) : NULL;
  return reply && bus__ack_meta(reply, &m) == 0 ? m.pending : 0;
}

int
bus__held_fetch(bus_consumer *k, int max, int timeout_ms, natsMsgList *list) {
  memset(list, 0, sizeof *list);
  if (!k->held && held_new(k) < 0)
    return BUS_ERR(BUS_ECONN, "%s", bus_last_error());
  bus__held *h = k->held;
  if (!(list->Msgs = calloc((size_t)max, sizeof *list->Msgs)))
    return BUS_ERR(-ENOMEM, "out of memory");
  check_lost(k, h);
  int rc = take_queued(h, max, list);
  if (rc < 0 || list->Count > 0)
    return rc;
  if (!h->open && (rc = request(k, h, timeout_ms > 0 ? timeout_ms : 1)) < 0)
    return rc;
  int64_t until = bus_mono_ms() + timeout_ms;
  while (list->Count == 0 && h->open) {
    int64_t left = until - bus_mono_ms();
    if (left <= 0)
      break;
    if ((rc = next(h, left < HELD_TICK_MS ? (int)left : HELD_TICK_MS, list)) <
        0)
      return rc;
    check_lost(k, h);
  }
  if (list->Count == 0 && bus__denied_since(k->c, h->mark))
    return BUS_ERR(BUS_EDENIED, "permission denied pulling from %s on %s",
                   k->name, k->stream);
  rc = take_queued(h, max, list);
  while (rc >= 0 && list->Count > 0 && list->Count < max && h->open &&
         pending_after(list) > 0 && bus_mono_ms() < until)
    rc = next(h, HELD_TICK_MS, list);
  return rc < 0 ? rc : 0;
}
