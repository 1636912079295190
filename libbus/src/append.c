/*
 * append.c - events into streams, with the broker's version check.
 *
 * Every message carries Nats-Msg-Id = ev->id (a publish that timed out may
 * still land; the id makes a retry harmless) and Lark-Type = ev->type.
 * The async path encodes into the connection's one reused buffer under a
 * mutex and hands nats.c a single natsMsg (which copies the bytes once);
 * acks are consumed by nats.c and only failures reach us, through the
 * JetStream context's error handler, as an atomic count and the first
 * failure's code. Flush takes and resets both.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nats-int.h"

/* The event's type name: ev->type, or for a typed event, its t's. */
static const char *
type_of(const bus_event *ev) {
  return ev->type ? ev->type : bus_type_name(ev->t);
}

static int
make_msg(const char *subject, const bus_event *ev, const char *data, size_t len,
         natsMsg **out) {
  natsMsg *m = NULL;
  natsStatus s = natsMsg_Create(&m, subject, NULL, data, (int)len);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Msg-Id", ev->id);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Lark-Type", type_of(ev));
  if (s != NATS_OK) {
    natsMsg_Destroy(m);
    return bus__nats_err(s, 0, subject);
  }
  *out = m;
  return 0;
}

static void
pub_opts(const bus_conn *c, const bus_event *ev, int flags, jsPubOptions *po) {
  jsPubOptions_Init(po);
  po->MaxWait = c->js_wait_ms;
  if (flags & BUS_APPEND_CHECK) {
    if (ev->prev == 0)
      po->ExpectNoMessage = true;
    else
      po->ExpectLastSubjectSeq = ev->prev;
  }
}

static int
check_event(const char *subject, const bus_event *ev) {
  if (!subject || !*subject || !ev || !ev->id || !*ev->id || !type_of(ev))
    return BUS_ERR(BUS_EINVAL, "append needs a subject, an id and a type");
  return 0;
}

int
bus_append(bus_conn *c, const char *subject, const bus_event *ev, int flags,
           uint64_t *seq, int *dup) {
  msgpack_sbuffer sb;
  natsMsg *m = NULL;
  jsPubAck *pa = NULL;
  jsPubOptions po;
  jsErrCode jerr = 0;
  int rc = check_event(subject, ev);
  if (rc < 0)
    return rc;
  msgpack_sbuffer_init(&sb);
  if ((rc = bus_event_encode(ev, &sb)) < 0)
    goto out;
  if ((rc = make_msg(subject, ev, sb.data, sb.size, &m)) < 0)
    goto out;
  pub_opts(c, ev, flags, &po);
  natsStatus s = js_PublishMsg(&pa, c->js, m, &po, &jerr);
  if (s == NATS_NO_RESPONDERS) {
    rc = BUS_ERR(BUS_ENO_STREAM, "no stream takes %s", subject);
    goto out;
  }
  if (s != NATS_OK) {
    rc = bus__nats_err(s, jerr, subject);
    goto out;
  }
  if (seq)
    *seq = pa->Sequence;
  if (dup)
    *dup = pa->Duplicate;
out:
  jsPubAck_Destroy(pa);
  natsMsg_Destroy(m);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
failure_code(const jsPubAckErr *pae) {
  int code = bus__js_code((int)pae->ErrCode);
  if (code)
    return code;
  if (pae->Err == NATS_TIMEOUT)
    return BUS_ETIMEOUT;
  if (pae->Err == NATS_NO_RESPONDERS)
    return BUS_ENO_STREAM; /* no stream takes the subject */
  return BUS_EBROKER;
}

void
bus__append_failed(jsCtx *js, jsPubAckErr *pae, void *closure) {
  (void)js;
  bus_conn *c = closure;
  int expect = 0;
  atomic_compare_exchange_strong(&c->async_err, &expect, failure_code(pae));
  atomic_fetch_add(&c->async_failed, 1);
}

int
bus_append_async(bus_conn *c, const char *subject, const bus_event *ev,
                 int flags) {
  natsMsg *m = NULL;
  jsPubOptions po;
  int rc = check_event(subject, ev);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&c->enc_mu);
  c->enc.size = 0;
  rc = bus_event_encode(ev, &c->enc);
  if (rc == 0)
    rc = make_msg(subject, ev, c->enc.data, c->enc.size, &m);
  pthread_mutex_unlock(&c->enc_mu);
  if (rc < 0)
    return rc;
  pub_opts(c, ev, flags, &po);
  po.MaxWait = 0; /* acks are awaited in flush, not per message */
  natsStatus s = js_PublishMsgAsync(c->js, &m, &po);
  if (s != NATS_OK) {
    natsMsg_Destroy(m);
    return bus__nats_err(s, 0, subject);
  }
  return 0;
}

/* Messages still waiting for an ack after the flush gave up count as
 * failed; they are dropped (the caller retries with the same ids). */
static uint64_t
drop_pending(bus_conn *c) {
  natsMsgList pending = {0};
  if (js_PublishAsyncGetPendingList(&pending, c->js) != NATS_OK)
    return 0;
  uint64_t n = (uint64_t)pending.Count;
  natsMsgList_Destroy(&pending);
  return n;
}

