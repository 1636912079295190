/*
 * atomic.c - a batch of events stored whole or not at all (nats-server
 * 2.12+, a stream with allow_atomic).
 *
 * nats.c 3.4.1 has no batch API, so the batch is plain publishes with the
 * server's headers: Nats-Batch-Id (one random id per call),
 * Nats-Batch-Sequence 1..n, and Nats-Batch-Commit: 1 on the last. The
 * first n-1 go without a reply subject (the server would otherwise answer
 * each with an empty ack); only the commit is a request, and its answer is
 * the batch's fate. The server stages the batch and stores it at the
 * commit under one lock; with sync_interval: always it syncs once for the
 * whole batch instead of once per message, which is what makes a batch
 * worth having on a single server.
 *
 * Every message also carries Nats-Expected-Stream, so a batch whose
 * subjects another stream takes is refused rather than stored there.
 *
 * nats.c's jsStreamConfig has no allow_atomic either: the stream's
 * config is read back with STREAM.INFO and sent again with the field set
 * through STREAM.UPDATE.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"

/* The broker's error codes for atomic batches (jetstream_errors). */
#define JS_ATOMIC_DISABLED 10174
#define JS_ATOMIC_INCOMPLETE 10176
#define JS_ATOMIC_TOO_LARGE 10199
#define JS_ATOMIC_DUPLICATE 10201
#define JS_ATOMIC_INFLIGHT 10210
#define JS_STREAM_MISMATCH 10060
#define JS_WRONG_LAST_SEQ 10071
#define JS_WRONG_LAST_SEQ_CONST 10164 /* a checked subject twice, or busy */
#define JS_MSG_TOO_BIG 10054

/* The unsigned number after "key": in a JSON text, or 0 when absent. */
static uint64_t
json_u64(const char *json, const char *key) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* The broker's error reply as a BUS_E* code, its description kept. */
static int
batch_error(const char *stream, const char *reply) {
  int code = (int)json_u64(reply, "err_code"), err;
  switch (code) {
  case JS_WRONG_LAST_SEQ:
  case JS_WRONG_LAST_SEQ_CONST:
    err = BUS_ECONFLICT;
    break;
  case JS_ATOMIC_TOO_LARGE:
  case JS_MSG_TOO_BIG:
    err = BUS_ETOO_BIG;
    break;
  case JS_ATOMIC_DUPLICATE:
    err = BUS_EEXISTS;
    break;
  case JS_STREAM_MISMATCH:
    err = BUS_ENO_STREAM;
    break;
  default:
    err = BUS_EBROKER;
  }
  const char *d = strstr(reply, "\"description\":\"");
  int dlen = 0;
  if (d) {
    d += strlen("\"description\":\"");
    const char *e = strchr(d, '"');
    dlen = e ? (int)(e - d) : 0;
  }
  return BUS_ERR(err, "atomic batch on %s refused (%d): %.*s", stream, code,
                 dlen, d ? d : "");
}

static int
check_items(const bus_atomic_item *it, size_t n) {
  if (!it || n == 0)
    return BUS_ERR(BUS_EINVAL, "an atomic batch needs at least one event");
  if (n > BUS_ATOMIC_MAX)
    return BUS_ERR(BUS_ETOO_BIG,
                   "an atomic batch holds at most %d events (%zu given)",
                   BUS_ATOMIC_MAX, n);
  for (size_t i = 0; i < n; i++) {
    const bus_event *ev = it[i].ev;
    if (!it[i].subject || !*it[i].subject || !ev || !ev->id || !*ev->id ||
        !ev->type)
      return BUS_ERR(BUS_EINVAL,
                     "event %zu of the batch needs a subject, "
                     "an id and a type",
                     i + 1);
  }
  return 0;
}

