/*
 * conn.c - a broker connection: nkey credentials, reconnect forever,
 * request/reply and serving requests.
 *
 * nats_Open runs once per process (pthread_once) and is never undone:
 * nats_Close would tear down every other connection of the process. A
 * bus_conn owns its natsConnection, its JetStream context (created with
 * the publish-ack error handler that counts async failures) and every
 * serve handle still registered; bus_conn_close releases all of them, so
 * the leak checker sees nothing of ours after close. Translation of
 * natsStatus and jsErrCode to BUS_E* lives here too (bus__nats_err).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "nats-int.h"

static pthread_once_t nats_once = PTHREAD_ONCE_INIT;
static natsStatus nats_open_status = NATS_OK;

static void
nats_open_once(void) {
  nats_open_status = nats_Open(-1);
}

/* "wrong last sequence" without a sequence (server 2.12+, a clustered
 * stream): the subject has a write proposed and not yet applied, so a
 * check against its last sequence cannot be made now. Not in nats.c's
 * codes. */
#define JS_WRONG_LAST_SEQUENCE_CONSTANT 10164

/*
 * A JetStream cluster that cannot take a request now answers with a code
 * of its own: no peer to place a new stream on (10005, "peer offline":
 * a server restarting), no meta leader (10008, 10009: a server
 * restarting, a quorum lost), or a subject whose last write is still in
 * flight (10164). Each is "try again", as an answer that never came: BUS_ECONN
 * and BUS_ETIMEOUT are what every caller retries, where BUS_EBROKER
 * would drop the work (a node's registration) or stop a service. The
 * test cluster/a_cluster_without_quorum_says_try_again.
 */
int
bus__js_code(int jerr) {
  switch (jerr) {
  case JSStreamWrongLastSequenceErr:
    return BUS_ECONFLICT;
  case JSStreamNotFoundErr:
    return BUS_ENO_STREAM;
  case JSConsumerNotFoundErr:
  case JSNoMessageFoundErr:
    return BUS_ENOT_FOUND;
  case JSClusterNoPeersErr:
  case JSClusterNotAvailErr:
  case JSClusterNotLeaderErr:
    return BUS_ECONN;
  case JS_WRONG_LAST_SEQUENCE_CONSTANT:
    return BUS_ETIMEOUT;
  default:
    return 0;
  }
}

/* The BUS_E* code of a nats.c status. */
static int
status_code(natsStatus s) {
  switch (s) {
  case NATS_TIMEOUT:
    return BUS_ETIMEOUT;
  case NATS_CONNECTION_AUTH_FAILED:
    return BUS_EAUTH;
  case NATS_NOT_PERMITTED:
    return BUS_EDENIED;
  case NATS_NOT_FOUND:
    return BUS_ENOT_FOUND;
  case NATS_INVALID_ARG:
  case NATS_INVALID_SUBJECT:
    return BUS_EINVAL;
  case NATS_NO_MEMORY:
    return -ENOMEM;
  case NATS_MAX_PAYLOAD:
    return BUS_ETOO_BIG;
  case NATS_NO_SERVER:
  case NATS_CONNECTION_CLOSED:
  case NATS_CONNECTION_DISCONNECTED:
  case NATS_NOT_YET_CONNECTED:
  case NATS_STALE_CONNECTION:
  case NATS_NO_RESPONDERS:
  case NATS_IO_ERROR:
    return BUS_ECONN;
  default:
    return BUS_EBROKER;
  }
}

int
bus__nats_err(natsStatus s, jsErrCode jerr, const char *what) {
  int code = bus__js_code((int)jerr);
  if (!code)
    code = status_code(s);
  const char *text = nats_GetLastError(NULL);
  if (!text || !*text)
    text = natsStatus_GetText(s);
  if (jerr)
    return BUS_ERR(code, "%s: %s (jetstream error %d)", what, text, (int)jerr);
  return BUS_ERR(code, "%s: %s", what, text);
}

void
bus__js_opts(const bus_conn *c, jsOptions *o) {
  jsOptions_Init(o);
  o->Wait = c->js_wait_ms;
}

int
bus__denied_since(const bus_conn *c, unsigned long mark) {
  return atomic_load(&c->denied) != mark;
}

