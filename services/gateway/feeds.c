/*
 * feeds.c - the gateway's streams that are not the view's: the audit tail
 * (/api/v1/events) and a Job's logs (/api/v1/.../jobs/NAME/logs).
 *
 * Both read the streams themselves with libbus's readers, on the
 * gateway's connection, one feed per HTTP request, and hand the HTTP
 * layer one JSON object per record with its stream sequence as id. The
 * events are read by direct gets, as a user's larkctl tail reads them (the
 * broker lets the gateway keep no consumer on LARK_EVENTS but its view's;
 * a follower polls every 100 ms), the logs by an ephemeral consumer
 * (LARK_LOGS allows no direct gets):
 *
 *   events  bus_tail (LARK_EVENTS and LARK_RUNS merged by stored time, or
 *           the one stream a subject names; type and actor matched there),
 *           each event as `larkctl tail -o json` prints it (cli_event_json):
 *           the two give the same bytes. A resume (after_seq) continues
 *           one stream exactly after the id seen, so it needs a subject
 *           under one stream: ids of the two streams are not comparable.
 *   logs    LARK_LOGS on lark.log.<job>.> (or .*.<pod>), lines gathered and
 *           ordered as `larkctl logs` does (bus_log_lines), after asking
 *           lark-logs for the lines on their way (logs.sync): the stored ones
 *           first, sorted, the last `tail` kept; then each new fetch,
 *           sorted. A record's id is the sequence of the batch it came in.
 *
 * A feed belongs to one thread (the request's). Records are given in
 * calls of gw_feed_next, at most FEED_CALL_MAX a call, so a stream is
 * written out as it goes and a slow client holds back only its own feed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "command_send.h"
#include "event_json.h"
#include "gateway.h"
#include "json.h"

enum { FEED_EVENTS, FEED_LOGS };
enum { FEED_CALL_MAX = 1024 };

struct gw_feed {
  int kind;
  int follow;
  int ended; /* nothing more will come */
  size_t limit, given;
  bus_tail *tail; /* events */
  /* logs */
  bus_conn *c;
  char filter[BUS_SUBJECT_MAX];
  bus_reader *r;
  bus_batch *b;
  bus_log_lines ll;
  size_t next;   /* the next line of ll to give */
  size_t keep;   /* of the stored lines, the last keep (0: all) */
  int in_stored; /* still reading what was stored at open */
};

static int
alloc_feed(int kind, gw_feed **out) {
  gw_feed *f = calloc(1, sizeof *f);
  *out = f;
  if (!f)
    return bus_error(-ENOMEM, "out of memory");
  f->kind = kind;
  return 0;
}

/* ------------------------------------------------------------- events */

int
gw_events_open(bus_conn *c, const gw_events_query *q, gw_feed **out) {
  *out = NULL;
  const char *s = q->subject && *q->subject ? q->subject : NULL;
  if (q->after_seq &&
      (!s || (strncmp(s, "lark.ev.", 8) && strncmp(s, "lark.run.", 9))))
    return bus_error(BUS_EINVAL, "resuming after an id needs a subject under "
                                 "lark.ev. or lark.run. (one stream)");
  bus_tail_opts o;
  bus_tail_opts_init(&o);
  o.filter = s;
  o.type = q->type && *q->type ? q->type : NULL;
  o.actor = q->actor && *q->actor ? q->actor : NULL;
  o.follow = q->follow;
  o.direct = 1; /* LARK_EVENTS' only consumer of ours is the view's */
  if (q->after_seq)
    o.from_seq = q->after_seq + 1;
  else
    o.since_ns = q->since_ns;
  gw_feed *f;
  int rc = alloc_feed(FEED_EVENTS, &f);
  if (rc)
    return rc;
  f->follow = q->follow;
  f->limit = q->limit;
  if ((rc = bus_tail_open(c, &o, &f->tail)) < 0) {
    gw_feed_close(f);
    return rc;
  }
  *out = f;
  return 0;
}

static int
give_event(const bus_tail_msg *m, gw_rec_fn each, void *ud) {
  json_t *j = cli_event_json(m);
  char *s = j ? cli_json_dumps(j, 0) : NULL;
  json_decref(j);
  if (!s)
    return bus_error(-ENOMEM, "out of memory");
  int rc = each(ud, m->seq, "event", s, strlen(s));
  free(s);
  return rc;
}

static int
events_next(gw_feed *f, gw_rec_fn each, void *ud, int timeout_ms) {
  int n = 0;
  int64_t until = bus_mono_ms() + timeout_ms;
  while (n < FEED_CALL_MAX && !(f->limit && f->given >= f->limit)) {
    int left = n ? 0 : (int)(until - bus_mono_ms());
    bus_tail_msg m;
    int rc = bus_tail_next(f->tail, &m, left > 0 ? left : 0);
    if (rc == BUS_EEOF) {
      f->ended = 1;
      break;
    }
    if (rc < 0)
      return rc;
    if (rc == 0)
      break;
    if ((rc = give_event(&m, each, ud)) != 0)
      return rc;
    f->given++;
    n++;
  }
  if (f->limit && f->given >= f->limit)
    f->ended = 1;
  return n;
}

/* --------------------------------------------------------------- logs */

static int
open_reader(gw_feed *f, uint64_t from_seq, int follow) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_LOGS";
  o.filter = f->filter;
  o.from_seq = from_seq;
  o.follow = follow;
  return bus_reader_open(f->c, &o, &f->r);
}

