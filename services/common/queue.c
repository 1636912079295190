/*
 * queue.c - what a part working a queue on a bus_worker shares with the
 * others (queue.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"

void
svc_queue_init(svc_queue *q, const svc_queue_opts *o, const svc_queue_opts *def,
               const char *filter) {
  memset(q, 0, sizeof *q);
  q->o = o ? *o : *def;
  if (!q->o.durable)
    q->o.durable = def->durable;
  if (q->o.batch <= 0)
    q->o.batch = def->batch;
  if (q->o.ack_wait_ns <= 0)
    q->o.ack_wait_ns = def->ack_wait_ns;
  q->filter = filter;
  msgpack_sbuffer_init(&q->sb);
  pthread_mutex_init(&q->mu, NULL);
}

void
svc_queue_say(const svc_queue *q, const char *subject, const char *fmt,
              const char *a) {
  char msg[1024];
  snprintf(msg, sizeof msg, fmt, a);
  if (q->o.log)
    q->o.log(subject, msg, q->o.ud);
}

/* Not refused, only not stored yet: the broker did not answer, or others
 * kept moving the subject on (BUS_EBUSY, bus_append_rebased). */
static int
transient(int rc) {
  return rc == BUS_ETIMEOUT || rc == BUS_ECONN || rc == BUS_ENO_STREAM ||
         rc == BUS_EBUSY;
}

int
svc_queue_until_stored(svc_queue *q, const char *subject,
                       int (*attempt)(void *ud), void *ud) {
  int delay_ms = 50;
  for (;;) {
    int rc = attempt(ud);
    if (!transient(rc)) {
      if (rc)
        svc_queue_say(q, subject, "refused: %s", bus_last_error());
      return rc;
    }
    svc_queue_say(q, subject, "not stored yet, trying again: %s",
                  bus_last_error());
    bus_worker_nap(q->w, delay_ms);
    delay_ms = delay_ms < 1000 ? delay_ms * 2 : 2000;
    if (bus_worker_stopping(q->w))
      return 1;
  }
}

static void
worker_log(const char *line, void *ud) {
  const svc_queue *q = ud;
  svc_queue_say(q, q->filter, "%s", line);
}

int
svc_queue_start(svc_queue *q, bus_conn *c, bus_worker_opts *wo) {
  wo->consumer.durable = q->o.durable;
  wo->consumer.filter = q->filter;
  wo->consumer.ack_wait_ns = q->o.ack_wait_ns;
  wo->batch = q->o.batch;
  wo->log = worker_log;
  if (q->o.tick)
    wo->tick = q->o.tick;
  wo->ud = q;
  int rc = bus_worker_start(c, wo, &q->worker);
  if (rc)
    svc_queue_destroy(q);
  return rc;
}

int
svc_queue_ingress(svc_queue *q, bus_conn *c, const svc_queue_opts *o,
                  const svc_queue_opts *def, const char *filter,
                  void (*handle)(bus_worker *w, bus_batch *b, void *ud)) {
  svc_queue_init(q, o, def, filter);
  bus_worker_opts wo;
  bus_worker_opts_init(&wo);
  wo.consumer.stream = "LARK_INGRESS";
  wo.handle = handle;
  return svc_queue_start(q, c, &wo);
}

int
svc_ingress_start(size_t size, bus_conn *c, bus_view *v,
                  const svc_queue_opts *o, const svc_queue_opts *def,
                  const char *filter,
                  void (*handle)(bus_worker *w, bus_batch *b, void *ud),
                  void **out) {
  svc_ingress *in = calloc(1, size);
  if (!in)
    return bus_error(-ENOMEM, "out of memory");
  in->c = c;
  in->v = v;
  int rc = svc_queue_ingress(&in->q, c, o, def, filter, handle);
  if (rc) {
    free(in);
    return rc;
  }
  *out = in;
  return 0;
}

void
svc_ingress_stop(svc_ingress *in) {
  if (!in)
    return;
  svc_queue_destroy(&in->q);
  free(in);
}

void
svc_queue_destroy(svc_queue *q) {
  bus_worker_stop(q->worker);
  q->worker = NULL;
  msgpack_sbuffer_destroy(&q->sb);
  pthread_mutex_destroy(&q->mu);
}