void
bus_conn_opts_init(bus_conn_opts *o) {
  memset(o, 0, sizeof *o);
  o->url = "nats://127.0.0.1:4222";
  o->js_wait_ms = 5000;
  o->connect_timeout_ms = 2000;
  o->max_async_pending = 4000;
}

/* Exponential from 50 ms, capped at 2 s, with up to 25% jitter. */
static int64_t
reconnect_delay(natsConnection *nc, int attempts, void *ud) {
  (void)nc;
  (void)ud;
  int64_t d = 50;
  for (int i = 0; i < attempts && d < 2000; i++)
    d *= 2;
  if (d > 2000)
    d = 2000;
  return d - (int64_t)randombytes_uniform((uint32_t)(d / 4 + 1));
}

static void
on_reconnected(natsConnection *nc, void *ud) {
  (void)nc;
  atomic_fetch_add(&((bus_conn *)ud)->reconnects, 1);
}

static void
on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
               void *ud) {
  (void)nc;
  (void)sub;
  bus_conn *c = ud;
  if (err == NATS_NOT_PERMITTED)
    atomic_fetch_add(&c->denied, 1);
}

static void
on_closed(natsConnection *nc, void *ud) {
  (void)nc;
  bus_conn *c = ud;
  pthread_mutex_lock(&c->closed_mu);
  c->closed++;
  pthread_cond_broadcast(&c->closed_cv);
  pthread_mutex_unlock(&c->closed_mu);
}

/* Wait (up to 5 s) for every connection made to have had its "closed"
 * call: after it, nats.c calls none of this connection's handlers. */
static void
wait_closed(bus_conn *c) {
  struct timespec until = bus_deadline_ms(CLOCK_REALTIME, 5000);
  pthread_mutex_lock(&c->closed_mu);
  while (c->closed < c->made &&
         pthread_cond_timedwait(&c->closed_cv, &c->closed_mu, &until) == 0)
    ;
  pthread_mutex_unlock(&c->closed_mu);
}

static void
on_connected(natsConnection *nc, void *ud) {
  (void)nc;
  (void)ud;
}

/* The public key of the seed in a creds file (bus__creds_seed). The
 * seed itself stays in the file; sign_nonce reads it again for each
 * signature and wipes it. */
static int
creds_public(const char *path, char pub[BUS_NKEY_PUB_LEN + 1]) {
  char seed[BUS_NKEY_SEED_LEN + 1];
  int rc = bus__creds_seed(path, seed);
  if (rc == 0)
    rc = bus_nkey_public(seed, pub);
  sodium_memzero(seed, sizeof seed);
  return rc;
}

/*
 * The nonce of each connect, signed here with libsodium. nats.c 3.4.1
 * leaves the signature out of CONNECT when its first byte is zero (one
 * connect in 256: the broker then says "Authorization Violation" to a
 * valid key). Ed25519 signs a nonce one way only, so such a signature is
 * refused here instead: the connect fails before it is sent, nats.c's
 * reconnect loop or bus_conn_open tries again, and the broker's next
 * nonce signs differently.
 */
static natsStatus
sign_nonce(char **err_text, unsigned char **sig, int *sig_len,
           const char *nonce, void *ud) {
  bus_conn *c = ud;
  *sig = malloc(64);
  if (!*sig)
    return NATS_NO_MEMORY;
  int rc = bus__nkey_sign(c->creds, nonce, *sig);
  if (rc == 0 && (*sig)[0] == 0) {
    atomic_fetch_add(&c->zero_sigs, 1);
    rc = BUS_ERR(BUS_EAUTH, "the nonce's signature starts with a zero byte, "
                            "which nats.c would drop: ask for another nonce");
  }
  if (rc < 0) {
    free(*sig);
    *sig = NULL;
    *err_text = strdup(bus_last_error());
    return NATS_ERR;
  }
  *sig_len = 64;
  return NATS_OK;
}

/* Split a comma list into the options' server list. */
static natsStatus
set_servers(natsOptions *no, const char *url) {
  char buf[2048];
  const char *list[32];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", url);
  for (char *sv, *t = strtok_r(buf, ", ", &sv); t && n < 32;
       t = strtok_r(NULL, ", ", &sv))
    list[n++] = t;
  if (n == 0)
    return NATS_INVALID_ARG;
  return natsOptions_SetServers(no, list, n);
}

