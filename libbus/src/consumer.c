/*
 * consumer.c - pull consumers: open (create or join), close, delete, name,
 * their counts, and the fetch that fills a batch, with the ordered
 * consumer's check of its delivery numbering. The batch itself (what a
 * fetch fills and the caller acks) is batch.c's.
 *
 * A durable consumer is created with Config.Name == Durable, so nats.c
 * uses the filter-carrying CONSUMER.CREATE subject an edge node may
 * publish (docs/design.md section 6); the stream is always named, so no
 * STREAM.NAMES lookup is needed either. A consumer without a durable name
 * is an ephemeral pull consumer (nats.c 3.4 and server 2.7+ support it).
 * Given a name (Config.Name without Durable: server 2.9.10 makes a named
 * ephemeral), nats.c 3.4.1 creates it through the same filter-carrying
 * subject, so broker rules can pin a reader's consumer name and filter
 * without giving it durables. Either kind of ephemeral is left to the
 * server's inactive threshold on close.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "nats-int.h"

#define EPHEMERAL_IDLE_NS (10LL * 1000000000LL)

void
bus_consumer_opts_init(bus_consumer_opts *o) {
  memset(o, 0, sizeof *o);
  o->deliver = BUS_DELIVER_ALL;
  o->max_ack_pending = 20000;
  o->ack_wait_ns = INT64_C(30000000000);
}

int
bus_slice_init(bus_slice *s, const char *node) {
  memset(s, 0, sizeof *s);
  int rc = bus_node_stream_name(node, s->stream, sizeof s->stream);
  if (rc < 0)
    return rc;
  snprintf(s->durable, sizeof s->durable, "edge-%s", node);
  snprintf(s->filter, sizeof s->filter, "lark.node.%s.>", node);
  bus_consumer_opts_init(&s->opts);
  s->opts.stream = s->stream;
  s->opts.durable = s->durable;
  s->opts.filter = s->filter;
  s->opts.deliver = BUS_DELIVER_LAST_PER_SUBJECT;
  s->opts.ack_all = 1;
  s->opts.memory_state = 1;
  /* One request stays open across messages (held.c): a delivery costs
   * the broker the message and, per batch, an ack. An ack is kept: a
   * message lost on a link that looks alive (a site's leaf link blocked
   * in the middle) comes again after the ack wait, while without acks it
   * would be gone until a later one showed the hole. */
  s->opts.held = 1;
  /* With one ack per batch, a message lost on its way would be acked by
   * the next: a hole in the deliveries is reported, and the reader opens
   * the consumer again with recreate (from each pod's current state). */
  s->opts.ordered = 1;
  return 0;
}

static int
set_deliver(const bus_consumer_opts *o, jsConsumerConfig *cc) {
  switch (o->deliver) {
  case BUS_DELIVER_ALL:
    cc->DeliverPolicy = js_DeliverAll;
    break;
  case BUS_DELIVER_FROM_SEQ:
    cc->DeliverPolicy = js_DeliverByStartSequence;
    cc->OptStartSeq = o->start_seq ? o->start_seq : 1;
    break;
  case BUS_DELIVER_FROM_TIME:
    /*
     * nats.c 3.4.1 writes the fraction of OptStartTime without leading
     * zeros (12.05 s goes out as "12.5"), so a fraction under 0.1 s
     * would start the consumer up to 0.9 s late. A whole tenth of a
     * second has no leading zero: round down to one.
     */
    cc->DeliverPolicy = js_DeliverByStartTime;
    cc->OptStartTime = o->start_ns - o->start_ns % BUS_START_TIME_STEP_NS;
    break;
  case BUS_DELIVER_LAST_PER_SUBJECT:
    cc->DeliverPolicy = js_DeliverLastPerSubject;
    break;
  case BUS_DELIVER_NEW:
    cc->DeliverPolicy = js_DeliverNew;
    break;
  default:
    return BUS_ERR(BUS_EINVAL, "unknown deliver policy %d", o->deliver);
  }
  return 0;
}