/* Message i (0-based) of the batch, with every header it carries. */
static int
batch_msg(const char *stream, const char *bid, const bus_atomic_item *it,
          size_t i, size_t n, msgpack_sbuffer *sb, natsMsg **out) {
  char num[24];
  natsMsg *m = NULL;
  msgpack_sbuffer_clear(sb);
  int rc = bus_event_encode(it->ev, sb);
  if (rc < 0)
    return rc;
  natsStatus s = natsMsg_Create(&m, it->subject, NULL, sb->data, (int)sb->size);
  snprintf(num, sizeof num, "%zu", i + 1);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Batch-Id", bid);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Batch-Sequence", num);
  if (s == NATS_OK && i + 1 == n)
    s = natsMsgHeader_Set(m, "Nats-Batch-Commit", "1");
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Expected-Stream", stream);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Msg-Id", it->ev->id);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Lark-Type", it->ev->type);
  if (s == NATS_OK && (it->flags & BUS_APPEND_CHECK)) {
    snprintf(num, sizeof num, "%" PRIu64, it->ev->prev);
    s = natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", num);
  }
  if (s != NATS_OK) {
    natsMsg_Destroy(m);
    return bus__nats_err(s, 0, it->subject);
  }
  *out = m;
  return 0;
}

/* The commit's answer: the stored batch's last sequence, or the error. */
static int
read_ack(const char *stream, const char *bid, size_t n, natsMsg *r,
         uint64_t *last_seq) {
  int len = natsMsg_GetDataLength(r);
  char *json = malloc((size_t)len + 1);
  if (!json)
    return BUS_ERR(-ENOMEM, "out of memory reading an atomic batch ack");
  memcpy(json, natsMsg_GetData(r), (size_t)len);
  json[len] = 0;
  int rc = 0;
  if (strstr(json, "\"error\""))
    rc = batch_error(stream, json);
  else if (!strstr(json, bid) || json_u64(json, "count") != n)
    rc = BUS_ERR(BUS_EBROKER, "atomic batch on %s: unexpected ack %s", stream,
                 json);
  else if (last_seq)
    *last_seq = json_u64(json, "seq");
  free(json);
  return rc;
}

/*
 * Drop a batch whose first sent messages are staged but whose rest cannot
 * be sent (an event that does not encode): a message with a gap in the
 * sequence makes the server discard the batch now rather than after its
 * timeout, with the in-flight slot it holds.
 */
static void
abandon(bus_conn *c, const char *bid, const char *subject, size_t sent) {
  char num[24];
  natsMsg *m = NULL;
  snprintf(num, sizeof num, "%zu", sent + 2);
  if (natsMsg_Create(&m, subject, NULL, NULL, 0) == NATS_OK &&
      natsMsgHeader_Set(m, "Nats-Batch-Id", bid) == NATS_OK &&
      natsMsgHeader_Set(m, "Nats-Batch-Sequence", num) == NATS_OK)
    natsConnection_PublishMsg(c->nc, m);
  natsMsg_Destroy(m);
}

/* Publish the batch; the commit's reply into *reply. */
static int
send_batch(bus_conn *c, const char *stream, const char *bid,
           const bus_atomic_item *it, size_t n, natsMsg **reply) {
  msgpack_sbuffer sb;
  natsMsg *m = NULL;
  natsStatus s = NATS_OK;
  int rc = 0;
  size_t i = 0;
  msgpack_sbuffer_init(&sb);
  for (; i < n && !rc && s == NATS_OK; i++) {
    if ((rc = batch_msg(stream, bid, &it[i], i, n, &sb, &m)) < 0)
      break;
    if (i + 1 < n)
      s = natsConnection_PublishMsg(c->nc, m);
    else
      s = natsConnection_RequestMsg(reply, c->nc, m, c->js_wait_ms);
    natsMsg_Destroy(m);
  }
  msgpack_sbuffer_destroy(&sb);
  if (rc < 0 && i > 0)
    abandon(c, bid, it[0].subject, i);
  if (rc < 0)
    return rc;
  if (s == NATS_NO_RESPONDERS)
    return BUS_ERR(BUS_ENO_STREAM, "no stream takes %s", it[n - 1].subject);
  if (s == NATS_TIMEOUT)
    return BUS_ERR(BUS_ETIMEOUT,
                   "atomic batch on %s: no answer to its commit in %d ms "
                   "(it may still be stored)",
                   stream, c->js_wait_ms);
  return s == NATS_OK ? 0 : bus__nats_err(s, 0, stream);
}