/* The caller's event loop drives the connection; its subscriptions share
 * nats.c's delivery threads instead of a thread each. */
static natsStatus
use_loop(natsOptions *no, const bus_conn_loop *l) {
  natsStatus s = natsOptions_SetEventLoop(
      no, l->loop, (natsEvLoop_Attach)l->attach,
      (natsEvLoop_ReadAddRemove)l->read, (natsEvLoop_WriteAddRemove)l->write,
      (natsEvLoop_Detach)l->detach);
  return s == NATS_OK ? natsOptions_UseGlobalMessageDelivery(no, true) : s;
}

static int
make_options(bus_conn *c, const bus_conn_opts *o, natsOptions **out) {
  natsOptions *no = NULL;
  natsStatus s = natsOptions_Create(&no);
  if (s == NATS_OK)
    s = set_servers(no, o->url ? o->url : "nats://127.0.0.1:4222");
  if (s == NATS_OK && o->name)
    s = natsOptions_SetName(no, o->name);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout(
        no, o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 2000);
  if (s == NATS_OK)
    s = natsOptions_SetMaxReconnect(no, -1);
  if (s == NATS_OK)
    s = natsOptions_SetCustomReconnectDelay(no, reconnect_delay, NULL);
  if (s == NATS_OK)
    s = natsOptions_SetErrorHandler(no, on_async_error, c);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectedCB(no, on_reconnected, c);
  if (s == NATS_OK)
    s = natsOptions_SetClosedCB(no, on_closed, c);
  if (s == NATS_OK && o->retry_on_failed_connect)
    s = natsOptions_SetRetryOnFailedConnect(no, true, on_connected, NULL);
  if (s == NATS_OK && strcmp(c->inbox_prefix, "_INBOX"))
    s = natsOptions_SetCustomInboxPrefix(no, c->inbox_prefix);
  if (s == NATS_OK && o->creds)
    s = natsOptions_SetNKey(no, c->pub, sign_nonce, c);
  if (s == NATS_OK && o->loop)
    s = use_loop(no, o->loop);
  if (s == NATS_OK && o->send_asap)
    s = natsOptions_SetSendAsap(no, true);
  if (s != NATS_OK) {
    natsOptions_Destroy(no);
    return bus__nats_err(s, 0, "connection options");
  }
  *out = no;
  return 0;
}

static int
open_js(bus_conn *c, const bus_conn_opts *o) {
  jsOptions jo;
  bus__js_opts(c, &jo);
  jo.PublishAsync.MaxPending =
      o->max_async_pending > 0 ? o->max_async_pending : 4000;
  jo.PublishAsync.ErrHandler = bus__append_failed;
  jo.PublishAsync.ErrHandlerClosure = c;
  jo.PublishAsync.StallWait = c->js_wait_ms > 10000 ? c->js_wait_ms : 10000;
  natsStatus s = natsConnection_JetStream(&c->js, c->nc, &jo);
  return s == NATS_OK ? 0 : bus__nats_err(s, 0, "jetstream context");
}

/*
 * A server that closes a new connection before its first PONG (nats.c:
 * "Expected 'PONG', got ''") was seen doing so while it reloads its
 * configuration (larkctl node add / delete node / rotate signal it). The
 * credentials were not refused, so the connect is tried again, a little
 * later, like a connection nats.c could not sign (zero_sigs).
 */
static int
handshake_cut(natsStatus s) {
  const char *text = nats_GetLastError(NULL);
  return s == NATS_PROTOCOL_ERROR && text && strstr(text, "Expected 'PONG'");
}

static int
connect_status(natsStatus s, const char *url) {
  const char *text = nats_GetLastError(NULL);
  if (s == NATS_CONNECTION_AUTH_FAILED ||
      (text && strstr(text, "Authorization Violation")))
    return BUS_ERR(BUS_EAUTH, "broker %s refused the credentials: %s", url,
                   text && *text ? text : natsStatus_GetText(s));
  if (s == NATS_NO_SERVER || s == NATS_TIMEOUT || s == NATS_IO_ERROR)
    return BUS_ERR(BUS_ECONN, "no broker answers at %s: %s", url,
                   text && *text ? text : natsStatus_GetText(s));
  return bus__nats_err(s, 0, "connect");
}

