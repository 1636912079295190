/*
 * reports.c - the appender: users' reports from LARK_REPORTS to LARK_RUNS.
 *
 * Invariants:
 * - The actor of every appended run.reported is the <user> token of the
 *   subject the broker took the report on (lark.rep.<user>.<job>); the
 *   body's actor is never read. Its ts is the broker's storage time of
 *   the report, its cause the report's id.
 * - A report is acknowledged only once its event is stored: a fetched
 *   batch (at most BUS_ATOMIC_MAX) is appended as one atomic batch to
 *   LARK_RUNS and only then acknowledged (each message: a work queue
 *   takes explicit acks only). The platform's single server syncs every
 *   message before its ack, so asynchronous appends would pay one fsync
 *   per report; an atomic batch pays a few for the whole batch.
 * - Each event's Nats-Msg-Id is derived from the user and the report's
 *   id. A batch holding a report already stored within the duplicate
 *   window (a batch redelivered after it landed and before its ack, or
 *   retried after a commit that timed out but landed) is refused whole
 *   (BUS_EEXISTS); that batch then goes one report at a time with the
 *   ordinary append, which answers a duplicate as a duplicate, so nothing
 *   is lost or doubled. The same is done for a batch the broker answers
 *   but will not take whole (BUS_EBROKER: atomic batches not allowed on
 *   LARK_RUNS, too many batches in flight, a batch broken by a
 *   reconnection; BUS_ETOO_BIG: a server limit below BUS_ATOMIC_MAX):
 *   slower, never stuck.
 * - A broker failure (no responders, a missing stream, a lost connection,
 *   a timeout: the batch may or may not be stored) appends the same batch
 *   again after a backoff, for as long as it takes; a repeat that had
 *   landed is told by BUS_EEXISTS.
 * - A report that can never be stored (undecodable, not a run.reported,
 *   a bad user or job name, too big for LARK_RUNS) is refused: logged,
 *   counted, acknowledged with its batch, never retried.
 * - Order: one thread appends in delivery order on one connection, a batch
 *   lands whole and contiguous, and one report at a time goes in order,
 *   stopping at a failure and going on from that report; so a job's
 *   reports keep the order the broker took them in. Only a crash can
 *   change it: reports fetched by a killed appender come again after
 *   ack_wait, behind newer ones when they had not landed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reports.h"

#define PREFIX "lark.rep."
#define FILTER "lark.rep.>"
#define RUNS "LARK_RUNS"
/* Room for the headers LARK_RUNS counts in its limit: Nats-Msg-Id (32),
 * Lark-Type (run.reported), the batch's own (Nats-Batch-Id, -Sequence,
 * -Commit, Nats-Expected-Stream: about 130 bytes) and the framing. */
#define HEADER_ROOM 512
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

typedef struct staged {
  char subject[BUS_SUBJECT_MAX];
  char id[33];
  char actor[BUS_NAME_MAX + 1];
  bus_event ev;
} staged;

struct reports {
  svc_queue q; /* first: the worker's ud */
  bus_conn *c;
  reports_stats st;
  staged *staged;
  bus_atomic_item *items; /* staged[i] as batch items */
  int32_t runs_max;
};

void
reports_opts_init(reports_opts *o) {
  memset(o, 0, sizeof *o);
  o->durable = "reports";
  o->batch = BUS_ATOMIC_MAX;
  o->ack_wait_ns = INT64_C(10000000000);
}

static void
say(reports *r, const char *subject, const char *fmt, const char *a) {
  svc_queue_say(&r->q, subject, fmt, a);
}

