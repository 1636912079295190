/*
 * stream.c - a stream read to its end, a batch or an event at a time.
 */
#include "stream.h"

#include <stdio.h>
#include <string.h>

int
lt_read_batches(bus_conn *c, const char *stream, const char *filter,
                int wait_ms, int to_end, lt_batch_fn fn, void *arg) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = stream;
  o.filter = filter;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  if (bus_batch_new(&b))
    return -1;
  if (bus_reader_open(c, &o, &r)) {
    bus_batch_free(b);
    return -1;
  }
  int rc;
  do {
    rc = bus_reader_next(r, b, wait_ms);
    fn(b, arg);
  } while (rc == 0);
  bus_reader_close(r);
  bus_batch_free(b);
  return to_end && rc != BUS_EEOF ? -1 : 0;
}

typedef struct each {
  lt_event_fn fn;
  void *arg;
  size_t bad;  /* messages that did not decode */
  uint64_t at; /* the first one's sequence */
  int status;  /* and its decoder's error */
} each;

static void
each_event(bus_batch *b, void *arg) {
  each *e = arg;
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const bus_event *ev = bus_batch_event(b, i);
    if (ev)
      e->fn(ev, e->arg);
    else if (!e->bad++) {
      e->status = bus_batch_status(b, i);
      bus_batch_meta(b, i, NULL, &e->at, NULL);
    }
  }
}

int
lt_read_stream(bus_conn *c, const char *stream, const char *filter, int wait_ms,
               int to_end, lt_event_fn fn, void *arg) {
  each e = {.fn = fn, .arg = arg};
  if (lt_read_batches(c, stream, filter, wait_ms, to_end, each_event, &e))
    return -1;
  if (e.bad)
    return bus_error(-1,
                     "%zu message(s) in %s do not decode, the first "
                     "(seq %llu): %s",
                     e.bad, stream, (unsigned long long)e.at,
                     bus_strerror(e.status));
  return 0;
}

typedef struct of_type {
  const char *type, *subject;
  long n;
} of_type;

static void
count_of_type(const bus_event *ev, void *arg) {
  of_type *k = arg;
  k->n += !strcmp(ev->type, k->type) &&
          (!k->subject || (ev->subject && !strcmp(ev->subject, k->subject)));
}

long
lt_count_events(bus_conn *c, const char *stream, const char *filter,
                const char *type, const char *subject) {
  of_type k = {type, subject, 0};
  if (lt_read_stream(c, stream, filter, 2000, 1, count_of_type, &k))
    return -1;
  return k.n;
}

int
lt_read_runs(bus_conn *c, const char *job, int wait_ms, int to_end,
             lt_event_fn fn, void *arg) {
  char filter[BUS_SUBJECT_MAX];
  snprintf(filter, sizeof filter, "lark.run.%s", job);
  return lt_read_stream(c, "LARK_RUNS", filter, wait_ms, to_end, fn, arg);
}

uint64_t
lt_last_on(bus_conn *c, const char *stream, const char *subject, char *type,
           size_t cap) {
  msgpack_zone z;
  bus_event ev;
  uint64_t seq = 0;
  msgpack_zone_init(&z, 1024);
  memset(&ev, 0, sizeof ev);
  if (type)
    type[0] = 0;
  if (bus_last_event(c, stream, subject, &ev, &z) == 0) {
    if (type)
      snprintf(type, cap, "%s", ev.type);
    seq = ev.seq;
  }
  msgpack_zone_destroy(&z);
  return seq;
}