int
bus_conn_open(bus_conn **out, const bus_conn_opts *o) {
  natsOptions *no = NULL;
  int rc;
  *out = NULL;
  pthread_once(&nats_once, nats_open_once);
  if (nats_open_status != NATS_OK)
    return bus__nats_err(nats_open_status, 0, "nats library");
  if (sodium_init() < 0)
    return BUS_ERR(BUS_EBROKER, "libsodium failed to initialise");
  bus_conn *c = calloc(1, sizeof *c);
  if (!c)
    return BUS_ERR(-ENOMEM, "out of memory");
  c->js_wait_ms = o->js_wait_ms > 0 ? o->js_wait_ms : 5000;
  snprintf(c->inbox_prefix, sizeof c->inbox_prefix, "%s",
           o->inbox_prefix ? o->inbox_prefix : "_INBOX");
  pthread_mutex_init(&c->enc_mu, NULL);
  pthread_mutex_init(&c->serve_mu, NULL);
  pthread_mutex_init(&c->closed_mu, NULL);
  pthread_cond_init(&c->closed_cv, NULL);
  msgpack_sbuffer_init(&c->enc);
  if (o->creds && snprintf(c->creds, sizeof c->creds, "%s", o->creds) >=
                      (int)sizeof c->creds) {
    rc = BUS_ERR(BUS_EINVAL, "creds path too long: %s", o->creds);
    goto out;
  }
  if (o->creds && (rc = creds_public(o->creds, c->pub)) < 0)
    goto out;
  /* Every principal's replies come under its own prefix, which the broker
   * pins to it (_INBOX_<key>): a reply is never seen by another client
   * subscribed to _INBOX.>. Only an explicit prefix overrides it. */
  if (o->creds && !o->inbox_prefix)
    snprintf(c->inbox_prefix, sizeof c->inbox_prefix, "_INBOX_%s", c->pub);
  c->on_loop = o->loop != NULL;
  if ((rc = make_options(c, o, &no)) < 0)
    goto out;
  natsStatus s;
  for (int tries = 1;; tries++) {
    unsigned long zero = atomic_load(&c->zero_sigs);
    s = natsConnection_Connect(&c->nc, no);
    if (c->nc) {
      pthread_mutex_lock(&c->closed_mu);
      c->made++;
      pthread_mutex_unlock(&c->closed_mu);
    }
    /* A signature nats.c would drop (sign_nonce): a new connection, so a
     * new nonce. This comes first: with retry_on_failed_connect nats.c
     * answers NATS_NOT_YET_CONNECTED to it too, and then closes the
     * connection for good instead of retrying. */
    int cut = handshake_cut(s);
    if ((atomic_load(&c->zero_sigs) == zero && !cut) || tries == 8 ||
        (s == NATS_OK && natsConnection_IsClosed(c->nc) == false))
      break;
    natsConnection_Destroy(c->nc);
    c->nc = NULL;
    if (cut)
      bus_sleep_ms(100 * tries);
  }
  if (s != NATS_OK && !(s == NATS_NOT_YET_CONNECTED && c->nc)) {
    rc = connect_status(s, o->url ? o->url : "default");
    goto out;
  }
  if ((rc = open_js(c, o)) < 0)
    goto out;
  *out = c;
  c = NULL;
out:
  natsOptions_Destroy(no);
  bus_conn_close(c);
  return rc;
}

int
bus_conn_closed(const bus_conn *c) {
  return c && c->nc && natsConnection_IsClosed(c->nc);
}

unsigned long
bus_conn_reconnects(const bus_conn *c) {
  return c ? atomic_load(&((bus_conn *)c)->reconnects) : 0;
}

const char *
bus_conn_last_error(const bus_conn *c) {
  const char *text = NULL;
  if (c && c->nc)
    natsConnection_GetLastError(c->nc, &text);
  return text ? text : "";
}

void
bus__retire_sub(bus_conn *c, natsSubscription *sub) {
  natsSubscription *old;
  if (natsConnection_IsClosed(c->nc)) { /* its read loop is over */
    natsSubscription_Destroy(sub);
    return;
  }
  pthread_mutex_lock(&c->serve_mu);
  size_t at = c->nretired++ % BUS__RETIRED;
  old = c->retired[at];
  c->retired[at] = sub;
  pthread_mutex_unlock(&c->serve_mu);
  natsSubscription_Destroy(old); /* idle for BUS__RETIRED closes */
}