/*
 * js_PullSubscribe needs a subject; without a filter, the stream's own
 * (single) subject stands for "everything".
 */
static int
default_filter(bus_conn *c, const char *stream, char *out, size_t cap) {
  jsStreamInfo *si = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetStreamInfo(&si, c->js, stream, &jo, &jerr);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
    jsStreamInfo_Destroy(si);
    return BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", stream);
  }
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, stream);
  int rc = 0;
  if (si->Config->SubjectsLen != 1)
    rc = BUS_ERR(BUS_EINVAL, "stream %s has %d subjects: name a filter", stream,
                 si->Config->SubjectsLen);
  else
    snprintf(out, cap, "%s", si->Config->Subjects[0]);
  jsStreamInfo_Destroy(si);
  return rc;
}

static int
subscribe_err(bus_conn *c, natsStatus s, jsErrCode jerr, unsigned long mark,
              const bus_consumer_opts *o) {
  if (s == NATS_TIMEOUT && bus__denied_since(c, mark))
    return BUS_ERR(BUS_EDENIED, "permission denied creating a consumer on %s",
                   o->stream);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)
    return BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", o->stream);
  return bus__nats_err(s, jerr, o->stream);
}

/*
 * A held pull reads through an inbox of its own (held.c), so it needs the
 * consumer only: made with one API request, where nats.c's pull
 * subscription first asks for the durable's info, then makes it. A fleet
 * opening its slices at once costs the broker half the requests. A
 * durable already there with the same configuration is the same one; one
 * with another is refused, as the pull subscription refused it.
 */
static natsStatus
create_held(bus_conn *c, jsSubOptions *so, jsOptions *jo, jsErrCode *jerr) {
  jsConsumerInfo *ci = NULL;
  natsStatus s = js_AddConsumer(&ci, c->js, so->Stream, &so->Config, jo, jerr);
  jsConsumerInfo_Destroy(ci);
  return s;
}

/* One subject token of printable ASCII: it goes into the create subject. */
static int
name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > BUS_SUBJECT_MAX / 2 || strpbrk(name, ".*>/\\"))
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f)
      return 0;
  return 1;
}

int
bus_consumer_open(bus_conn *c, const bus_consumer_opts *o, bus_consumer **out) {
  jsSubOptions so;
  jsOptions jo;
  jsErrCode jerr = 0;
  char filter[BUS_SUBJECT_MAX];
  int rc;
  *out = NULL;
  if (!o->stream)
    return BUS_ERR(BUS_EINVAL, "consumer needs a stream");
  if (o->filter)
    snprintf(filter, sizeof filter, "%s", o->filter);
  else if ((rc = default_filter(c, o->stream, filter, sizeof filter)) < 0)
    return rc;
  /* a durable's name wins: Name must equal Durable when both are set */
  const char *name = o->durable ? o->durable : o->name;
  if (!o->durable && name && !name_ok(name))
    return BUS_ERR(BUS_ENAME, "bad consumer name '%s'", name);
  if (o->held && !name)
    return BUS_ERR(BUS_EINVAL, "a held pull needs a named consumer");
  if (name && o->recreate) {
    rc = bus_consumer_delete(c, o->stream, name);
    if (rc < 0 && rc != BUS_ENOT_FOUND)
      return rc;
  }
  jsSubOptions_Init(&so);
  so.Stream = o->stream;
  so.Config.Durable = o->durable;
  so.Config.Name = name;
  so.Config.FilterSubject = filter;
  so.Config.AckPolicy = o->ack_none  ? js_AckNone
                        : o->ack_all ? js_AckAll
                                     : js_AckExplicit;
  so.Config.MemoryStorage = o->memory_state != 0;
  so.Config.MaxAckPending = o->ack_none ? 0 : o->max_ack_pending;
  so.Config.AckWait = o->ack_none ? 0 : o->ack_wait_ns;
  /* An ephemeral consumer is left to the server when its reader goes:
   * deleting it takes a permission users do not have (it would let them
   * delete services' durables too). */
  if (!o->durable)
    so.Config.InactiveThreshold = EPHEMERAL_IDLE_NS;
  if ((rc = set_deliver(o, &so.Config)) < 0)
    return rc;
  bus_consumer *k = calloc(1, sizeof *k);
  if (!k)
    return BUS_ERR(-ENOMEM, "out of memory");
  k->c = c;
  k->ephemeral = o->durable == NULL;
  k->ack_all = o->ack_all && !o->ack_none;
  k->held_on = o->held != 0;
  k->ordered = o->ordered;
  k->next_cseq = 1;
  k->reconnects = atomic_load(&c->reconnects);
  k->checked_ms = bus_mono_ms();
  snprintf(k->stream, sizeof k->stream, "%s", o->stream);
  snprintf(k->name, sizeof k->name, "%s", name ? name : "");
  bus__js_opts(c, &jo);
  unsigned long mark = atomic_load(&c->denied);
  natsStatus s = o->held ? create_held(c, &so, &jo, &jerr)
                         : js_PullSubscribe(&k->sub, c->js, filter, o->durable,
                                            &jo, &so, &jerr);
  if (s != NATS_OK) {
    free(k);
    return subscribe_err(c, s, jerr, mark, o);
  }
  *out = k;
  return 0;
}