int
bus_append_atomic(bus_conn *c, const char *stream, const bus_atomic_item *items,
                  size_t n, uint64_t *last_seq) {
  char bid[33];
  natsMsg *reply = NULL;
  if (!c || !stream || !*stream)
    return BUS_ERR(BUS_EINVAL, "atomic batch: no connection or stream");
  int rc = check_items(items, n);
  if (rc < 0)
    return rc;
  bus_event_new_id(bid);
  if ((rc = send_batch(c, stream, bid, items, n, &reply)) == 0)
    rc = read_ack(stream, bid, n, reply, last_seq);
  natsMsg_Destroy(reply);
  return rc;
}

/* ----------------------------------------------------------- allow_atomic */

/* The end of the JSON object that starts at p ('{'), strings skipped; NULL
 * when it does not close. */
static const char *
object_end(const char *p) {
  int depth = 0, in_str = 0;
  for (; *p; p++) {
    if (in_str) {
      if (*p == '\\' && p[1])
        p++;
      else if (*p == '"')
        in_str = 0;
    } else if (*p == '"') {
      in_str = 1;
    } else if (*p == '{') {
      depth++;
    } else if (*p == '}' && --depth == 0) {
      return p;
    }
  }
  return NULL;
}

/* The broker's answer to an API request, NUL-terminated, into *out. */
static int
api(bus_conn *c, const char *subject, const char *body, char **out) {
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(c, subject, body, strlen(body), c->js_wait_ms,
                            &reply, &len);
  if (rc < 0)
    return rc;
  char *s = realloc(reply, len + 1);
  if (!s) {
    free(reply);
    return BUS_ERR(-ENOMEM, "%s", subject);
  }
  s[len] = 0;
  *out = s;
  return 0;
}

/* The stream's config with "allow_atomic":true added last (the broker
 * reads the last of two equal keys), or NULL when it is already on. */
static int
config_with_atomic(const char *stream, const char *info, char **out) {
  *out = NULL;
  const char *cfg = strstr(info, "\"config\":{");
  if (strstr(info, "\"error\"") || !cfg) {
    int code = (int)json_u64(info, "err_code");
    return code == 10059
               ? BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", stream)
               : batch_error(stream, info);
  }
  cfg += strlen("\"config\":");
  const char *end = object_end(cfg);
  if (!end)
    return BUS_ERR(BUS_EMALFORMED, "stream %s: unreadable info", stream);
  const char *on = strstr(cfg, "\"allow_atomic\":true");
  if (on && on < end)
    return 0;
  size_t len = (size_t)(end - cfg);
  char *s = malloc(len + 32);
  if (!s)
    return BUS_ERR(-ENOMEM, "out of memory configuring stream %s", stream);
  memcpy(s, cfg, len);
  strcpy(s + len, ",\"allow_atomic\":true}");
  *out = s;
  return 0;
}

int
bus_stream_allow_atomic(bus_conn *c, const char *stream) {
  char subject[BUS_SUBJECT_MAX], *info = NULL, *cfg = NULL, *up = NULL;
  snprintf(subject, sizeof subject, "$JS.API.STREAM.INFO.%s", stream);
  int rc = api(c, subject, "", &info);
  if (rc == 0)
    rc = config_with_atomic(stream, info, &cfg);
  if (rc == 0 && cfg) {
    snprintf(subject, sizeof subject, "$JS.API.STREAM.UPDATE.%s", stream);
    if ((rc = api(c, subject, cfg, &up)) == 0 && strstr(up, "\"error\""))
      rc = batch_error(stream, up);
  }
  free(info);
  free(cfg);
  free(up);
  return rc;
}
