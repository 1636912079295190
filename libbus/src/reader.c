/*
 * reader.c - ordered reading of a stream between two bounds.
 *
 * A reader is an ephemeral AckNone pull consumer fetched in large batches.
 * The upper bound is fixed at open (min(until_seq, the stream's last
 * sequence then)); anything appended later has a higher sequence, so a
 * message whose metadata says "0 pending" also ends a bounded read.
 *
 * Ordering without gaps: AckNone messages that arrive after a fetch gave
 * up are dropped by nats.c and never redelivered. Consumer sequences of
 * an AckNone consumer are consecutive, so the reader checks that each
 * batch continues the last one (and, when a fetch comes back empty, that
 * the server delivered nothing more than we saw); on a gap it drops what
 * follows the gap and recreates the consumer just after the last message
 * it returned. Callers therefore see every message in order, once.
 *
 * A direct reader (bus_reader_opts.direct) makes no consumer: each next
 * is one batch direct get, {"seq", "batch", "next_by_subj"} (or
 * "start_time" until the first message came), answered on one inbox by
 * the messages in stream order and a "204 EOB" status carrying the count
 * still pending. Its replies come on one subscription of one connection,
 * in order, so there is no gap to repair: the next request starts just
 * after the last sequence returned. max_bytes keeps a batch under the
 * subscription's pending limit. With follow, an empty answer is polled
 * again every POLL_MS until the caller's timeout.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "nats-int.h"

#define DIRECT_MAX_BYTES (8 << 20)
#define POLL_MS 100

struct bus_reader {
  bus_conn *c;
  bus_consumer *k;
  bus_consumer_opts copts;
  char stream[64];
  char filter[BUS_SUBJECT_MAX];
  uint64_t end;     /* last sequence to return; 0 with follow */
  int64_t since_ns; /* 0: none; the consumer may start a little earlier */
  int64_t until_ns; /* 0: none */
  int batch;
  int follow;
  int done;
  int direct;         /* batch direct gets, no consumer */
  uint64_t next_seq;  /* direct: the next sequence to ask for */
  uint64_t last_seq;  /* stream sequence of the last message returned */
  uint64_t last_cseq; /* its consumer sequence (0 after a (re)open) */
};

void
bus_reader_opts_init(bus_reader_opts *o) {
  memset(o, 0, sizeof *o);
  o->from_seq = 1;
  o->batch = 1024;
}

static natsSubscription *
sub_of(bus_consumer *k) {
  return k->sub;
}

/* Recreate the consumer just after from_seq - 1; from_seq 0 means nothing
 * was returned yet, so start again where the reader was opened (a start
 * sequence or a start time). */
static int
reopen(bus_reader *r, uint64_t from_seq) {
  bus_consumer_close(r->k);
  r->k = NULL;
  if (from_seq) {
    r->copts.deliver = BUS_DELIVER_FROM_SEQ;
    r->copts.start_seq = from_seq;
  }
  r->last_cseq = 0;
  return bus_consumer_open(r->c, &r->copts, &r->k);
}