void
bus_consumer_close(bus_consumer *k) {
  if (!k)
    return;
  bus__held_free(k->c, k->held);
  /* Destroy without Unsubscribe keeps the consumer (nats.c >= 3.4); an
   * ephemeral one goes after EPHEMERAL_IDLE_NS without interest. The
   * destroy waits while the connection could still deliver to it. A held
   * pull has no subscription of nats.c's (create_held). */
  if (k->sub)
    bus__retire_sub(k->c, k->sub);
  free(k);
}

int
bus_consumer_delete(bus_conn *c, const char *stream, const char *durable) {
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_DeleteConsumer(c->js, stream, durable, &jo, &jerr);
  if (s == NATS_OK)
    return 0;
  if (jerr == JSConsumerNotFoundErr || (s == NATS_NOT_FOUND && !jerr))
    return BUS_ERR(BUS_ENOT_FOUND, "no consumer %s on %s", durable, stream);
  return bus__nats_err(s, jerr, durable);
}

/* What an info says of where the consumer stands; ci is destroyed. */
static void
state_of(jsConsumerInfo *ci, bus_consumer_state *st) {
  *st = (bus_consumer_state){.pending = ci->NumPending,
                             .ack_pending = (uint64_t)ci->NumAckPending,
                             .ack_floor = ci->AckFloor.Stream,
                             .delivered = ci->Delivered.Stream,
                             .delivered_n = ci->Delivered.Consumer};
  jsConsumerInfo_Destroy(ci);
}

int
bus_consumer_state_get(bus_conn *c, const char *stream, const char *durable,
                       bus_consumer_state *st) {
  jsOptions jo;
  jsErrCode jerr = 0;
  jsConsumerInfo *ci = NULL;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetConsumerInfo(&ci, c->js, stream, durable, &jo, &jerr);
  if (s != NATS_OK) {
    if (jerr == JSConsumerNotFoundErr || jerr == JSStreamNotFoundErr)
      return BUS_ERR(BUS_ENOT_FOUND, "no consumer %s on %s", durable, stream);
    return bus__nats_err(s, jerr, durable);
  }
  state_of(ci, st);
  return 0;
}

int
bus_consumer_name(bus_conn *c, const char *prefix, char *out, size_t cap) {
  unsigned char rnd[8];
  char hex[2 * sizeof rnd + 1];
  const char *id = c->pub;
  if (!prefix || !bus_name_valid(prefix, BUS_NAME_MAX) ||
      cap < strlen(prefix) + BUS_NKEY_PUB_LEN + 2)
    return BUS_ERR(BUS_EINVAL, "consumer name: bad prefix or buffer");
  if (!id[0]) {
    randombytes_buf(rnd, sizeof rnd);
    sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
    id = hex;
  }
  snprintf(out, cap, "%s-%s", prefix, id);
  return 0;
}

