/*
 * batch.c - the bus_batch type: the messages of one fetch and their
 * decoded events. A batch owns the natsMsgList of its last fetch and one
 * msgpack_zone its events point into; bus_batch_clear frees both.
 * Delivery metadata comes from the $JS.ACK reply subject, parsed in place
 * (no allocation). Here too: the in-order check of the consumer sequence,
 * dropping messages from either end, and the ack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"

int
bus_batch_new(bus_batch **out) {
  bus_batch *b = calloc(1, sizeof *b);
  if (!b || !msgpack_zone_init(&b->zone, 64 * 1024)) {
    free(b);
    return BUS_ERR(-ENOMEM, "out of memory");
  }
  *out = b;
  return 0;
}

void
bus_batch_clear(bus_batch *b) {
  if (!b)
    return;
  natsMsgList_Destroy(&b->list);
  memset(&b->list, 0, sizeof b->list);
  b->n = 0;
  b->ack_last = 0;
  b->ack_nc = NULL;
  msgpack_zone_clear(&b->zone);
}

void
bus_batch_free(bus_batch *b) {
  if (!b)
    return;
  bus_batch_clear(b);
  msgpack_zone_destroy(&b->zone);
  free(b->evs);
  free(b->status);
  free(b->cseq);
  free(b);
}

size_t
bus_batch_len(const bus_batch *b) {
  return b->n;
}

const bus_event *
bus_batch_event(const bus_batch *b, size_t i) {
  return (i < b->n && b->status[i] == 0) ? &b->evs[i] : NULL;
}

int
bus_batch_status(const bus_batch *b, size_t i) {
  return i < b->n ? b->status[i] : BUS_EINVAL;
}

void
bus_batch_meta(const bus_batch *b, size_t i, const char **subject,
               uint64_t *seq, int64_t *stored_ns) {
  const bus_event *ev = i < b->n ? &b->evs[i] : NULL;
  if (subject)
    *subject = ev ? ev->subject : NULL;
  if (seq)
    *seq = ev ? ev->seq : 0;
  if (stored_ns)
    *stored_ns = ev ? ev->stored_ns : 0;
}

void
bus_batch_data(const bus_batch *b, size_t i, const void **data, size_t *len) {
  natsMsg *m = i < b->n ? b->list.Msgs[i] : NULL;
  *data = m ? natsMsg_GetData(m) : NULL;
  *len = m ? (size_t)natsMsg_GetDataLength(m) : 0;
}

static int
parse_u64(const char *s, size_t n, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0 || n > 20)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return 0;
}

/*
 * $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ns>.<pending>
 * (9 tokens), or the 2.9 form with <domain>.<account hash> after ACK and
 * a random token at the end (11 or 12 tokens).
 */
int
bus__ack_meta(const char *reply, bus__meta *m) {
  const char *tok[13];
  size_t len[13];
  int n = 0;
  if (!reply || strncmp(reply, "$JS.ACK.", 8) != 0)
    return -1;
  for (const char *p = reply; n < 13;) {
    const char *dot = strchr(p, '.');
    tok[n] = p;
    len[n] = dot ? (size_t)(dot - p) : strlen(p);
    n++;
    if (!dot)
      break;
    p = dot + 1;
  }
  int base = n == 9 ? 4 : (n == 11 || n == 12) ? 6 : -1;
  uint64_t ns;
  if (base < 0 || parse_u64(tok[base + 1], len[base + 1], &m->sseq) < 0 ||
      parse_u64(tok[base + 2], len[base + 2], &m->cseq) < 0 ||
      parse_u64(tok[base + 3], len[base + 3], &ns) < 0 ||
      parse_u64(tok[base + 4], len[base + 4], &m->pending) < 0)
    return -1;
  m->ns = (int64_t)ns;
  return 0;
}

static int
grow(bus_batch *b, size_t n) {
  if (n <= b->cap)
    return 0;
  bus_event *evs = realloc(b->evs, n * sizeof *evs);
  if (evs)
    b->evs = evs;
  int *st = realloc(b->status, n * sizeof *st);
  if (st)
    b->status = st;
  uint64_t *cs = realloc(b->cseq, n * sizeof *cs);
  if (cs)
    b->cseq = cs;
  if (!evs || !st || !cs)
    return BUS_ERR(-ENOMEM, "out of memory");
  b->cap = n;
  return 0;
}