int
bus_reader_open(bus_conn *c, const bus_reader_opts *o, bus_reader **out) {
  uint64_t last = 0;
  int rc;
  *out = NULL;
  if (!o->stream)
    return BUS_ERR(BUS_EINVAL, "reader needs a stream");
  if (!o->follow && (rc = bus_stream_last_seq(c, o->stream, &last)) < 0)
    return rc;
  bus_reader *r = calloc(1, sizeof *r);
  if (!r)
    return BUS_ERR(-ENOMEM, "out of memory");
  r->c = c;
  r->follow = o->follow;
  r->since_ns = o->since_ns;
  r->until_ns = o->until_ns;
  r->batch = o->batch > 0 ? o->batch : 1024;
  r->end = o->follow
               ? 0
               : (o->until_seq && o->until_seq < last ? o->until_seq : last);
  uint64_t from = o->from_seq ? o->from_seq : 1;
  bus_consumer_opts_init(&r->copts);
  r->copts.stream = r->stream;
  r->copts.ack_none = 1;
  snprintf(r->stream, sizeof r->stream, "%s", o->stream);
  if (o->filter) {
    snprintf(r->filter, sizeof r->filter, "%s", o->filter);
    r->copts.filter = r->filter;
  }
  if (o->since_ns) {
    r->copts.deliver = BUS_DELIVER_FROM_TIME;
    r->copts.start_ns = o->since_ns;
  } else {
    r->copts.deliver = BUS_DELIVER_FROM_SEQ;
    r->copts.start_seq = from;
  }
  if (!r->follow && (r->end == 0 || (!o->since_ns && r->end < from))) {
    r->done = 1; /* an empty range: no consumer needed */
    *out = r;
    return 0;
  }
  if (o->direct) {
    r->direct = 1;
    r->next_seq = o->since_ns ? 0 : from;
    if (strpbrk(r->filter, "\"\\")) {
      free(r);
      return BUS_ERR(BUS_EINVAL, "bad filter: %s", o->filter);
    }
    *out = r;
    return 0;
  }
  if ((rc = bus_consumer_open(c, &r->copts, &r->k)) < 0) {
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void
bus_reader_close(bus_reader *r) {
  if (!r)
    return;
  bus_consumer_close(r->k);
  free(r);
}

uint64_t
bus_reader_end_seq(const bus_reader *r) {
  return r->end;
}

/* Index of the first message that does not continue the sequence, or n. */
static size_t
first_gap(const bus_batch *b, uint64_t last_cseq) {
  for (size_t i = 0; i < b->n; i++) {
    uint64_t cseq = b->cseq[i];
    if (cseq == 0 || (last_cseq && cseq != last_cseq + 1))
      return i;
    last_cseq = cseq;
  }
  return b->n;
}

/* Apply the bounds to a filled batch; sets done when one is reached. */
static void
apply_bounds(bus_reader *r, bus_batch *b, const bus__meta *last) {
  size_t early = 0;
  while (r->since_ns && early < b->n && b->evs[early].stored_ns < r->since_ns)
    early++;
  bus__batch_drop_head(b, early);
  for (size_t i = 0; i < b->n; i++) {
    const bus_event *ev = &b->evs[i];
    if ((r->end && ev->seq > r->end) ||
        (r->until_ns && ev->stored_ns > r->until_ns)) {
      bus__batch_truncate(b, i);
      r->done = 1;
      return;
    }
  }
  if (!r->follow &&
      (last->pending == 0 || (b->n && b->evs[b->n - 1].seq >= r->end)))
    r->done = 1;
}

/* Nothing came: a bounded read may be over, or messages may be lost. */
static int
check_idle(bus_reader *r) {
  jsConsumerInfo *ci = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  if (r->follow)
    return 0;
  bus__js_opts(r->c, &jo);
  natsStatus s =
      natsSubscription_GetConsumerInfo(&ci, sub_of(r->k), &jo, &jerr);
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, r->stream);
  int lost = ci->Delivered.Consumer > r->last_cseq;
  int empty = ci->NumPending == 0;
  jsConsumerInfo_Destroy(ci);
  if (lost)
    return reopen(r, r->last_seq ? r->last_seq + 1 : 0);
  if (empty)
    r->done = 1;
  return 0;
}

static int direct_next(bus_reader *r, bus_batch *b, int timeout_ms);

int
bus_reader_next(bus_reader *r, bus_batch *b, int timeout_ms) {
  natsMsgList list;
  bus__meta last = {0};
  bus_batch_clear(b);
  if (r->done)
    return BUS_EEOF;
  if (r->direct)
    return direct_next(r, b, timeout_ms);
  uint64_t from = r->last_seq ? r->last_seq + 1 : 0;
  if (!r->k) /* a reopen failed last time: try again */
    return reopen(r, from);
  int rc = bus__fetch(sub_of(r->k), r->batch, timeout_ms, &list);
  if (rc == BUS_ENOT_FOUND) /* its consumer is gone (a broker restart) */
    return reopen(r, from);
  if (rc == 0)
    rc = bus__batch_fill(b, &list, &last);
  if (rc < 0)
    return rc;
  if (b->n == 0) {
    rc = check_idle(r);
    return rc < 0 ? rc : r->done ? BUS_EEOF : 0;
  }
  size_t keep = first_gap(b, r->last_cseq);
  if (keep < b->n) {
    bus__batch_truncate(b, keep);
    uint64_t from =
        keep ? b->evs[keep - 1].seq + 1 : (r->last_seq ? r->last_seq + 1 : 0);
    bus__meta more = {.pending = 1}; /* the gap says nothing of the end */
    apply_bounds(r, b, &more);
    if (b->n)
      r->last_seq = b->evs[b->n - 1].seq;
    if (!r->done && (rc = reopen(r, from)) < 0)
      return rc;
    return r->done ? BUS_EEOF : 0;
  }
  r->last_cseq = last.cseq;
  apply_bounds(r, b, &last);
  if (b->n)
    r->last_seq = b->evs[b->n - 1].seq;
  return r->done ? BUS_EEOF : 0;
}

/* ---------------------------------------------------------- direct gets */

/* Unix nanoseconds of an RFC 3339 UTC time as the broker writes it
 * (Go's RFC3339Nano: the fraction's trailing zeros are cut); 0 if not. */
static int64_t
parse_stamp(const char *s) {
  int y, mo, d, h, mi, sec, n = 0;
  if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
                   &n) != 6)
    return 0;
  int64_t frac = 0;
  const char *p = s + n;
  int digits = 0;
  if (*p == '.')
    for (p++; isdigit((unsigned char)*p); p++)
      if (digits < 9)
        frac = frac * 10 + (*p - '0'), digits++;
  while (digits++ < 9)
    frac *= 10;
  /* days from the civil date (proleptic Gregorian), as in Hinnant's */
  y -= mo <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
  return ((days * 86400 + h * 3600 + mi * 60 + sec) * INT64_C(1000000000)) +
         frac;
}

