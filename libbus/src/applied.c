/*
 * applied.c - waiting until a view has applied a sequence.
 *
 * A command handler that must see an event in the view (one stored just
 * before it came, or the one its retry found already stored) waits here
 * instead of polling: every commit of the view publishes its applied
 * sequence under a mutex and wakes the waiters (a condition variable on
 * the monotonic clock). The service loop is the view's only writer, so it
 * is the one that signals, once per committed batch. A waiter holds the
 * mutex only to compare and sleep; the loop takes it only to store one
 * number, so neither holds up the other.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "view-int.h"

void
bus__view_applied_init(bus_view *v) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&v->applied_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&v->applied_mu, NULL);
  v->applied_seq = 0;
}

void
bus__view_applied_destroy(bus_view *v) {
  pthread_cond_destroy(&v->applied_cv);
  pthread_mutex_destroy(&v->applied_mu);
}

void
bus__view_applied_signal(bus_view *v) {
  pthread_mutex_lock(&v->applied_mu);
  if (v->c.applied_seq != v->applied_seq) {
    v->applied_seq = v->c.applied_seq;
    pthread_cond_broadcast(&v->applied_cv);
  }
  pthread_mutex_unlock(&v->applied_mu);
}

int
bus_view_wait_applied(bus_view *v, uint64_t seq, int timeout_ms) {
  struct timespec until = bus_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
  int rc = 0;
  pthread_mutex_lock(&v->applied_mu);
  while (v->applied_seq < seq && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&v->applied_cv, &v->applied_mu, &until);
  uint64_t applied = v->applied_seq;
  pthread_mutex_unlock(&v->applied_mu);
  if (applied >= seq)
    return 0;
  return BUS_ERR(BUS_ETIMEOUT,
                 "view %s has applied up to sequence %llu, not yet %llu, "
                 "after %d ms",
                 v->def.name, (unsigned long long)applied,
                 (unsigned long long)seq, timeout_ms);
}

int
bus_view_catch_up(bus_conn *c, bus_view *v, const char *stream,
                  int timeout_ms) {
  uint64_t last = 0;
  int rc = bus_stream_last_seq(c, stream ? stream : "LARK_EVENTS", &last);
  if (rc < 0)
    return rc;
  return bus_view_wait_applied(v, last, timeout_ms);
}
