/*
 * follow.c - a thread that tails one filter of a stream (relay-int.h):
 * the routes follower and the hub's revocation follower use it.
 *
 * Invariants:
 * - Consumers are ephemeral and ack-none: a relay keeps nothing on the
 *   broker and reads its slice again from the start (or the last per
 *   subject) after any failure. An ephemeral consumer may vanish during
 *   an outage while fetches just time out, so an idle follower asks for
 *   its consumer's state every CHECK_EVERY_S and starts over when that
 *   fails.
 * - Each consumer is named for the connection's principal
 *   (bus_consumer_name, prefix RELAY_CONSUMER_PREFIX or the hooks'), so the
 * broker's rules pin both its name and its filter (deploy/policy.c, roles relay
 *   and relay-hub). The name is the same at every start, so each start
 *   deletes the previous consumer first (recreate): joining it would
 *   carry on from where it stood instead of from the start. The follower
 *   deletes its consumer when it stops; one left by a crash goes after
 *   the server's inactive threshold, or at the next start.
 * - Hooks run only in the follower's thread; stop joins it, so no hook
 *   runs after relay__tail_stop returns.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay-int.h"

#define FETCH_MAX 256
#define FETCH_WAIT_MS 250
#define CHECK_EVERY_S 2
#define RETRY_MS 500

struct relay__tail {
  bus_conn *c;
  relay__tail_hooks h;
  char stream[64], filter[BUS_SUBJECT_MAX], name[128];
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;   /* under mu */
  int synced; /* under mu */
};

/* Sleep ms unless stopped; returns whether to stop. */
static int
pause_ms(relay__tail *f, int ms) {
  struct timespec ts = bus_deadline_ms(CLOCK_REALTIME, ms);
  pthread_mutex_lock(&f->mu);
  if (!f->stop)
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
  int stop = f->stop;
  pthread_mutex_unlock(&f->mu);
  return stop;
}

static int
stopping(relay__tail *f) {
  return relay__locked_int(&f->mu, &f->stop);
}

/* Apply a batch; returns whether anything changed. */
static int
apply_batch(relay__tail *f, bus_batch *b) {
  int changed = 0;
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const char *subject = NULL;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    if (f->h.apply(subject, bus_batch_event(b, i), f->h.ud) == 1)
      changed = 1;
  }
  return changed;
}

/* Whether the consumer still stands; the first time nothing is pending,
 * caught_up runs. */
static int
check(relay__tail *f, bus_consumer *k, int *caught_up, int *changed) {
  uint64_t pending = 0;
  if (bus_consumer_pending(k, &pending))
    return 0;
  if (!pending && !*caught_up) {
    *caught_up = 1;
    if (f->h.caught_up && f->h.caught_up(f->h.ud) == 1)
      *changed = 1;
    pthread_mutex_lock(&f->mu);
    f->synced = 1;
    pthread_mutex_unlock(&f->mu);
  }
  return 1;
}

/* Follow with one consumer until it fails or the follower stops. */
static void
follow_once(relay__tail *f, bus_consumer *k, bus_batch *b) {
  int caught_up = 0;
  time_t last = 0;
  if (f->h.begin)
    f->h.begin(f->h.ud);
  while (!stopping(f)) {
    if (bus_consumer_fetch(k, FETCH_MAX, FETCH_WAIT_MS, b))
      return;
    size_t n = bus_batch_len(b);
    int changed = apply_batch(f, b);
    time_t now = time(NULL);
    if ((n < FETCH_MAX && !caught_up) || (!n && now - last >= CHECK_EVERY_S)) {
      last = now;
      if (!check(f, k, &caught_up, &changed))
        return;
    }
    if (changed && f->h.changed)
      f->h.changed(f->h.ud);
  }
}

static void *
tail_main(void *arg) {
  relay__tail *f = arg;
  bus_batch *b = NULL;
  if (bus_batch_new(&b))
    return NULL;
  int opened = 0;
  while (!stopping(f)) {
    bus_consumer_opts o;
    bus_consumer *k = NULL;
    bus_consumer_opts_init(&o);
    o.stream = f->stream;
    o.name = f->name;
    o.recreate = 1;
    o.filter = f->filter;
    o.deliver = f->h.deliver;
    o.ack_none = 1;
    if (bus_consumer_open(f->c, &o, &k)) {
      if (pause_ms(f, RETRY_MS))
        break;
      continue;
    }
    opened = 1;
    follow_once(f, k, b);
    bus_consumer_close(k);
  }
  if (opened)
    bus_consumer_delete(f->c, f->stream, f->name);
  bus_batch_free(b);
  return NULL;
}

int
relay__tail_start(bus_conn *c, const relay__tail_hooks *h, relay__tail **out) {
  if (!c || !h->stream || !h->filter || !h->apply || strlen(h->stream) >= 64 ||
      strlen(h->filter) >= BUS_SUBJECT_MAX)
    return bus_error(BUS_EINVAL, "follow: bad arguments");
  relay__tail *f = calloc(1, sizeof *f);
  if (!f)
    return -ENOMEM;
  f->c = c;
  f->h = *h;
  snprintf(f->stream, sizeof f->stream, "%s", h->stream);
  snprintf(f->filter, sizeof f->filter, "%s", h->filter);
  int rc = bus_consumer_name(c, h->prefix ? h->prefix : RELAY_CONSUMER_PREFIX,
                             f->name, sizeof f->name);
  if (rc) {
    free(f);
    return rc;
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  rc = pthread_create(&f->th, NULL, tail_main, f);
  if (rc) {
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return bus_error(-rc, "follow: no thread");
  }
  *out = f;
  return 0;
}

int
relay__tail_synced(relay__tail *f) {
  return relay__locked_int(&f->mu, &f->synced);
}

void
relay__tail_stop(relay__tail *f) {
  if (!f)
    return;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->th, NULL);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}
