/*
 * worker.c - a thread that takes batches from a durable consumer for as
 * long as it runs (bus.h, "worker").
 *
 * The consumer is opened, waiting once a second while its stream is not
 * there yet; it is opened again when a fetch says the broker lost it (a
 * restarted broker forgets a consumer kept in memory, a deleted stream
 * takes its consumers along); a fetch that fails otherwise (the broker out
 * of reach) is tried again after the fetch's wait, so an outage never
 * spins. Every batch with messages goes to the handler, which acks it when
 * it is done with it. The stop flag is atomic: the handler's own retry
 * loops read it through bus_worker_stopping.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bus-int.h"

struct bus_worker {
  bus_conn *c;
  bus_worker_opts o;
  atomic_int stop;
  pthread_t th;
};

void
bus_worker_opts_init(bus_worker_opts *o) {
  *o = (bus_worker_opts){0};
  bus_consumer_opts_init(&o->consumer);
  o->batch = 256;
  o->wait_ms = 200;
}

int
bus_worker_stopping(const bus_worker *w) {
  return atomic_load(&w->stop);
}

void
bus_worker_nap(const bus_worker *w, int ms) {
  for (; ms > 0 && !bus_worker_stopping(w); ms -= 50)
    bus_sleep_ms(ms < 50 ? ms : 50);
}

static void
say(const bus_worker *w, const char *fmt, ...) {
  if (!w->o.log)
    return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  w->o.log(line, w->o.ud);
}

/* Open the consumer, once a second until it opens; NULL when stopped. */
static bus_consumer *
open_consumer(bus_worker *w) {
  for (int said = 0; !bus_worker_stopping(w); said = 1) {
    bus_consumer *k = NULL;
    if (bus_consumer_open(w->c, &w->o.consumer, &k) == 0)
      return k;
    if (!said)
      say(w, "cannot consume %s yet: %s", w->o.consumer.stream,
          bus_last_error());
    bus_worker_nap(w, 1000);
  }
  return NULL;
}

static void *
run(void *arg) {
  bus_worker *w = arg;
  bus_batch *b = NULL;
  bus_consumer *k = bus_batch_new(&b) ? NULL : open_consumer(w);
  while (k && !bus_worker_stopping(w)) {
    int rc = bus_consumer_fetch(k, w->o.batch, w->o.wait_ms, b);
    if (rc == BUS_ENOT_FOUND) {
      say(w, "%s; opening it again", bus_last_error());
      bus_consumer_close(k);
      k = open_consumer(w);
      continue;
    }
    if (rc == 0 && bus_batch_len(b))
      w->o.handle(w, b, w->o.ud);
    else if (rc)
      bus_worker_nap(w, w->o.wait_ms);
    if (w->o.tick)
      w->o.tick(w, w->o.ud);
  }
  bus_batch_free(b);
  bus_consumer_close(k);
  return NULL;
}

int
bus_worker_start(bus_conn *c, const bus_worker_opts *o, bus_worker **out) {
  if (!o->handle || !o->consumer.stream || !o->consumer.durable)
    return BUS_ERR(BUS_EINVAL, "a worker needs a handler, a stream and a "
                               "durable consumer");
  bus_worker *w = calloc(1, sizeof *w);
  if (!w)
    return BUS_ERR(-ENOMEM, "out of memory");
  w->c = c;
  w->o = *o;
  if (w->o.batch <= 0)
    w->o.batch = 256;
  if (w->o.wait_ms <= 0)
    w->o.wait_ms = 200;
  atomic_init(&w->stop, 0);
  int e = pthread_create(&w->th, NULL, run, w);
  if (e) {
    free(w);
    return BUS_ERR(-e, "cannot start a thread");
  }
  *out = w;
  return 0;
}

void
bus_worker_stop(bus_worker *w) {
  if (!w)
    return;
  atomic_store(&w->stop, 1);
  pthread_join(w->th, NULL);
  free(w);
}
