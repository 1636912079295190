/*
 * drainer.c - a thread that runs a round when kicked (drainer.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "bus-int.h"
#include "drainer.h"

struct bus__drainer {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* kicked, or told to stop */
  bus__drainer_fn fn;
  void *ud;
  int period_ms;
  int kicked, stop, err;
};

static void *
run(void *arg) {
  bus__drainer *d = arg;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    struct timespec until = bus_deadline_ms(CLOCK_MONOTONIC, d->period_ms);
    while (!d->kicked && !d->stop &&
           pthread_cond_timedwait(&d->cv, &d->mu, &until) != ETIMEDOUT)
      ;
    int kicked = d->kicked;
    if (d->stop && !kicked)
      break;
    d->kicked = 0;
    pthread_mutex_unlock(&d->mu);
    int rc = d->fn(d->ud, kicked);
    pthread_mutex_lock(&d->mu);
    if (rc && !d->err)
      d->err = rc;
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

int
bus__drainer_start(bus__drainer **out, bus__drainer_fn fn, void *ud,
                   int period_ms) {
  bus__drainer *d = calloc(1, sizeof *d);
  if (!d)
    return BUS_ERR(-ENOMEM, "out of memory starting a drainer");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&d->mu, NULL);
  d->fn = fn, d->ud = ud, d->period_ms = period_ms > 0 ? period_ms : 200;
  int rc = pthread_create(&d->th, NULL, run, d);
  if (rc) {
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return BUS_ERR(-rc, "cannot start a drainer thread");
  }
  *out = d;
  return 0;
}

void
bus__drainer_kick(bus__drainer *d) {
  pthread_mutex_lock(&d->mu);
  d->kicked = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

int
bus__drainer_err(bus__drainer *d) {
  pthread_mutex_lock(&d->mu);
  int err = d->err;
  pthread_mutex_unlock(&d->mu);
  return err;
}

void
bus__drainer_stop(bus__drainer *d) {
  if (!d)
    return;
  pthread_mutex_lock(&d->mu);
  d->stop = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->th, NULL);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  free(d);
}
