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
 * A raw pipe (bus__pipe_open_raw) carries JetStream API requests the same
 * way: each slot keeps the broker's answer as it came instead of reading
 * it as a publish ack, and the caller bounds how many are unanswered at a
 * time (bus__pipe_drain).
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
  char *raw;     /* a raw pipe's answer: its text, "" for no responders */
} slot;

struct bus__pipe {
  bus_conn *c;
  natsSubscription *sub;
  char prefix[192]; /* <inbox>.<hex> */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an answer came, or the subscription is done */
  unsigned round;
  int raw; /* keeps answers as they came (bus__pipe_open_raw) */
  slot *v;
  size_t n, cap;    /* slots sent this round */
  size_t got;       /* of them answered */
  uint64_t answers; /* answers filed so far: progress */
  int done;         /* the subscription will call nothing more */
  /* the waiting thread waits for at most this many unanswered (SIZE_MAX:
   * none waits); an answer wakes it only once that holds, not for each of
   * a flight's answers */
  size_t wake_most;
  int stalled;         /* a wait gave up this round, */
  uint64_t stalled_at; /* with answers at this count */
};

static void file(bus__pipe *p, natsMsg *m);
static int at_most_unanswered(const bus__pipe *p, size_t most);

static void
on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud) {
  (void)nc, (void)sub;
  bus__pipe *p = ud;
  pthread_mutex_lock(&p->mu);
  file(p, m);
  p->answers++;
  if (at_most_unanswered(p, p->wake_most))
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

static int
pipe_open(bus_conn *c, int raw, bus__pipe **out) {
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
  p->raw = raw;
  p->wake_most = SIZE_MAX;
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

int
bus__pipe_open(bus_conn *c, bus__pipe **out) {
  return pipe_open(c, 0, out);
}

int
bus__pipe_open_raw(bus_conn *c, bus__pipe **out) {
  return pipe_open(c, 1, out);
}

/* Wait on the pipe's condition until at (monotonic ms); 0 when woken
 * before. Called with mu held. */
static int
wait_until(bus__pipe *p, int64_t at) {
  struct timespec ts = {at / 1000, (at % 1000) * 1000000};
  return pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

/* What wait_for waits for: at most most of the round's slots unanswered. */
static int
at_most_unanswered(const bus__pipe *p, size_t most) {
  return p->n - p->got <= most;
}

/*
 * Wait, with mu held, until at most most of the round's slots are
 * unanswered; 0 then. Gives up (1) when no answer at all came for the
 * connection's JetStream wait, or when the subscription is done (the
 * connection closed): a broker that answers slowly but steadily is waited
 * on. After a wait of this round gave up, the next gives up at once
 * unless an answer came since.
 */
static int
wait_for(bus__pipe *p, size_t most) {
  uint64_t seen = p->answers;
  int64_t until = bus_mono_ms() + p->c->js_wait_ms;
  int gave_up = 0;
  if (p->stalled && p->stalled_at == seen && !at_most_unanswered(p, most))
    return 1;
  p->wake_most = most;
  while (!at_most_unanswered(p, most) && !(gave_up = p->done)) {
    wait_until(p, until);
    if (p->answers != seen) {
      seen = p->answers; /* answers still come: wait on */
      until = bus_mono_ms() + p->c->js_wait_ms;
    } else if (bus_mono_ms() >= until && !at_most_unanswered(p, most)) {
      gave_up = p->stalled = 1, p->stalled_at = seen;
      break;
    }
  }
  p->wake_most = SIZE_MAX;
  return gave_up;
}

/* Free the raw answers of the round's slots. Called with mu held. */
static void
drop_raw(bus__pipe *p) {
  for (size_t i = 0; i < p->n; i++) {
    free(p->v[i].raw);
    p->v[i].raw = NULL;
  }
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
  drop_raw(p);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p->v);
  free(p);
}

void
bus__pipe_round(bus__pipe *p) {
  pthread_mutex_lock(&p->mu);
  drop_raw(p);
  p->round++;
  p->n = 0;
  p->got = 0;
  p->stalled = 0;
  pthread_mutex_unlock(&p->mu);
}

int
bus__pipe_send(bus__pipe *p, const char *subject, const char *id,
               const char *type, const void *data, size_t len, int flags,
               uint64_t prev) {
  return bus__pipe_send_after(p, subject, id, type, data, len, flags, prev,
                              NULL);
}

/* Count a slot before its publish (its answer may come first) and name
 * it in reply; the slot, or < 0. */
static int
reserve(bus__pipe *p, char reply[256]) {
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
  snprintf(reply, 256, "%s.%u.%d", p->prefix, p->round, at);
  return at;
}

/* The slot at once its publish said s: at when sent; otherwise it is not
 * a slot, and the error. */
static int
sent(bus__pipe *p, int at, natsStatus s, const char *subject) {
  if (s == NATS_OK)
    return at;
  pthread_mutex_lock(&p->mu);
  p->n--;
  pthread_mutex_unlock(&p->mu);
  return bus__nats_err(s, 0, subject);
}

int
bus__pipe_send_after(bus__pipe *p, const char *subject, const char *id,
                     const char *type, const void *data, size_t len, int flags,
                     uint64_t prev, const char *after) {
  char reply[256], num[24];
  natsMsg *m = NULL;
  int at = reserve(p, reply);
  if (at < 0)
    return at;
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
  return sent(p, at, s, subject);
}

int
bus__pipe_request(bus__pipe *p, const char *subject, const char *body) {
  char reply[256];
  int at = reserve(p, reply);
  if (at < 0)
    return at;
  const char *b = body ? body : "";
  return sent(p, at,
              natsConnection_PublishRequest(p->c->nc, subject, reply, b,
                                            (int)strlen(b)),
              subject);
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
  /* a check that failed on the message before, or what the table says
   * (on the subject: BUS_ECONFLICT) */
  int rc = code == JSStreamWrongLastMsgIDErr ? BUS_ECONFLICT
                                             : bus__js_code((int)code);
  sl->a.rc = rc ? rc : BUS_EBROKER;
}

/* A raw pipe's answer as it came into sl ("" for no responders, or
 * when it could not be copied). */
static void
keep_raw(slot *sl, natsMsg *m) {
  int len = natsMsg_GetDataLength(m);
  sl->got = 1;
  if (natsMsg_IsNoResponders(m) || len < 0 ||
      !(sl->raw = malloc((size_t)len + 1)))
    return;
  memcpy(sl->raw, natsMsg_GetData(m), (size_t)len);
  sl->raw[len] = 0;
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
  if (at >= p->n || p->v[at].got)
    return;
  p->got++;
  if (p->raw)
    keep_raw(&p->v[at], m);
  else
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
  /* every slot sent so far, not just this one: a flight's answers are
   * settled together, with one wake of this thread, not one each */
  wait_for(p, 0);
  slot *sl = &p->v[at];
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

int
bus__pipe_drain(bus__pipe *p, size_t most) {
  pthread_mutex_lock(&p->mu);
  int gave_up = wait_for(p, most);
  size_t left = p->n - p->got;
  int done = p->done;
  pthread_mutex_unlock(&p->mu);
  if (!gave_up)
    return 0;
  return done ? BUS_ERR(BUS_ECONN,
                        "the connection closed with requests unanswered")
              : BUS_ERR(BUS_ETIMEOUT,
                        "%zu JetStream requests unanswered in %d ms", left,
                        p->c->js_wait_ms);
}

char *
bus__pipe_take(bus__pipe *p, int at) {
  char *raw = NULL;
  pthread_mutex_lock(&p->mu);
  if (at >= 0 && (size_t)at < p->n && p->v[at].got) {
    raw = p->v[at].raw ? p->v[at].raw : strdup("");
    p->v[at].raw = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  return raw;
}
