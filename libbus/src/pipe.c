/*
 * pipe.c - appends in flight, each answered on its own (pipe.h).
 *
 * nats.c's asynchronous publish reports failures only, and not which
 * message failed; a caller that settles each append as a synchronous one
 * would (the outbox: landed, refused by the check, no answer) needs every
 * answer. So each append goes out as a plain request whose reply subject
 * names its round and slot, <inbox>.<hex>.<round>.<slot>, and one
 * subscription of the pipe gathers the broker's answers: an asynchronous
 * one, since nats.c hands a synchronous reader "no responders" (no stream
 * takes the subject) as a status without its message, so without its
 * slot. The subscription's thread files each answer under the pipe's lock;
 * the pipe's thread waits on its condition. The broker
 * answers each stream's appends in the order it stored them, but streams
 * answer independently: answers are filed by slot as they come and read
 * in slot order. An answer of an earlier round (it came after its round
 * gave up on it) is dropped.
 *
 * The headers are bus_append's: Nats-Msg-Id (so a second copy is a
 * duplicate), Lark-Type, and for a checked append the subject's expected
 * last sequence (0: no message yet).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "nats-int.h"
#include "pipe.h"

typedef struct slot {
  bus__ack a;
  int got;       /* answered */
  char why[160]; /* the broker's description of a refusal */
} slot;

struct bus__pipe {
  bus_conn *c;
  natsSubscription *sub;
  char prefix[192]; /* <inbox>.<hex> */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an answer came, or the subscription is done */
  unsigned round;
  slot *v;
  size_t n, cap;    /* slots sent this round */
  uint64_t answers; /* answers filed so far: progress */
  int done;         /* the subscription will call nothing more */
};

static void file(bus__pipe *p, natsMsg *m);

static void
on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud) {
  (void)nc, (void)sub;
  bus__pipe *p = ud;
  pthread_mutex_lock(&p->mu);
  file(p, m);
  p->answers++;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  natsMsg_Destroy(m);
}

