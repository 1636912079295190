/*
 * jsreq.c - JetStream API requests in flight together (jsreq.h).
 *
 * Each request goes out as a plain publish whose reply subject names its
 * index, <inbox>.<hex>.<i>; one asynchronous subscription of the run
 * files each answer by index under the run's lock, and the caller's
 * thread waits on its condition, so the requests' queue waits at the
 * broker overlap. At most a window of them is unanswered at a time: the
 * broker drops API requests beyond its queue limit (10,000 by default)
 * and a fleet's own requests share that queue.
 *
 * A run gives up when no answer at all came for the connection's
 * JetStream wait: what is unanswered then stays NULL and the run says
 * BUS_ETIMEOUT. The subscription is closed, and its last call awaited,
 * before the run's memory is freed (as pipe.c does).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "jsreq.h"

typedef struct run {
  bus__jsreq *v;
  size_t n;
  char prefix[192];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t answered;
  int done; /* the subscription will call nothing more */
} run;

static void
on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud) {
  (void)nc, (void)sub;
  run *r = ud;
  const char *subj = natsMsg_GetSubject(m);
  size_t pl = strlen(r->prefix);
  char *end = NULL;
  unsigned long i = ULONG_MAX;
  if (!strncmp(subj, r->prefix, pl) && subj[pl] == '.')
    i = strtoul(subj + pl + 1, &end, 10);
  pthread_mutex_lock(&r->mu);
  if (end && !*end && i < r->n && !r->v[i].answer) {
    int len = natsMsg_GetDataLength(m);
    /* no responders: answered, with nothing */
    char *a = natsMsg_IsNoResponders(m) ? NULL : malloc((size_t)len + 1);
    if (a) {
      memcpy(a, natsMsg_GetData(m), (size_t)len);
      a[len] = 0;
    }
    r->v[i].answer = a ? a : (char *)"";
    r->answered++;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  natsMsg_Destroy(m);
}

static void
on_done(void *ud) {
  run *r = ud;
  pthread_mutex_lock(&r->mu);
  r->done = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void
wait_ms(run *r, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L)
    ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* Wait until at most keep of the sent ones are unanswered; 0, or
 * BUS_ETIMEOUT when no answer came for the JetStream wait. */
static int
drain(bus_conn *c, run *r, size_t sent, size_t keep) {
  int rc = 0;
  pthread_mutex_lock(&r->mu);
  size_t seen = r->answered;
  int64_t until = bus_mono_ms() + c->js_wait_ms;
  while (sent - r->answered > keep && !r->done) {
    wait_ms(r, 50);
    if (r->answered != seen) {
      seen = r->answered;
      until = bus_mono_ms() + c->js_wait_ms;
    } else if (bus_mono_ms() >= until) {
      rc = BUS_ERR(BUS_ETIMEOUT, "%zu JetStream requests unanswered in %d ms",
                   sent - r->answered, c->js_wait_ms);
      break;
    }
  }
  if (!rc && r->done && sent > r->answered)
    rc = BUS_ERR(BUS_ECONN, "the connection closed with requests unanswered");
  pthread_mutex_unlock(&r->mu);
  return rc;
}

static int
send_all(bus_conn *c, run *r) {
  char reply[224];
  for (size_t i = 0; i < r->n; i++) {
    int rc = drain(c, r, i, BUS__JSREQ_WINDOW - 1);
    if (rc)
      return rc;
    snprintf(reply, sizeof reply, "%s.%zu", r->prefix, i);
    const char *b = r->v[i].body ? r->v[i].body : "";
    natsStatus s = natsConnection_PublishRequest(c->nc, r->v[i].subject, reply,
                                                 b, (int)strlen(b));
    if (s != NATS_OK)
      return bus__nats_err(s, 0, r->v[i].subject);
  }
  return drain(c, r, r->n, 0);
}

/* Unsubscribe and wait for the subscription's last call; 1 when it came
 * (r may be freed). */
static int
close_sub(bus_conn *c, run *r, natsSubscription *sub) {
  natsSubscription_Unsubscribe(sub);
  int64_t until = bus_mono_ms() + 10000;
  pthread_mutex_lock(&r->mu);
  while (!r->done && bus_mono_ms() < until)
    wait_ms(r, 100);
  int done = r->done;
  pthread_mutex_unlock(&r->mu);
  bus__retire_sub(c, sub);
  return done;
}

int
bus__jsreq_run(bus_conn *c, bus__jsreq *v, size_t n) {
  unsigned char rnd[12];
  char hex[25], filter[224];
  natsSubscription *sub = NULL;
  for (size_t i = 0; i < n; i++)
    v[i].answer = NULL;
  if (!n)
    return 0;
  run *r = calloc(1, sizeof *r);
  if (!r)
    return BUS_ERR(-ENOMEM, "out of memory");
  r->v = v, r->n = n;
  randombytes_buf(rnd, sizeof rnd);
  sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
  snprintf(r->prefix, sizeof r->prefix, "%s.%s", c->inbox_prefix, hex);
  snprintf(filter, sizeof filter, "%s.*", r->prefix);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  natsStatus s = natsConnection_Subscribe(&sub, c->nc, filter, on_answer, r);
  if (s == NATS_OK)
    s = natsSubscription_SetOnCompleteCB(sub, on_done, r);
  if (s == NATS_OK)
    s = natsSubscription_SetPendingLimits(sub, -1, -1);
  int rc = s == NATS_OK ? send_all(c, r) : bus__nats_err(s, 0, filter);
  int done = sub ? close_sub(c, r, sub) : 1;
  /* what came as "no responders" was filed as "": no answer */
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < n; i++)
    if (v[i].answer && !v[i].answer[0])
      v[i].answer = NULL;
  r->n = 0; /* a late call files nothing */
  pthread_mutex_unlock(&r->mu);
  if (done) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
  } /* else r is left allocated, under a call that may still come */
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
