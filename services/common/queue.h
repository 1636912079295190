/*
 * queue.h - a part that works a queue of messages on a bus_worker (an
 * ingress, an appender): its options, its log line, and its worker's
 * start and stop. lark-logs' and lark-devices' ingress (svc_ingress) and
 * lark-reports' appender are such parts; each keeps an svc_queue as the first
 * member of its own struct, so the worker's ud is both.
 */
#ifndef LARK_QUEUE_H
#define LARK_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "bus.h"

typedef struct svc_queue_opts {
  const char *durable; /* the consumer on the queue's stream */
  int batch;           /* messages per fetch */
  int64_t ack_wait_ns; /* redelivery after a crash */
  /* one line per refused message or failure; may be NULL */
  void (*log)(const char *subject, const char *msg, void *ud);
  void *ud;
  /* the part's own periodic work, on the worker's thread; may be NULL */
  void (*tick)(bus_worker *w, void *part);
} svc_queue_opts;

typedef struct svc_queue {
  svc_queue_opts o;
  const char *filter; /* what it consumes; the subject of its own lines */
  bus_worker *worker;
  bus_worker *w;      /* the worker, as its handler was given it */
  msgpack_sbuffer sb; /* the handler's scratch */
  pthread_mutex_t mu; /* guards the part's counters */
} svc_queue;

/* o (NULL: def) with def's values where o leaves one unset, an empty
 * scratch buffer and the mutex. */
void svc_queue_init(svc_queue *q, const svc_queue_opts *o,
                    const svc_queue_opts *def, const char *filter);
/*
 * Start the worker on wo's stream and handle (and any other setting the
 * part wants); the consumer's durable, filter and ack wait, the batch,
 * the log, the tick (when set) and ud (q) come from q. On error q is
 * destroyed.
 */
int svc_queue_start(svc_queue *q, bus_conn *c, bus_worker_opts *wo);
/*
 * svc_queue_init then svc_queue_start for a part that works the nodes'
 * ingress: the worker on LARK_INGRESS under filter, with handle (its ud
 * is q). The part around q is ready before this is called: handle may
 * run at once. On error q is destroyed.
 */
int svc_queue_ingress(svc_queue *q, bus_conn *c, const svc_queue_opts *o,
                      const svc_queue_opts *def, const char *filter,
                      void (*handle)(bus_worker *w, bus_batch *b, void *ud));
/*
 * A part that works the nodes' ingress beside its service's view
 * (lark-logs', lark-devices'): the queue first (the worker's ud is the
 * part), the connection it appends on and the view it checks against. A
 * part with more state starts its own struct with one.
 */
typedef struct svc_ingress {
  svc_queue q;
  bus_conn *c;
  bus_view *v;
} svc_ingress;
/*
 * A part of size bytes (a struct starting with an svc_ingress), zeroed,
 * on c and v, its worker started as svc_queue_ingress starts one: 0 and
 * *out, or the error with nothing left.
 */
int svc_ingress_start(size_t size, bus_conn *c, bus_view *v,
                      const svc_queue_opts *o, const svc_queue_opts *def,
                      const char *filter,
                      void (*handle)(bus_worker *w, bus_batch *b, void *ud),
                      void **out);
/* Stop and free a part svc_ingress_start made; NULL does nothing. */
void svc_ingress_stop(svc_ingress *in);
/* Stop the worker, if started, and free what init made. */
void svc_queue_destroy(svc_queue *q);
/* One line through q's log: fmt with one string argument. */
void svc_queue_say(const svc_queue *q, const char *subject, const char *fmt,
                   const char *a);

/*
 * Call attempt(ud) until it gives anything but a transient failure (a
 * timeout, no connection, a stream not there yet, a busy subject), napping 50
 * ms, doubling to 2 s, between tries and saying each one on q: its last result
 * (0, or a refusal, said as "refused: ..."), or 1 when q's worker was told to
 * stop.
 */
int svc_queue_until_stored(svc_queue *q, const char *subject,
                           int (*attempt)(void *ud), void *ud);

#endif