void
bus__sub_done(bus_conn *c, natsSubscription *sub) {
  if (!sub)
    return;
  natsSubscription_Unsubscribe(sub);
  bus__retire_sub(c, sub);
}

void
bus_conn_close(bus_conn *c) {
  if (!c)
    return;
  for (;;) {
    pthread_mutex_lock(&c->serve_mu);
    bus_serve *s = c->serves;
    pthread_mutex_unlock(&c->serve_mu);
    if (!s)
      break;
    bus_conn_unserve(s);
  }
  jsCtx_Destroy(c->js);
  if (c->nc)
    natsConnection_Close(c->nc); /* the read loop is done after this */
  for (size_t i = 0; i < BUS__RETIRED; i++)
    natsSubscription_Destroy(c->retired[i]);
  if (c->nc)
    natsConnection_Destroy(c->nc);
  wait_closed(c);
  msgpack_sbuffer_destroy(&c->enc);
  pthread_mutex_destroy(&c->enc_mu);
  pthread_mutex_destroy(&c->serve_mu);
  pthread_mutex_destroy(&c->closed_mu);
  pthread_cond_destroy(&c->closed_cv);
  sodium_memzero(c, sizeof *c);
  free(c);
}

void
bus_conn_shutdown(bus_conn *c) {
  if (c && c->nc)
    natsConnection_Close(c->nc);
}

int
bus_conn_request(bus_conn *c, const char *subject, const void *data, size_t len,
                 int timeout_ms, void **reply, size_t *reply_len) {
  natsMsg *m = NULL;
  *reply = NULL;
  *reply_len = 0;
  unsigned long mark = atomic_load(&c->denied);
  natsStatus s = natsConnection_Request(&m, c->nc, subject, data, (int)len,
                                        timeout_ms > 0 ? timeout_ms : 1);
  if (s == NATS_NO_RESPONDERS)
    return BUS_ERR(BUS_ENOT_FOUND, "nobody serves %s", subject);
  /* the broker refuses a publish it does not allow with an asynchronous
   * error and drops it: the request then times out */
  if (s == NATS_TIMEOUT && bus__denied_since(c, mark))
    return BUS_ERR(BUS_EDENIED, "permission denied: %s", subject);
  if (s != NATS_OK)
    return bus__nats_err(s, 0, subject);
  int n = natsMsg_GetDataLength(m);
  char *buf = malloc((size_t)n + 1);
  if (!buf) {
    natsMsg_Destroy(m);
    return BUS_ERR(-ENOMEM, "out of memory");
  }
  memcpy(buf, natsMsg_GetData(m), (size_t)n);
  buf[n] = 0;
  natsMsg_Destroy(m);
  *reply = buf;
  *reply_len = (size_t)n;
  return 0;
}

/* A fresh reply subject under the connection's inbox prefix. */
static void
new_inbox(const bus_conn *c, char *out, size_t cap) {
  unsigned char r[12];
  char hex[25];
  randombytes_buf(r, sizeof r);
  sodium_bin2hex(hex, sizeof hex, r, sizeof r);
  snprintf(out, cap, "%s.%s", c->inbox_prefix, hex);
}

/* Count replies on sub until the window closes. */
static int
gather_replies(natsSubscription *sub, int window_ms, bus_reply_cb cb,
               void *ud) {
  int count = 0;
  int64_t end = bus_mono_ms() + window_ms;
  for (int64_t left; (left = end - bus_mono_ms()) > 0;) {
    natsMsg *m = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, left);
    if (s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS)
      break; /* nobody (else) answers: a count, not an error */
    if (s != NATS_OK)
      return bus__nats_err(s, 0, "gather");
    if (!natsMsg_IsNoResponders(m)) {
      count++;
      if (cb)
        cb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), ud);
    }
    natsMsg_Destroy(m);
  }
  return count;
}