int
gw_logs_open(bus_conn *c, const gw_logs_query *q, gw_feed **out) {
  *out = NULL;
  const char *pod = q->pod && *q->pod ? q->pod : NULL;
  if (!q->job || !bus_name_valid(q->job, BUS_NAME_MAX))
    return bus_error(BUS_EINVAL, "not a Job name: %s", q->job ? q->job : "");
  if (pod && !bus_name_valid(pod, BUS_DERIVED_NAME_MAX))
    return bus_error(BUS_EINVAL, "not a pod name: %s", pod);
  gw_feed *f;
  int rc = alloc_feed(FEED_LOGS, &f);
  if (rc)
    return rc;
  if (pod)
    snprintf(f->filter, sizeof f->filter, "lark.log.%s.*.%s", q->job, pod);
  else
    snprintf(f->filter, sizeof f->filter, "lark.log.%s.>", q->job);
  f->c = c;
  f->follow = q->follow;
  f->keep = q->tail;
  f->in_stored = 1;
  if (q->user) /* failing that, what is stored */
    lark_logs_sync(c, q->user);
  rc = bus_batch_new(&f->b);
  if (!rc) /* what is stored now, bounded; the follow reader comes after */
    rc = open_reader(f, 1, 0);
  if (rc) {
    gw_feed_close(f);
    return rc;
  }
  *out = f;
  return 0;
}

static int
give_line(const gw_feed *f, const bus_log_entry *ln, gw_rec_fn each, void *ud) {
  const bus_log_src *s = &f->ll.srcs[ln->src];
  json_t *o = json_object();
  if (!o)
    return bus_error(-ENOMEM, "out of memory");
  json_object_set_new(o, "pod", json_string(s->pod));
  json_object_set_new(o, "task", json_string(s->task));
  json_object_set_new(o, "stream", json_string(ln->err ? "stderr" : "stdout"));
  json_object_set_new(o, "ts", json_integer((json_int_t)ln->ts));
  json_object_set_new(o, "line", cli_json_text(ln->text, ln->len));
  char *js = cli_json_dumps(o, 0);
  json_decref(o);
  if (!js)
    return bus_error(-ENOMEM, "out of memory");
  int rc = each(ud, ln->seq, "log", js, strlen(js));
  free(js);
  return rc;
}

/* The stored lines are all read: sort them, keep the last `keep`, and go
 * on from just after the bound with a follow reader, or end. */
static int
stored_done(gw_feed *f) {
  uint64_t end = bus_reader_end_seq(f->r);
  bus_reader_close(f->r);
  f->r = NULL;
  f->in_stored = 0;
  bus_log_lines_sort(&f->ll);
  f->next = f->keep && f->ll.n > f->keep ? f->ll.n - f->keep : 0;
  if (!f->follow) {
    f->ended = 1;
    return 0;
  }
  return open_reader(f, end + 1, 1);
}

/* Following: one fetch into ll, sorted; 1 when it brought lines. */
static int
logs_fetch(gw_feed *f, int timeout_ms) {
  bus_log_lines_clear(&f->ll);
  f->next = 0;
  int rc = bus_reader_next(f->r, f->b, timeout_ms);
  if (rc < 0 && rc != BUS_EEOF && rc != BUS_ETIMEOUT)
    return rc;
  if ((rc = bus_log_lines_collect(&f->ll, f->b)) < 0)
    return rc;
  bus_log_lines_sort(&f->ll);
  return f->ll.n > 0;
}

static int
logs_next(gw_feed *f, gw_rec_fn each, void *ud, int timeout_ms) {
  int n = 0;
  int64_t until = bus_mono_ms() + timeout_ms;
  while (n < FEED_CALL_MAX) {
    if (f->next < f->ll.n && !f->in_stored) {
      int rc = give_line(f, &f->ll.lines[f->next++], each, ud);
      if (rc)
        return rc;
      n++;
      continue;
    }
    if (f->ended)
      break;
    int left = n ? 0 : (int)(until - bus_mono_ms());
    /* the stored part gathers every fetch before it sorts: keep them */
    if (f->in_stored) {
      int rc = bus_reader_next(f->r, f->b, left > 0 ? left : 0);
      if (rc < 0 && rc != BUS_EEOF && rc != BUS_ETIMEOUT)
        return rc;
      int crc = bus_log_lines_collect(&f->ll, f->b);
      if (crc < 0)
        return crc;
      if (rc == BUS_EEOF && (rc = stored_done(f)) < 0)
        return rc;
      if (f->in_stored && !bus_batch_len(f->b) && left <= 0)
        break;
      continue;
    }
    int rc = logs_fetch(f, left > 0 ? left : 0);
    if (rc <= 0)
      return rc < 0 ? rc : n;
  }
  return n;
}

/* ------------------------------------------------------------- common */

int
gw_feed_next(gw_feed *f, gw_rec_fn each, void *ud, int timeout_ms) {
  if (!f)
    return bus_error(BUS_EINVAL, "no feed");
  if (f->ended && (f->kind == FEED_EVENTS || f->next >= f->ll.n))
    return GW_FEED_END;
  int n = f->kind == FEED_EVENTS ? events_next(f, each, ud, timeout_ms)
                                 : logs_next(f, each, ud, timeout_ms);
  if (n == 0 && f->ended && (f->kind == FEED_EVENTS || f->next >= f->ll.n))
    return GW_FEED_END;
  return n;
}

void
gw_feed_close(gw_feed *f) {
  if (!f)
    return;
  bus_tail_close(f->tail);
  bus_reader_close(f->r);
  bus_batch_free(f->b);
  bus_log_lines_free(&f->ll);
  free(f);
}