/* The request body for the next batch. */
static int
direct_body(const bus_reader *r, char *out, size_t cap) {
  char from[96];
  if (r->next_seq) {
    snprintf(from, sizeof from, "\"seq\":%llu",
             (unsigned long long)r->next_seq);
  } else {
    time_t t = (time_t)(r->since_ns / INT64_C(1000000000));
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(from, sizeof from,
             "\"start_time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%09dZ\"",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(r->since_ns % INT64_C(1000000000)));
  }
  int n = snprintf(out, cap, "{%s,\"batch\":%d,\"max_bytes\":%d%s%s%s}", from,
                   r->batch, DIRECT_MAX_BYTES,
                   r->filter[0] ? ",\"next_by_subj\":\"" : "", r->filter,
                   r->filter[0] ? "\"" : "");
  return n > 0 && (size_t)n < cap ? 0 : BUS_ERR(BUS_EINVAL, "filter too long");
}

/* A status reply ends the answer: 204 EOB (with what is still pending),
 * 404 (nothing at or after the sequence), anything else an error. */
static int
direct_status(const bus_reader *r, natsMsg *m, const char *st,
              uint64_t *pending) {
  const char *v = NULL;
  if (!strcmp(st, "204")) {
    if (natsMsgHeader_Get(m, "Nats-Num-Pending", &v) == NATS_OK && v)
      *pending = strtoull(v, NULL, 10);
    return 0;
  }
  if (!strcmp(st, "404")) {
    *pending = 0;
    return 0;
  }
  natsMsgHeader_Get(m, "Description", &v);
  return BUS_ERR(BUS_EBROKER, "direct get on %s: %s %s", r->stream, st,
                 v ? v : "");
}

/* Gather one answer into list (grown by hand: a natsMsgList frees its
 * array with free()). */