int
reports_subject(const char *subject, char user[BUS_NAME_MAX + 1],
                char job[BUS_NAME_MAX + 1]) {
  const char *u = subject + strlen(PREFIX), *dot;
  if (strncmp(subject, PREFIX, strlen(PREFIX)) || !(dot = strchr(u, '.')))
    return bus_error(BUS_ENAME, "%s is not lark.rep.<user>.<job>", subject);
  size_t ul = (size_t)(dot - u), jl = strlen(dot + 1);
  if (ul > BUS_NAME_MAX || jl > BUS_NAME_MAX)
    return bus_error(BUS_ENAME, "%s: a name is too long", subject);
  memcpy(user, u, ul);
  user[ul] = 0;
  memcpy(job, dot + 1, jl + 1);
  if (!bus_name_valid(user, BUS_NAME_MAX) || !bus_name_valid(job, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "%s: bad user or job name", subject);
  return 0;
}

/* Message i of b as the event to append, or the reason it is refused. */
static int
stage(reports *r, const bus_batch *b, size_t i, staged *s) {
  const char *subject;
  char job[BUS_NAME_MAX + 1], src[BUS_NAME_MAX + 40];
  int64_t stored_ns = 0;
  bus_batch_meta(b, i, &subject, NULL, &stored_ns);
  int rc = reports_subject(subject, s->actor, job);
  if (rc)
    return rc;
  const bus_event *in = bus_batch_event(b, i);
  if (!in)
    return bus_error(bus_batch_status(b, i), "undecodable: %s",
                     bus_strerror(bus_batch_status(b, i)));
  if (in->t != BUS_T_RUN_REPORTED)
    return bus_error(BUS_EUNKNOWN_TYPE, "a %s is not a report", in->type);
  if ((rc = bus_subj_run_reported(s->subject, sizeof s->subject, job)))
    return rc;
  /* the user's own namespace of ids: one user cannot shadow another's */
  snprintf(src, sizeof src, "%s/%s", s->actor, in->id);
  bus_event_derive_id(src, 0, s->id);
  s->ev = (bus_event){.v = BUS_SCHEMA_VERSION,
                      .type = "run.reported",
                      .id = s->id,
                      .ts = stored_ns,
                      .actor = s->actor,
                      .cause = in->id,
                      .data = in->data};
  msgpack_sbuffer_clear(&r->q.sb);
  if ((rc = bus_event_encode(&s->ev, &r->q.sb)) < 0)
    return rc;
  if (r->runs_max > 0 && r->q.sb.size + HEADER_ROOM > (size_t)r->runs_max)
    return bus_error(BUS_ETOO_BIG, "%zu bytes: more than LARK_RUNS takes",
                     r->q.sb.size);
  return 0;
}

/* What one batch came to, added to the stats once it is acknowledged. */
typedef struct tally {
  uint64_t appended, refused, duplicates, singles;
} tally;

/*
 * After a broker failure: log it, count it (at once: a retry shows while
 * the batch waits), wait *backoff ms (doubled for next time, up to
 * BACKOFF_MAX_MS). Non-zero when told to stop (then nothing of the batch
 * is acknowledged).
 */
static int
backoff_wait(reports *r, int *backoff, const char *what) {
  say(r, FILTER, what, bus_last_error());
  pthread_mutex_lock(&r->q.mu);
  r->st.retries++;
  pthread_mutex_unlock(&r->q.mu);
  bus_worker_nap(r->q.w, *backoff);
  *backoff = *backoff < BACKOFF_MAX_MS / 2 ? *backoff * 2 : BACKOFF_MAX_MS;
  return bus_worker_stopping(r->q.w);
}

/* A single append refused for the event itself: retrying cannot help. */
static int
event_refused(int rc) {
  return rc == BUS_ETOO_BIG || rc == BUS_EINVAL;
}

/*
 * Append s[0..n) one at a time with the ordinary append, in order: a
 * report already stored is answered as a duplicate (counted, not stored
 * again); a broker failure waits and retries the same report, so none
 * lands behind a later one. 0, or <0 when told to stop first.
 */
static int
append_each(reports *r, const staged *s, size_t n, tally *t) {
  int backoff = BACKOFF_MIN_MS;
  t->singles++;
  for (size_t i = 0; i < n;) {
    int dup = 0;
    int rc = bus_append(r->c, s[i].subject, &s[i].ev, BUS_APPEND_NOCHECK, NULL,
                        &dup);
    if (rc == 0 || event_refused(rc)) {
      if (rc)
        say(r, s[i].subject, "refused by the broker: %s", bus_last_error());
      t->refused += rc != 0;
      t->appended += rc == 0;
      t->duplicates += rc == 0 && dup;
      i++;
      backoff = BACKOFF_MIN_MS;
    } else if (backoff_wait(r, &backoff, "appending again: %s")) {
      return rc;
    }
  }
  return 0;
}

/* Whether a refused atomic batch should go one report at a time: the
 * broker answered and would take its events, only not as this batch. */
static int
batch_refused(int rc) {
  return rc == BUS_EEXISTS || rc == BUS_EBROKER || rc == BUS_ETOO_BIG;
}

/*
 * Append s[0..n) as one atomic batch and wait until it is stored; retried
 * whole after a broker failure (a timeout included: the retry tells, by
 * BUS_EEXISTS, that it had landed). 0, or <0 when told to stop first.
 */
static int
append_batch(reports *r, const staged *s, size_t n, tally *t) {
  for (size_t i = 0; i < n; i++)
    r->items[i] = (bus_atomic_item){s[i].subject, &s[i].ev, BUS_APPEND_NOCHECK};
  for (int backoff = BACKOFF_MIN_MS;;) {
    int rc = n ? bus_append_atomic(r->c, RUNS, r->items, n, NULL) : 0;
    if (rc == 0) {
      t->appended += n;
      return 0;
    }
    if (batch_refused(rc)) {
      if (rc != BUS_EEXISTS) /* a redelivery is expected, this is not */
        say(r, FILTER, "one report at a time: %s", bus_last_error());
      return append_each(r, s, n, t);
    }
    if (backoff_wait(r, &backoff, "appending the batch again: %s"))
      return rc;
  }
}

static void
add_tally(reports *r, const tally *t, uint64_t last) {
  pthread_mutex_lock(&r->q.mu);
  r->st.appended += t->appended;
  r->st.refused += t->refused;
  r->st.duplicates += t->duplicates;
  r->st.singles += t->singles;
  r->st.last_seq = last;
  pthread_mutex_unlock(&r->q.mu);
}

/* Stage, append and acknowledge one fetched batch. */
static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  reports *r = ud;
  r->q.w = w;
  size_t n = 0, len = bus_batch_len(b);
  uint64_t last = 0;
  tally t = {0};
  for (size_t i = 0; i < len; i++) {
    const char *subject;
    bus_batch_meta(b, i, &subject, &last, NULL);
    if (stage(r, b, i, &r->staged[n]) == 0) {
      n++;
      continue;
    }
    t.refused++;
    say(r, subject, "refused: %s", bus_last_error());
  }
  if (append_batch(r, r->staged, n, &t) < 0)
    return; /* stopping: redelivered to the next appender */
  int rc = bus_batch_ack(b);
  if (rc)
    say(r, FILTER, "ack: %s (the batch comes again; its appends are dups)",
        bus_last_error());
  add_tally(r, &t, last);
}

