/*
 * http_stream.c - answers that do not end: a watch of a collection, the
 * audit tail and a Job's logs, each as JSON lines (chunked) or, when the
 * client accepts text/event-stream, as Server-Sent Events.
 *
 * A stream is libmicrohttpd's content reader on the connection's own
 * thread: it blocks at most GW_TICK_MS at a time waiting for records, so
 * between waits it sees a stopping server, and a certificate revoked
 * while the stream is open (gw_revocations moved and gw_cert_revoked says
 * so): the connection is then closed, well within a second. An idle watch
 * sends a BOOKMARK line (an SSE comment for feeds) every GW_BOOKMARK_MS,
 * which also finds a client that went away.
 *
 * Resume: a watch's resourceVersion (or SSE's Last-Event-ID) is the last
 * sequence the client saw; gw_watch_next gives every change after it,
 * from the view's change log, so a reconnecting client (to this process
 * or a restarted one) sees each change once.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http.h"

typedef struct stream stream;
struct stream {
  gw_http *h;
  int sse, cert, text_logs, done;
  char serial[80];
  uint64_t revs;
  gw_buf out;
  size_t off;
  int64_t idle_ms; /* since the last record */
  int (*next)(stream *st, int timeout_ms);
  /* a watch */
  gw_kind kind;
  gw_list_opts o;
  char job[BUS_DERIVED_NAME_MAX + 1], node[BUS_NAME_MAX + 1],
      workflow[BUS_DERIVED_NAME_MAX + 1];
  uint64_t after;
  /* a feed */
  gw_feed *feed;
};

static void
stream_free(void *cls) {
  stream *st = cls;
  gw_feed_close(st->feed);
  gw_buf_free(&st->out);
  free(st);
}

static int
revoked(stream *st) {
  if (!st->cert)
    return 0;
  uint64_t n = gw_revocations(st->h->view);
  if (n == st->revs)
    return 0;
  st->revs = n;
  return gw_cert_revoked(st->h->view, st->serial);
}

static void
keepalive(stream *st) {
  if (st->feed) { /* an SSE comment, or an empty line JSON-lines readers
                     skip; a text log gets none (it would read as a line) */
    if (!st->text_logs)
      gw_buf_add(&st->out, st->sse ? ":\n\n" : "\n", st->sse ? 3 : 1);
    return;
  }
  char line[160];
  int n = snprintf(line, sizeof line,
                   "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{"
                   "\"resourceVersion\":\"%llu\"}}}",
                   (unsigned long long)st->after);
  if (st->sse)
    gw_buf_printf(&st->out, "id: %llu\nevent: BOOKMARK\ndata: %s\n\n",
                  (unsigned long long)st->after, line);
  else
    gw_buf_printf(&st->out, "%.*s\n", n, line);
}

static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream *st = cls;
  while (st->off == st->out.len) {
    gw_buf_reset(&st->out);
    st->off = 0;
    if (st->done)
      return MHD_CONTENT_READER_END_OF_STREAM;
    if (atomic_load(&st->h->stop))
      return MHD_CONTENT_READER_END_OF_STREAM; /* the server stops */
    if (revoked(st))
      return MHD_CONTENT_READER_END_WITH_ERROR; /* cut, as a refusal */
    int rc = st->next(st, GW_TICK_MS);
    if (rc == GW_FEED_END)
      st->done = 1;
    else if (rc < 0)
      return MHD_CONTENT_READER_END_WITH_ERROR;
    if (rc > 0 || st->out.len) {
      st->idle_ms = 0;
    } else if ((st->idle_ms += GW_TICK_MS) >= GW_BOOKMARK_MS) {
      st->idle_ms = 0;
      keepalive(st);
    }
  }
  size_t n = st->out.len - st->off < max ? st->out.len - st->off : max;
  memcpy(buf, st->out.p + st->off, n);
  st->off += n;
  return (ssize_t)n;
}

static stream *
stream_new(gw_req *r) {
  stream *st = calloc(1, sizeof *st);
  if (!st)
    return NULL;
  st->h = r->h;
  st->sse = gw_wants_sse(r);
  st->cert = r->auth == GW_AUTH_CERT;
  snprintf(st->serial, sizeof st->serial, "%s", r->serial);
  st->revs = gw_revocations(r->h->view);
  return st;
}

static enum MHD_Result
stream_start(gw_req *r, stream *st, const char *type) {
  struct MHD_Response *resp = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 16 * 1024, reader, st, stream_free);
  if (!resp) {
    stream_free(st);
    return MHD_NO;
  }
  /* libmicrohttpd sends the headers with the first bytes: something at
   * once, which readers of either form skip */
  if (st->sse)
    gw_buf_add(&st->out, ": stream\n\n", 10);
  else if (!st->text_logs)
    gw_buf_add(&st->out, "\n", 1);
  return gw_queue(r, MHD_HTTP_OK, resp, st->sse ? "text/event-stream" : type);
}

/* ------------------------------------------------------------- watch */

/* json is the change, {"type":..,"object":..}: a line as it is, or an
 * SSE frame's data. */