static int
direct_collect(bus_reader *r, natsSubscription *sub, unsigned long mark,
               natsMsgList *list, uint64_t *pending) {
  int rc = 0;
  list->Msgs = calloc((size_t)r->batch, sizeof *list->Msgs);
  if (!list->Msgs)
    return BUS_ERR(-ENOMEM, "out of memory");
  for (;;) {
    natsMsg *m = NULL;
    const char *st = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, r->c->js_wait_ms);
    if (s == NATS_TIMEOUT && bus__denied_since(r->c, mark))
      return BUS_ERR(BUS_EDENIED, "permission denied reading %s", r->stream);
    if (s == NATS_NO_RESPONDERS)
      return BUS_ERR(BUS_ENO_STREAM,
                     "no direct get answers on %s: is the stream missing, or "
                     "does it not allow direct gets?",
                     r->stream);
    if (s != NATS_OK)
      return bus__nats_err(s, 0, r->stream);
    if (natsMsgHeader_Get(m, "Status", &st) == NATS_OK && st) {
      rc = direct_status(r, m, st, pending);
      natsMsg_Destroy(m);
      return rc;
    }
    if (list->Count == r->batch) { /* more than asked: never from 2.15 */
      natsMsg_Destroy(m);
      continue;
    }
    list->Msgs[list->Count++] = m;
  }
}

/* Take an answer into b with the delivery fields from its headers. */
static int
direct_fill(bus_reader *r, bus_batch *b, natsMsgList *list, uint64_t pending) {
  int rc = bus__batch_fill(b, list, NULL);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < b->n; i++) {
    natsMsg *m = b->list.Msgs[i];
    bus_event *ev = &b->evs[i];
    const char *v = NULL;
    if (natsMsgHeader_Get(m, "Nats-Subject", &v) == NATS_OK)
      ev->subject = v;
    v = NULL;
    if (natsMsgHeader_Get(m, "Nats-Sequence", &v) == NATS_OK && v)
      ev->seq = strtoull(v, NULL, 10);
    v = NULL;
    if (natsMsgHeader_Get(m, "Nats-Time-Stamp", &v) == NATS_OK)
      ev->stored_ns = parse_stamp(v);
  }
  if (b->n)
    r->next_seq = b->evs[b->n - 1].seq + 1;
  bus__meta last = {.pending = pending};
  apply_bounds(r, b, &last);
  if (b->n)
    r->last_seq = b->evs[b->n - 1].seq;
  return 0;
}

/* One request and its answer. */
static int
direct_once(bus_reader *r, bus_batch *b) {
  char subj[128], body[BUS_SUBJECT_MAX + 256], inbox[192], hex[25];
  unsigned char rnd[12];
  natsSubscription *sub = NULL;
  natsMsgList list = {0};
  uint64_t pending = 1;
  bus_batch_clear(b);
  int rc = direct_body(r, body, sizeof body);
  if (rc < 0)
    return rc;
  snprintf(subj, sizeof subj, "$JS.API.DIRECT.GET.%s", r->stream);
  randombytes_buf(rnd, sizeof rnd);
  sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
  snprintf(inbox, sizeof inbox, "%s.%s", r->c->inbox_prefix, hex);
  unsigned long mark = atomic_load(&r->c->denied);
  natsStatus s = natsConnection_SubscribeSync(&sub, r->c->nc, inbox);
  if (s == NATS_OK)
    s = natsConnection_PublishRequestString(r->c->nc, subj, inbox, body);
  rc = s == NATS_OK ? direct_collect(r, sub, mark, &list, &pending)
                    : bus__nats_err(s, 0, subj);
  bus__sub_done(r->c, sub); /* after a timeout, the rest may be arriving */
  if (rc == 0)
    rc = direct_fill(r, b, &list, pending);
  natsMsgList_Destroy(&list);
  if (rc == 0 && !r->follow && pending == 0)
    r->done = 1;
  return rc;
}

static int
direct_next(bus_reader *r, bus_batch *b, int timeout_ms) {
  int64_t t0 = bus_mono_ms();
  for (;;) {
    int rc = direct_once(r, b);
    if (rc < 0)
      return rc;
    if (r->done)
      return BUS_EEOF;
    if (bus_batch_len(b) || !r->follow)
      return 0;
    if (bus_mono_ms() - t0 + POLL_MS > timeout_ms)
      return 0;
    bus_sleep_ms(POLL_MS);
  }
}