/* CONSUMER.INFO by stream and name where there is a name: nats.c 3.4.1
 * knows no consumer name for a subscription that joined an existing
 * durable, and refuses to ask by subscription then. */
static natsStatus
consumer_info(bus_consumer *k, jsConsumerInfo **ci, jsErrCode *jerr) {
  jsOptions jo;
  bus__js_opts(k->c, &jo);
  if (k->name[0])
    return js_GetConsumerInfo(ci, k->c->js, k->stream, k->name, &jo, jerr);
  return natsSubscription_GetConsumerInfo(ci, k->sub, &jo, jerr);
}

/* Where k stands, from its info. */
static int
consumer_counts(bus_consumer *k, bus_consumer_state *st) {
  jsConsumerInfo *ci = NULL;
  jsErrCode jerr = 0;
  natsStatus s = consumer_info(k, &ci, &jerr);
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, k->stream);
  state_of(ci, st);
  return 0;
}

int
bus_consumer_pending(bus_consumer *k, uint64_t *pending) {
  bus_consumer_state st;
  int rc = consumer_counts(k, &st);
  if (rc == 0)
    *pending = st.pending;
  return rc;
}

int
bus__consumer_queued(bus_consumer *k) {
  int queued = 0;
  natsSubscription *sub = k->held_on ? NULL : k->sub;
  if (!sub || natsSubscription_GetPending(sub, &queued, NULL) != NATS_OK)
    return 0;
  return queued;
}

int
bus__consumer_lag(bus_consumer *k, uint64_t *lag, uint64_t *delivered) {
  bus_consumer_state st;
  int rc = consumer_counts(k, &st);
  if (rc == 0) {
    *lag = st.pending + st.ack_pending;
    *delivered = st.delivered_n;
  }
  return rc;
}

/* Timeouts and "no messages" are "nothing yet" (docs/design.md section 10). */
static int
quiet(natsStatus s) {
  return s == NATS_TIMEOUT || s == NATS_NOT_FOUND;
}

/* "409 Server Shutdown" (the server answering is going away) and "409
 * Leadership Change" (the consumer's leader moved) say to ask again,
 * where the connection is about to be, as after any lost connection. */
int
bus__pull_end(const char *why) {
  if (why &&
      (strstr(why, "Server Shutdown") || strstr(why, "Leadership Change")))
    return BUS_ECONN;
  return why && strstr(why, "Consumer Deleted") ? BUS_ENOT_FOUND : 0;
}

/* A fetch that ended with a status nats.c reads as an error: NATS_ERR
 * and the status's description. Anything bus__pull_end does not read is
 * the broker's error. */
static int
fetch_failed(natsStatus s) {
  const char *why = s == NATS_ERR ? nats_GetLastError(NULL) : NULL;
  int code = bus__pull_end(why);
  return code ? BUS_ERR(code, "fetch: %s", why) : bus__nats_err(s, 0, "fetch");
}

/* How long a fetch that should not wait gives the broker to answer. */
#define SHORT_MS 10

/*
 * One pull request does it. A no-wait request that carries an expiry is
 * held by server 2.9 until the first message is there (or the expiry),
 * then answers with what there is, up to max, and ends it at once with a
 * status ("408" at the end of the stream): a reader that keeps up pays a
 * request, its messages and one status per batch, and a lone message
 * never waits for a batch to fill. (A plain long poll would hold the
 * request until max messages came.)
 *
 * nats.c gives up on a request 10 ms after the broker would; on a loaded
 * machine the broker's last message and status can come later than that
 * and wait in the subscription. The next fetch hands those over first,
 * but then sends its own request and holds them until that one ends, so
 * with anything already waiting the request only looks (SHORT_MS).
 */
