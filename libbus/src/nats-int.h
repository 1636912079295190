/*
 * nats-int.h - the libbus files that speak to nats.c share this.
 *
 * Only libbus includes <nats/nats.h>; natsStatus and jsErrCode are turned
 * into BUS_E* codes by bus__nats_err, at the call that produced them.
 */
#ifndef LARK_NATS_INT_H
#define LARK_NATS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <nats/nats.h>

#include "bus-int.h"

typedef struct bus__serve_list bus__serve_list;

#define BUS__RETIRED 16

struct bus_conn {
  natsConnection *nc;
  jsCtx *js;
  int js_wait_ms;
  char inbox_prefix[128]; /* "_INBOX" unless the options named another */
  char pub[BUS_NKEY_PUB_LEN + 1];
  char creds[4096];       /* the seed file, read again for each signature */
  atomic_ulong zero_sigs; /* signatures refused for their zero first byte */
  int on_loop; /* driven by the caller's event loop (bus_conn_loop) */

  /* async appends: one reused encode buffer, failures counted by the
   * publish-ack error handler on nats.c's thread */
  pthread_mutex_t enc_mu;
  msgpack_sbuffer enc;
  atomic_ulong async_failed;
  atomic_int async_err; /* the first failure's BUS_E* code since flush */

  /* asynchronous "Permissions Violation" reports, counted so that a
   * timed-out call can tell a denial from a slow broker */
  atomic_ulong denied;

  /* reconnections so far: a consumer checks it is still there after one
   * (a broker restart forgets consumers kept in memory) */
  atomic_ulong reconnects;

  pthread_mutex_t serve_mu;
  struct bus_serve *serves; /* live serve handles, freed on close */

  /* nats.c calls the handlers above on a thread of its own, from a queue,
   * in order: close waits for the connection's "closed" call, which comes
   * after every call queued before it, so none runs on freed memory.
   * made counts the connections made, closed the "closed" calls come. */
  pthread_mutex_t closed_mu;
  pthread_cond_t closed_cv;
  unsigned made, closed;

  /* closed consumers' subscriptions, destroyed later (bus__retire_sub) */
  natsSubscription *retired[BUS__RETIRED];
  size_t nretired; /* how many were ever retired; the ring is mod the size */
};

/*
 * Destroy sub later: when BUS__RETIRED more have been retired, or when
 * the connection closes (at once when it is closed already). nats.c 3.4.1's
 * read loop can touch a subscription that another thread is destroying (fixed
 * in 3.6: a message for it arriving just then crashes the process), and a pull
 * subscription's last status can arrive after its fetch gave up. Once no
 * more requests go out for it, nothing else comes.
 */
void bus__retire_sub(bus_conn *c, natsSubscription *sub);

/* Done with a plain (not JetStream) subscription to which messages may
 * still be on their way: unsubscribed now and retired (above). NULL is
 * nothing. */
void bus__sub_done(bus_conn *c, natsSubscription *sub);

/*
 * Translate a nats.c failure into a BUS_E* code and record the detail
 * ("what: nats text (jetstream code)") for bus_last_error().
 */
int bus__nats_err(natsStatus s, jsErrCode jerr, const char *what);
/* The BUS_E* code of a JetStream error code the broker answered with (a
 * request's, a publish's, an async publish's), 0 for one without a code
 * of its own. One table for every path. */
int bus__js_code(int jerr);

/* jsOptions with the connection's JetStream wait. */
void bus__js_opts(const bus_conn *c, jsOptions *o);

/* The publish-ack error handler of the connection's JetStream context
 * (append.c): counts async failures. */
void bus__append_failed(jsCtx *js, jsPubAckErr *pae, void *closure);

/* 1 if a permissions violation was reported since mark was read. */
int bus__denied_since(const bus_conn *c, unsigned long mark);

/* ---- shared by consumer.c, batch.c and reader.c: the batch, the $JS.ACK
 * metadata parser and a fetch that treats timeouts as "nothing yet". */

typedef struct bus__held bus__held;

struct bus_consumer {
  bus_conn *c;
  natsSubscription *sub;
  int ephemeral;
  int ack_all;              /* AckAll: one ack of a batch's last message */
  int held_on;              /* opts.held: read through held.c */
  bus__held *held;          /* its inbox and request, once it fetched */
  unsigned long reconnects; /* the connection's count at the last check */
  int64_t checked_ms;       /* when it was last found on the broker */
  int ordered;              /* check delivery numbering (opts.ordered) */
  int broken;               /* a hole was found: the next fetch says so */
  uint64_t next_cseq;       /* the next first delivery's number */
  char stream[64];
  char name[64];
};

struct bus_batch {
  natsMsgList list; /* owned; Count never changes, dropped slots are NULL */
  size_t n;         /* messages in use (<= list.Count) */
  size_t cap;
  bus_event *evs;
  int *status;
  uint64_t *cseq; /* each message's consumer sequence; 0: none (no $JS.ACK) */
  msgpack_zone zone;
  int ack_last; /* filled from an AckAll consumer: ack the last only */
  /* filled from a plain subscription (held.c), which nats.c's acks do
   * not know: acked by a "+ACK" to each reply on this connection */
  natsConnection *ack_nc;
};

typedef struct bus__meta {
  uint64_t sseq, cseq, pending;
  int64_t ns;
} bus__meta;

/* Drop the first k messages of a batch (freed); the rest move down. */
void bus__batch_drop_head(bus_batch *b, size_t k);

/* Parse a $JS.ACK reply subject; -1 when it is not one. */
int bus__ack_meta(const char *reply, bus__meta *m);
/* Fetch into list: up to max, as soon as any are there, waiting at most
 * timeout_ms (0: a short look); 0 with an empty list on a timeout. */
/* held.c: a fetch through the pull request that stays open (as bus__fetch
 * fills list; on failure too, for the caller to destroy), and the end of
 * it when the consumer closes. */
int bus__held_fetch(bus_consumer *k, int max, int timeout_ms,
                    natsMsgList *list);
void bus__held_free(bus_conn *c, bus__held *h);

int bus__fetch(natsSubscription *sub, int max, int timeout_ms,
               natsMsgList *list);
int bus__batch_fill(bus_batch *b, natsMsgList *list, bus__meta *last);
void bus__batch_truncate(bus_batch *b, size_t keep);

/*
 * Delivery order for a reader that holds the stream up to applied: the
 * index of the first message of b it does not hold whose consumer
 * sequence is not *next_cseq (the one after the last it took), or b->n.
 * *next_cseq moves past every message before that index.
 */
size_t bus__batch_in_order(const bus_batch *b, uint64_t applied,
                           uint64_t *next_cseq);
/* Messages nats.c holds for k, not yet fetched (0 for a held pull). */
int bus__consumer_queued(bus_consumer *k);
/* What the words of a status that ended a pull request say (its
 * Description, or nats.c's text for it): BUS_ECONN for "Server Shutdown"
 * and "Leadership Change" (ask again), BUS_ENOT_FOUND for "Consumer
 * Deleted", 0 for anything else or NULL. One reading for both pulls. */
int bus__pull_end(const char *why);
/* The view's lag as the consumer sees it: messages of its filter not yet
 * delivered, plus those delivered and not acknowledged; and the number
 * of the consumer's last delivery into *delivered. */
int bus__consumer_lag(bus_consumer *k, uint64_t *lag, uint64_t *delivered);
/* The stored time of the message at seq; BUS_ENOT_FOUND if it is gone. */
int bus__stream_msg_time(bus_conn *c, const char *stream, uint64_t seq,
                         int64_t *ns);

#endif
