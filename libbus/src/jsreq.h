/*
 * jsreq.h - JetStream API requests in flight together (jsreq.c).
 *
 * nats.c's JetStream calls wait for each answer before the next request
 * goes out; a broker busy with a fleet answers each after a queue of
 * other clients' requests, so n calls cost n queue waits. These go out
 * together (at most a window of them unanswered) and cost about one.
 */
#ifndef LARK_BUS_JSREQ_H
#define LARK_BUS_JSREQ_H

#include <stddef.h>

#include "nats-int.h"

/* One request: its subject and JSON body in; the broker's answer out
 * (malloc'd, NUL-terminated; NULL when none came: no responders, or no
 * answer within the connection's JetStream wait). */
typedef struct bus__jsreq {
  const char *subject;
  const char *body;
  char *answer;
} bus__jsreq;

/*
 * Send every request of v, at most BUS__JSREQ_WINDOW unanswered at a
 * time, and gather their answers. Returns 0 once every request has been
 * sent and answered or given up on (see answer), or an error when the
 * requests could not be sent at all. bus__jsreq_free frees the answers.
 */
#define BUS__JSREQ_WINDOW 512
int bus__jsreq_run(bus_conn *c, bus__jsreq *v, size_t n);
void bus__jsreq_free(bus__jsreq *v, size_t n);

/* The JetStream error code of an answer ("err_code"), 0 when it is none. */
int bus__jsreq_err(const char *answer);

#endif