int
bus__fetch(natsSubscription *sub, int max, int timeout_ms, natsMsgList *list) {
  int queued = 0;
  if (natsSubscription_GetPending(sub, &queued, NULL) != NATS_OK)
    queued = 0;
  jsFetchRequest req;
  jsFetchRequest_Init(&req);
  req.Batch = max;
  req.NoWait = true;
  req.Expires =
      (int64_t)(timeout_ms > 0 && queued == 0 ? timeout_ms : SHORT_MS) *
      1000000;
  memset(list, 0, sizeof *list);
  natsStatus s = natsSubscription_FetchRequest(list, sub, &req);
  if (s == NATS_OK && list->Count > 0)
    return 0;
  natsMsgList_Destroy(list);
  memset(list, 0, sizeof *list);
  if (s == NATS_NO_RESPONDERS) /* server 2.10+: "503" for a consumer gone */
    return BUS_ERR(BUS_ENOT_FOUND, "fetch: no responders (the consumer is "
                                   "gone, or JetStream is not answering)");
  return s == NATS_OK || quiet(s) ? 0 : fetch_failed(s);
}

/*
 * Server 2.9 took a pull request to a consumer that is gone and said
 * nothing, so every fetch just timed out; 2.10 and later answer "503 no
 * responders", which a cluster electing its JetStream leader also says.
 * So after a reconnection (a restarted broker forgets consumers kept in
 * memory), after a 503 (forced) and every BUS_CONSUMER_CHECK_MS of empty
 * fetches, ask: BUS_ENOT_FOUND when the consumer or its stream is gone, 0
 * otherwise (a failure to ask is not an answer).
 */
static int
still_there(bus_consumer *k, int forced) {
  unsigned long now_rc = atomic_load(&k->c->reconnects);
  int64_t now = bus_mono_ms();
  if (!forced && now_rc == k->reconnects &&
      now - k->checked_ms < BUS_CONSUMER_CHECK_MS)
    return 0;
  jsConsumerInfo *ci = NULL;
  jsErrCode jerr = 0;
  natsStatus s = consumer_info(k, &ci, &jerr);
  jsConsumerInfo_Destroy(ci);
  if (jerr == JSConsumerNotFoundErr || jerr == JSStreamNotFoundErr)
    return BUS_ERR(BUS_ENOT_FOUND, "consumer %s on %s is gone", k->name,
                   k->stream);
  if (s == NATS_OK) {
    k->reconnects = now_rc;
    k->checked_ms = now;
  }
  return 0;
}

/*
 * For an ordered consumer: keep the batch up to the first hole in the
 * delivery numbering (a message numbered past the next one); a number
 * below it is a redelivery of something already handed over. After a
 * hole the consumer is broken: the caller opens it again.
 */
static void
keep_in_order(bus_consumer *k, bus_batch *b) {
  for (size_t i = 0; i < b->n; i++) {
    if (b->cseq[i] > k->next_cseq) {
      bus__batch_truncate(b, i);
      k->broken = 1;
      return;
    }
    if (b->cseq[i] == k->next_cseq)
      k->next_cseq++;
  }
}

int
bus_consumer_fetch(bus_consumer *k, int max, int timeout_ms, bus_batch *b) {
  natsMsgList list;
  bus_batch_clear(b);
  if (k->broken)
    return BUS_ERR(BUS_ENOT_FOUND,
                   "consumer %s on %s: a hole in its delivery numbering "
                   "(a message delivered and never received)",
                   k->name, k->stream);
  max = max > 0 ? max : 1;
  int rc = k->held_on ? bus__held_fetch(k, max, timeout_ms, &list)
                      : bus__fetch(k->sub, max, timeout_ms, &list);
  if (rc < 0 || list.Count == 0)
    natsMsgList_Destroy(&list);
  if (rc == BUS_ENOT_FOUND) {
    if ((rc = still_there(k, 1)) == 0) /* there: JetStream is busy */
      bus_sleep_ms(timeout_ms > 0 && timeout_ms < 1000 ? timeout_ms : 1000);
    return rc;
  }
  if (rc < 0)
    return rc;
  if (list.Count == 0)
    return still_there(k, 0);
  k->checked_ms = bus_mono_ms();
  b->ack_last = k->ack_all;
  b->ack_nc = k->held_on ? k->c->nc : NULL;
  if ((rc = bus__batch_fill(b, &list, NULL)) < 0)
    return rc;
  if (k->ordered)
    keep_in_order(k, b);
  return 0;
}