int
reports_start(bus_conn *c, const reports_opts *o, reports **out) {
  reports_opts def;
  reports_opts_init(&def);
  reports *r = calloc(1, sizeof *r);
  if (!r)
    return bus_error(BUS_EINVAL, "out of memory");
  r->c = c;
  svc_queue_init(&r->q, o, &def, FILTER);
  /* one fetched batch is one atomic batch */
  if (r->q.o.batch > BUS_ATOMIC_MAX)
    r->q.o.batch = BUS_ATOMIC_MAX;
  r->runs_max = bus_stream_msg_max("LARK_RUNS");
  r->staged = calloc((size_t)r->q.o.batch, sizeof *r->staged);
  r->items = calloc((size_t)r->q.o.batch, sizeof *r->items);
  /* The appender: a worker on LARK_REPORTS, waiting for the stream while
   * `larkctl init` has not made it. A work queue takes explicit acks only:
   * bus_batch_ack acks each. */
  bus_worker_opts wo;
  bus_worker_opts_init(&wo);
  wo.consumer.stream = "LARK_REPORTS";
  wo.consumer.max_ack_pending = r->q.o.batch * 4;
  wo.handle = handle_batch;
  int rc = 0;
  if (!r->staged || !r->items) {
    rc = bus_error(-ENOMEM, "out of memory");
    svc_queue_destroy(&r->q);
  } else {
    rc = svc_queue_start(&r->q, c, &wo);
  }
  if (rc) {
    free(r->staged);
    free(r->items);
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void
reports_get_stats(reports *r, reports_stats *st) {
  pthread_mutex_lock(&r->q.mu);
  *st = r->st;
  pthread_mutex_unlock(&r->q.mu);
}

void
reports_stop(reports *r) {
  if (!r)
    return;
  svc_queue_destroy(&r->q);
  free(r->staged);
  free(r->items);
  free(r);
}