int
bus_append_flush(bus_conn *c, int timeout_ms, uint64_t *failed) {
  jsPubOptions po;
  int rc = 0;
  jsPubOptions_Init(&po);
  po.MaxWait = timeout_ms > 0 ? timeout_ms : c->js_wait_ms;
  natsStatus s = js_PublishAsyncComplete(c->js, &po);
  uint64_t lost = 0;
  if (s == NATS_TIMEOUT) {
    lost = drop_pending(c);
    rc = BUS_ERR(BUS_ETIMEOUT, "%llu async appends got no ack in %d ms",
                 (unsigned long long)lost, (int)po.MaxWait);
  } else if (s != NATS_OK) {
    rc = bus__nats_err(s, 0, "append flush");
  }
  uint64_t n = atomic_exchange(&c->async_failed, 0);
  int code = atomic_exchange(&c->async_err, 0);
  if (rc == 0 && n)
    rc = BUS_ERR(code ? code : BUS_EBROKER,
                 "%llu async appends failed (first: %s)", (unsigned long long)n,
                 bus_err_name(code));
  if (failed)
    *failed = n + lost;
  return rc;
}

/* A message get that failed: BUS_ENOT_FOUND when there is no such
 * message, the broker's error otherwise. what names the message. */
static int
get_failed(natsStatus s, jsErrCode jerr, const char *what) {
  if (jerr == JSNoMessageFoundErr || (s == NATS_NOT_FOUND && !jerr))
    return BUS_ERR(BUS_ENOT_FOUND, "no message %s", what);
  return bus__nats_err(s, jerr, what);
}

int
bus_last_event(bus_conn *c, const char *stream, const char *subject,
               bus_event *ev, msgpack_zone *zone) {
  natsMsg *m = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  char what[BUS_SUBJECT_MAX + 96];
  bus__js_opts(c, &jo);
  natsStatus s = js_GetLastMsg(&m, c->js, stream, subject, &jo, &jerr);
  if (s != NATS_OK) {
    snprintf(what, sizeof what, "on %s in %s", subject, stream);
    return get_failed(s, jerr, what);
  }
  int rc = bus_event_decode(natsMsg_GetData(m),
                            (size_t)natsMsg_GetDataLength(m), ev, zone);
  if (rc == 0) {
    const char *subj = natsMsg_GetSubject(m);
    size_t n = strlen(subj) + 1;
    char *copy = msgpack_zone_malloc(zone, n);
    if (!copy)
      rc = BUS_ERR(-ENOMEM, "out of memory");
    else
      ev->subject = memcpy(copy, subj, n);
    ev->seq = natsMsg_GetSequence(m);
    ev->stored_ns = natsMsg_GetTime(m);
  }
  natsMsg_Destroy(m);
  return rc;
}

int
bus_last_event_seq(bus_conn *c, const char *stream, const char *subject,
                   uint64_t *seq) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event last;
  memset(&last, 0, sizeof last);
  int rc = bus_last_event(c, stream, subject, &last, &z);
  *seq = last.seq;
  msgpack_zone_destroy(&z);
  return rc;
}

int
bus__last_is(bus_conn *c, const char *stream, const char *subject,
             const char *id, uint64_t *seq) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event last;
  memset(&last, 0, sizeof last);
  int rc = bus_last_event(c, stream, subject, &last, &z);
  if (rc == 0)
    rc = last.id && !strcmp(last.id, id);
  *seq = last.seq;
  msgpack_zone_destroy(&z);
  return rc;
}

/*
 * The rule of an observation: what a node saw happened whatever the
 * writer's view held, so a conflict only means the view lagged. The
 * subject's last event tells the rest: ev itself (an earlier try landed,
 * later than the dedupe window remembers), or the version to append at.
 * Running out of tries is never a success: the caller tries the whole
 * observation again later.
 */
int
bus_append_rebased(bus_conn *c, const char *stream, const char *subject,
                   bus_event *ev, uint64_t prev, int tries, uint64_t *seq) {
  for (int i = 0; i < tries; i++) {
    uint64_t at = 0;
    ev->prev = prev;
    int rc = bus_append(c, subject, ev, BUS_APPEND_CHECK, &at, NULL);
    if (rc != BUS_ECONFLICT) {
      if (rc == 0 && seq)
        *seq = at;
      return rc;
    }
    int mine = bus__last_is(c, stream, subject, ev->id, &prev);
    if (mine == 1) {
      if (seq)
        *seq = prev;
      return 0;
    }
    if (mine < 0 && mine != BUS_ENOT_FOUND) /* none: purged, a first write */
      return mine;
  }
  return tries > 1 ? BUS_ERR(BUS_EBUSY, "%s moved on at each of %d tries",
                             subject, tries)
                   : BUS_ERR(BUS_ECONFLICT, "%s has moved on", subject);
}

int
bus__stream_msg_time(bus_conn *c, const char *stream, uint64_t seq,
                     int64_t *ns) {
  natsMsg *m = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetMsg(&m, c->js, stream, seq, &jo, &jerr);
  if (s != NATS_OK) {
    char what[96];
    snprintf(what, sizeof what, "%llu in %s", (unsigned long long)seq, stream);
    return get_failed(s, jerr, what);
  }
  *ns = natsMsg_GetTime(m);
  natsMsg_Destroy(m);
  return 0;
}

int
bus_purge_subject(bus_conn *c, const char *stream, const char *subject) {
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  jo.Stream.Purge.Subject = subject;
  natsStatus s = js_PurgeStream(c->js, stream, &jo, &jerr);
  return s == NATS_OK ? 0 : bus__nats_err(s, jerr, subject);
}
