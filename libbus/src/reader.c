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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"

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
    bus__meta m;
    if (bus__ack_meta(natsMsg_GetReply(b->list.Msgs[i]), &m) < 0)
      return i;
    if (last_cseq && m.cseq != last_cseq + 1)
      return i;
    last_cseq = m.cseq;
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

int
bus_reader_next(bus_reader *r, bus_batch *b, int timeout_ms) {
  natsMsgList list;
  bus__meta last = {0};
  bus_batch_clear(b);
  if (r->done)
    return BUS_EEOF;
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
