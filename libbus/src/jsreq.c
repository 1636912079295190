/*
 * jsreq.c - JetStream API requests in flight together (jsreq.h).
 *
 * The requests go out on a raw pipe (pipe.c): each a plain publish whose
 * reply subject names its slot, the slots of one run counting from 0 as
 * the requests do, so the requests' queue waits at the broker overlap. At
 * most a window of them is unanswered at a time: the broker drops API
 * requests beyond its queue limit (10,000 by default) and a fleet's own
 * requests share that queue.
 *
 * A run gives up when no answer at all came for the connection's
 * JetStream wait: what is unanswered then stays NULL and the run says
 * BUS_ETIMEOUT. "No responders" is an answer with nothing in it, NULL too.
 */
#include <stdlib.h>
#include <string.h>

#include "jsreq.h"
#include "pipe.h"

int
bus__jsreq_run(bus_conn *c, bus__jsreq *v, size_t n) {
  bus__pipe *p = NULL;
  for (size_t i = 0; i < n; i++)
    v[i].answer = NULL;
  if (!n)
    return 0;
  int rc = bus__pipe_open_raw(c, &p);
  if (rc)
    return rc;
  bus__pipe_round(p);
  for (size_t i = 0; !rc && i < n; i++) {
    rc = bus__pipe_drain(p, BUS__JSREQ_WINDOW - 1);
    int at = rc ? rc : bus__pipe_request(p, v[i].subject, v[i].body);
    rc = at < 0 ? at : 0;
  }
  if (!rc)
    rc = bus__pipe_drain(p, 0);
  for (size_t i = 0; i < n; i++) {
    char *a = bus__pipe_take(p, (int)i);
    if (a && !*a)
      free(a), a = NULL;
    v[i].answer = a;
  }
  bus__pipe_close(p);
  return rc;
}

void
bus__jsreq_free(bus__jsreq *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    free(v[i].answer);
    v[i].answer = NULL;
  }
}

int
bus__jsreq_err(const char *answer) {
  const char *e = answer ? strstr(answer, "\"err_code\":") : NULL;
  return e ? atoi(e + 11) : 0;
}