/*
 * Take over list (the batch now owns its messages), decode each and fill
 * the delivery fields. The last message's metadata goes to *last.
 */
int
bus__batch_fill(bus_batch *b, natsMsgList *list, bus__meta *last) {
  b->list = *list;
  memset(list, 0, sizeof *list);
  int rc = grow(b, (size_t)b->list.Count);
  if (rc < 0)
    return rc;
  for (int i = 0; i < b->list.Count; i++) {
    natsMsg *m = b->list.Msgs[i];
    bus_event *ev = &b->evs[i];
    bus__meta meta = {0};
    memset(ev, 0, sizeof *ev);
    b->status[i] = bus_event_decode_typed(
        natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), ev, &b->zone);
    b->cseq[i] = bus__ack_meta(natsMsg_GetReply(m), &meta) < 0 ? 0 : meta.cseq;
    ev->subject = natsMsg_GetSubject(m);
    ev->seq = meta.sseq;
    ev->stored_ns = meta.ns;
    if (last)
      *last = meta;
  }
  b->n = (size_t)b->list.Count;
  return 0;
}

/*
 * A consumer numbers its first deliveries 1, 2, 3, ... whatever its filter
 * skips or the stream has deleted, so a hole in that numbering is a
 * message this reader was given and never saw: a pull answered into a
 * connection that broke, or a message someone else pulled. A message the
 * reader already holds (seq <= applied) is a redelivery of what it took
 * before: it never breaks the order, whatever number it carries.
 */
size_t
bus__batch_in_order(const bus_batch *b, uint64_t applied, uint64_t *next_cseq) {
  for (size_t i = 0; i < b->n; i++) {
    uint64_t sseq = b->evs[i].seq, cseq = b->cseq[i];
    if (cseq == 0 || (sseq > applied && cseq != *next_cseq))
      return i;
    if (cseq >= *next_cseq)
      *next_cseq = cseq + 1;
    if (sseq > applied)
      applied = sseq;
  }
  return b->n;
}

/* Drop messages from index keep on (they are destroyed now). */
void
bus__batch_truncate(bus_batch *b, size_t keep) {
  for (size_t i = keep; i < b->n; i++) {
    natsMsg_Destroy(b->list.Msgs[i]);
    b->list.Msgs[i] = NULL;
  }
  if (keep < b->n)
    b->n = keep;
}

void
bus__batch_drop_head(bus_batch *b, size_t k) {
  if (k > b->n)
    k = b->n;
  if (k == 0) /* nothing to drop (and an empty batch may have no arrays) */
    return;
  for (size_t i = 0; i < k; i++)
    natsMsg_Destroy(b->list.Msgs[i]);
  size_t rest = b->n - k;
  memmove(b->list.Msgs, b->list.Msgs + k, rest * sizeof *b->list.Msgs);
  memmove(b->evs, b->evs + k, rest * sizeof *b->evs);
  memmove(b->status, b->status + k, rest * sizeof *b->status);
  memmove(b->cseq, b->cseq + k, rest * sizeof *b->cseq);
  for (size_t i = rest; i < b->n; i++)
    b->list.Msgs[i] = NULL;
  b->n = rest;
}

/* Where acking starts: 0, or for AckAll the last message still held
 * (its ack covers every earlier one). */
static size_t
first_to_ack(const bus_batch *b) {
  if (!b->ack_last)
    return 0;
  size_t i = b->n;
  while (i > 0 && !b->list.Msgs[i - 1])
    i--;
  return i ? i - 1 : 0;
}

int
bus_batch_ack(bus_batch *b) {
  for (size_t i = first_to_ack(b); i < b->n; i++) {
    if (!b->list.Msgs[i])
      continue;
    const char *reply = natsMsg_GetReply(b->list.Msgs[i]);
    natsStatus s = !b->ack_nc ? natsMsg_Ack(b->list.Msgs[i], NULL)
                   : reply
                       ? natsConnection_PublishString(b->ack_nc, reply, "+ACK")
                       : NATS_OK;
    if (s != NATS_OK)
      return bus__nats_err(s, 0, "ack");
  }
  return 0;
}