static int
on_change(void *ud, uint64_t seq, const char *type, const char *json,
          size_t len) {
  stream *st = ud;
  if (st->sse)
    gw_buf_printf(&st->out,
                  "id: %llu\nevent: %s\ndata: ", (unsigned long long)seq, type);
  gw_buf_add(&st->out, json, len);
  return gw_buf_add(&st->out, st->sse ? "\n\n" : "\n", st->sse ? 2 : 1);
}

static int
watch_next(stream *st, int timeout_ms) {
  return gw_watch_next(st->h->view, st->kind, &st->o, &st->after, on_change, st,
                       timeout_ms);
}

static const char *
keep(char *dst, size_t cap, const char *src) {
  if (!src)
    return NULL;
  snprintf(dst, cap, "%s", src);
  return dst;
}

enum MHD_Result
gw_watch(gw_req *r, gw_kind k, const gw_list_opts *o) {
  const char *rv = gw_arg(r, "resourceVersion");
  const char *last = gw_header(r, "Last-Event-ID");
  const char *from = rv && *rv ? rv : last;
  char *end = NULL;
  unsigned long long after = from ? strtoull(from, &end, 10) : 0;
  if (from && (*end || *from == '-'))
    return gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                          "resourceVersion must be a stream sequence", NULL, 0);
  stream *st = stream_new(r);
  if (!st)
    return MHD_NO;
  st->kind = k;
  gw_list_opts_init(&st->o);
  st->o.job = keep(st->job, sizeof st->job, o->job);
  st->o.node = keep(st->node, sizeof st->node, o->node);
  st->o.workflow = keep(st->workflow, sizeof st->workflow, o->workflow);
  st->after = after;
  st->next = watch_next;
  return stream_start(r, st, "application/json");
}

/* ------------------------------------------------------------- feeds */

static int
on_record(void *ud, uint64_t id, const char *event, const char *json,
          size_t len) {
  stream *st = ud;
  if (st->text_logs) { /* "POD LINE" */
    json_t *j = json_loadb(json, len, 0, NULL);
    const char *pod = json_string_value(json_object_get(j, "pod"));
    const char *line = json_string_value(json_object_get(j, "line"));
    int rc =
        gw_buf_printf(&st->out, "%s %s\n", pod ? pod : "-", line ? line : "");
    json_decref(j);
    return rc;
  }
  if (st->sse)
    gw_buf_printf(&st->out,
                  "id: %llu\nevent: %s\ndata: ", (unsigned long long)id, event);
  gw_buf_add(&st->out, json, len);
  return gw_buf_add(&st->out, st->sse ? "\n\n" : "\n", st->sse ? 2 : 1);
}

static int
feed_next(stream *st, int timeout_ms) {
  return gw_feed_next(st->feed, on_record, st, timeout_ms);
}

static enum MHD_Result
feed_start(gw_req *r, stream *st, int rc, const char *type) {
  if (rc) {
    stream_free(st);
    return gw_reply_bus(r, rc, bus_last_error());
  }
  st->next = feed_next;
  return stream_start(r, st, type);
}

static int
flag(gw_req *r, const char *key) {
  const char *v = gw_arg(r, key);
  return v && (!strcmp(v, "1") || !strcmp(v, "true"));
}

enum MHD_Result
gw_events(gw_req *r) {
  gw_events_query q = {.subject = gw_arg(r, "subject"),
                       .type = gw_arg(r, "type"),
                       .actor = gw_arg(r, "actor"),
                       .follow = flag(r, "follow")};
  const char *last = gw_header(r, "Last-Event-ID");
  const char *after = gw_arg(r, "after") ? gw_arg(r, "after") : last;
  char *end = NULL;
  if (after)
    q.after_seq = strtoull(after, &end, 10);
  uint64_t limit = 0;
  if (gw_arg_count(r, "limit", &limit) ||
      gw_arg_time(r, "since", &q.since_ns) ||
      (after && (*end || *after == '-')))
    return gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                          "limit and after must be whole numbers, since a "
                          "time",
                          NULL, 0);
  q.limit = (size_t)limit;
  stream *st = stream_new(r);
  if (!st)
    return MHD_NO;
  return feed_start(r, st, gw_events_open(r->h->s->conn, &q, &st->feed),
                    "application/json");
}

enum MHD_Result
gw_logs(gw_req *r, const char *job) {
  gw_logs_query q = {.job = job,
                     .pod = gw_arg(r, "pod"),
                     .follow = flag(r, "follow"),
                     .user = r->user};
  uint64_t tail = 0;
  if (gw_arg_count(r, "tail", &tail))
    return gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                          "tail must be a whole number", NULL, 0);
  if (q.pod && !bus_name_valid(q.pod, BUS_DERIVED_NAME_MAX))
    return gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                          "pod is not a valid name", NULL, 0);
  q.tail = (size_t)tail;
  stream *st = stream_new(r);
  if (!st)
    return MHD_NO;
  const char *o = gw_arg(r, "o");
  st->text_logs = !st->sse && !(o && !strcmp(o, "json"));
  return feed_start(r, st, gw_logs_open(r->h->s->conn, &q, &st->feed),
                    st->text_logs ? "text/plain; charset=utf-8"
                                  : "application/json");
}