static void
on_done(void *ud) {
  bus__pipe *p = ud;
  pthread_mutex_lock(&p->mu);
  p->done = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

int
bus__pipe_open(bus_conn *c, bus__pipe **out) {
  unsigned char r[12];
  char hex[25], filter[200];
  pthread_condattr_t ca;
  bus__pipe *p = calloc(1, sizeof *p);
  if (!p)
    return BUS_ERR(-ENOMEM, "out of memory");
  randombytes_buf(r, sizeof r);
  sodium_bin2hex(hex, sizeof hex, r, sizeof r);
  snprintf(p->prefix, sizeof p->prefix, "%s.%s", c->inbox_prefix, hex);
  snprintf(filter, sizeof filter, "%s.>", p->prefix);
  p->c = c;
  pthread_mutex_init(&p->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cv, &ca);
  pthread_condattr_destroy(&ca);
  natsStatus s = natsConnection_Subscribe(&p->sub, c->nc, filter, on_answer, p);
  if (s == NATS_OK)
    s = natsSubscription_SetOnCompleteCB(p->sub, on_done, p);
  if (s == NATS_OK)
    s = natsSubscription_SetPendingLimits(p->sub, -1, -1);
  if (s != NATS_OK) {
    int rc = bus__nats_err(s, 0, filter);
    bus__pipe_close(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* Wait on the pipe's condition until at (monotonic ms); 0 when woken
 * before. Called with mu held. */
static int
wait_until(bus__pipe *p, int64_t at) {
  struct timespec ts = {at / 1000, (at % 1000) * 1000000};
  return pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

/*
 * Unsubscribe and wait until the subscription's thread is done with the
 * pipe (on_done) before freeing it. Should that never come (it does, on
 * an unsubscribe or a closed connection), the pipe is left allocated
 * rather than freed under a running callback.
 */
void
bus__pipe_close(bus__pipe *p) {
  if (!p)
    return;
  int done = 1;
  if (p->sub) {
    natsSubscription_Unsubscribe(p->sub);
    int64_t until = bus_mono_ms() + 10000;
    pthread_mutex_lock(&p->mu);
    while (!p->done && bus_mono_ms() < until)
      wait_until(p, until);
    done = p->done;
    pthread_mutex_unlock(&p->mu);
    bus__retire_sub(p->c, p->sub);
  }
  if (!done)
    return;
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p->v);
  free(p);
}

void
bus__pipe_round(bus__pipe *p) {
  pthread_mutex_lock(&p->mu);
  p->round++;
  p->n = 0;
  pthread_mutex_unlock(&p->mu);
}

int
bus__pipe_send(bus__pipe *p, const char *subject, const char *id,
               const char *type, const void *data, size_t len, int flags,
               uint64_t prev) {
  return bus__pipe_send_after(p, subject, id, type, data, len, flags, prev,
                              NULL);
}

int
bus__pipe_send_after(bus__pipe *p, const char *subject, const char *id,
                     const char *type, const void *data, size_t len, int flags,
                     uint64_t prev, const char *after) {
  char reply[256], num[24];
  natsMsg *m = NULL;
  /* the slot is counted before its publish: its answer may come first */
  pthread_mutex_lock(&p->mu);
  int rc = bus_grow(&p->v, p->n, &p->cap, sizeof *p->v, 256);
  int at = (int)p->n;
  if (!rc) {
    memset(&p->v[at], 0, sizeof p->v[at]);
    p->n++;
  }
  pthread_mutex_unlock(&p->mu);
  if (rc)
    return BUS_ERR(-ENOMEM, "out of memory");
  snprintf(reply, sizeof reply, "%s.%u.%d", p->prefix, p->round, at);
  natsStatus s = natsMsg_Create(&m, subject, reply, data, (int)len);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(m, "Lark-Type", type);
  if (s == NATS_OK && (flags & BUS_APPEND_CHECK)) {
    snprintf(num, sizeof num, "%llu", (unsigned long long)prev);
    s = natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", num);
  }
  if (s == NATS_OK && after)
    s = natsMsgHeader_Set(m, "Nats-Expected-Last-Msg-Id", after);
  if (s == NATS_OK)
    s = natsConnection_PublishMsg(p->c->nc, m);
  natsMsg_Destroy(m);
  if (s == NATS_OK)
    return at;
  pthread_mutex_lock(&p->mu); /* not sent: not a slot */
  p->n--;
  pthread_mutex_unlock(&p->mu);
  return bus__nats_err(s, 0, subject);
}

/* The number after key in s, 0 when absent. */
static uint64_t
num_after(const char *s, const char *key) {
  const char *at = strstr(s, key);
  return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

/* A pub ack, {"stream":..,"seq":N[,"duplicate": true]}, or a refusal,
 * {"error":{"code":..,"err_code":N,"description":".."}}, into sl. */
static void
answer(slot *sl, natsMsg *m) {
  char body[512];
  int len = natsMsg_GetDataLength(m);
  sl->got = 1;
  if (natsMsg_IsNoResponders(m)) {
    sl->a.rc = BUS_ENO_STREAM;
    snprintf(sl->why, sizeof sl->why, "no stream takes the subject");
    return;
  }
  if (len < 0 || len >= (int)sizeof body)
    len = len < 0 ? 0 : (int)sizeof body - 1;
  memcpy(body, natsMsg_GetData(m), (size_t)len);
  body[len] = 0;
  if (!strstr(body, "\"error\"")) {
    sl->a.seq = num_after(body, "\"seq\":");
    sl->a.dup = strstr(body, "\"duplicate\":") != NULL; /* ": true" */
    return;
  }
  uint64_t code = num_after(body, "\"err_code\":");
  const char *d = strstr(body, "\"description\":\"");
  snprintf(sl->why, sizeof sl->why, "%.*s (jetstream code %llu)",
           d ? (int)strcspn(d + 15, "\"") : 6, d ? d + 15 : "refused",
           (unsigned long long)code);
  /* a check that failed, on the subject or on the message before */
  int refused =
      code == JSStreamWrongLastSequenceErr || code == JSStreamWrongLastMsgIDErr;
  sl->a.rc = refused                       ? BUS_ECONFLICT
             : code == JSStreamNotFoundErr ? BUS_ENO_STREAM
                                           : BUS_EBROKER;
}

/* File one answer by its round and slot ("<prefix>.<round>.<slot>"). */
static void
file(bus__pipe *p, natsMsg *m) {
  const char *subj = natsMsg_GetSubject(m);
  size_t pl = strlen(p->prefix);
  char *end;
  if (strncmp(subj, p->prefix, pl) || subj[pl] != '.')
    return;
  unsigned long round = strtoul(subj + pl + 1, &end, 10);
  if (*end != '.' || round != p->round)
    return;
  unsigned long at = strtoul(end + 1, NULL, 10);
  if (at < p->n && !p->v[at].got)
    answer(&p->v[at], m);
}

int
bus__pipe_ack(bus__pipe *p, int at, bus__ack *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&p->mu);
  if (at < 0 || (size_t)at >= p->n) {
    pthread_mutex_unlock(&p->mu);
    return BUS_ERR(BUS_EINVAL, "no append in slot %d", at);
  }
  slot *sl = &p->v[at];
  uint64_t seen = p->answers;
  int64_t until = bus_mono_ms() + p->c->js_wait_ms;
  while (!sl->got && !p->done) {
    if (wait_until(p, until) && bus_mono_ms() >= until) {
      if (p->answers == seen)
        break;
      seen = p->answers; /* answers still come: wait on */
      until = bus_mono_ms() + p->c->js_wait_ms;
    }
  }
  *a = sl->a;
  int got = sl->got;
  char why[sizeof sl->why];
  memcpy(why, sl->why, sizeof why);
  pthread_mutex_unlock(&p->mu);
  if (!got)
    return a->rc = p->done ? BUS_ERR(BUS_ECONN, "the connection closed with "
                                                "appends unanswered")
                           : BUS_ERR(BUS_ETIMEOUT,
                                     "no answer to an append in %d ms",
                                     p->c->js_wait_ms);
  if (a->rc)
    BUS_ERR(a->rc, "append refused: %s", why);
  return a->rc;
}