int
bus_conn_gather(bus_conn *c, const char *subject, const void *data, size_t len,
                int window_ms, bus_reply_cb cb, void *ud) {
  char inbox[192];
  natsSubscription *sub = NULL;
  new_inbox(c, inbox, sizeof inbox);
  unsigned long mark = atomic_load(&c->denied);
  natsStatus s = natsConnection_SubscribeSync(&sub, c->nc, inbox);
  if (s == NATS_OK)
    s = natsConnection_PublishRequest(c->nc, subject, inbox, data, (int)len);
  int rc = s == NATS_OK ? gather_replies(sub, window_ms, cb, ud)
                        : bus__nats_err(s, 0, subject);
  bus__sub_done(c, sub); /* a late reply may be arriving */
  /* silence and a refusal look alike but for the broker's async error */
  if (rc == 0 && bus__denied_since(c, mark))
    return BUS_ERR(BUS_EDENIED, "permission denied: %s", subject);
  return rc;
}

int
bus_conn_publish(bus_conn *c, const char *subject, const void *data,
                 size_t len) {
  natsStatus s = natsConnection_Publish(c->nc, subject, data, (int)len);
  return s == NATS_OK ? 0 : bus__nats_err(s, 0, subject);
}

int
bus_conn_publish_reply(bus_conn *c, const char *subject, const char *reply,
                       const void *data, size_t len) {
  natsStatus s =
      natsConnection_PublishRequest(c->nc, subject, reply, data, (int)len);
  return s == NATS_OK ? 0 : bus__nats_err(s, 0, subject);
}

struct bus_serve {
  bus_conn *c;
  natsSubscription *sub;
  bus_serve_cb cb;
  void *ud;
  void (*free_ud)(void *ud); /* called once the subscription is gone */
  struct bus_serve *next;
};

static void
on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud) {
  (void)nc;
  (void)sub;
  bus_serve *s = ud;
  s->cb(s->c, natsMsg_GetSubject(m), natsMsg_GetReply(m), natsMsg_GetData(m),
        (size_t)natsMsg_GetDataLength(m), s->ud);
  natsMsg_Destroy(m);
}

int
bus_conn_serve(bus_conn *c, const char *subject, const char *queue,
               bus_serve_cb cb, void *ud, bus_serve **out) {
  bus_serve *s = calloc(1, sizeof *s);
  if (!s)
    return BUS_ERR(-ENOMEM, "out of memory");
  s->c = c;
  s->cb = cb;
  s->ud = ud;
  natsStatus st =
      queue ? natsConnection_QueueSubscribe(&s->sub, c->nc, subject, queue,
                                            on_request, s)
            : natsConnection_Subscribe(&s->sub, c->nc, subject, on_request, s);
  if (st != NATS_OK) {
    free(s);
    return bus__nats_err(st, 0, subject);
  }
  /* The broker knows the subscription when this returns (a request sent
   * right after, from any connection, finds it); while reconnecting the
   * flush fails and the subscription goes out with the reconnection.
   * On an event loop the flush's answer would be read by this very
   * thread: there the subscription only goes ahead of whatever this
   * connection publishes next, which is what its own requests need. */
  if (!c->on_loop)
    natsConnection_FlushTimeout(c->nc, 2000);
  pthread_mutex_lock(&c->serve_mu);
  s->next = c->serves;
  c->serves = s;
  pthread_mutex_unlock(&c->serve_mu);
  *out = s;
  return 0;
}

/*
 * Drain first: a callback already running finishes before the handle is
 * freed, so the handler never sees freed memory. Must not be called from
 * the handler itself.
 */
void
bus_conn_unserve(bus_serve *s) {
  if (!s)
    return;
  bus_conn *c = s->c;
  pthread_mutex_lock(&c->serve_mu);
  for (bus_serve **p = &c->serves; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&c->serve_mu);
  if (natsSubscription_Drain(s->sub) == NATS_OK)
    natsSubscription_WaitForDrainCompletion(s->sub, 5000);
  else
    natsSubscription_Unsubscribe(s->sub);
  natsSubscription_Destroy(s->sub);
  if (s->free_ud)
    s->free_ud(s->ud);
  free(s);
}

int
bus__conn_serve_owned(bus_conn *c, const char *subject, const char *queue,
                      bus_serve_cb cb, void *ud, void (*free_ud)(void *),
                      bus_serve **out) {
  int rc = bus_conn_serve(c, subject, queue, cb, ud, out);
  if (rc == 0)
    (*out)->free_ud = free_ud;
  return rc;
}
