/*
 * test_broker_facts.c - what larkbus relies on from nats-server, probed.
 *
 * Each test is one fact of docs/broker.md, checked against a real server
 * so that it fails the day the fact changes (an upgrade, a downgrade, a
 * setting). The probes speak the JetStream API in raw JSON through a core
 * connection and set headers by hand wherever nats.c 3.4.1 has no field
 * for what is probed; a single server each, except the compare-and-set
 * race, which needs a real 3-server cluster.
 *
 * It is one file over 600 lines because it is docs/broker.md's list of
 * facts, one test each, all probed through the raw API helpers at its top
 * (api, pub, stream_create); split, each part would write them again.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "natsd.h"
#include "ports.h"
#include "wait.h"

enum { WAIT_MS = 5000 };

/* The async errors a connection was told about (permission violations). */
typedef struct async_errs {
  atomic_int n;
  char text[256];
} async_errs;

static void
on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
               void *ud) {
  (void)sub;
  async_errs *e = ud;
  const char *t = NULL;
  natsConnection_GetLastError(nc, &t);
  snprintf(e->text, sizeof e->text, "%s: %s", natsStatus_GetText(err),
           t ? t : "");
  atomic_fetch_add(&e->n, 1);
}

static natsConnection *
conn_as(const char *url, const char *user, async_errs *errs) {
  natsOptions *o = NULL;
  natsConnection *nc = NULL;
  cr_assert_eq(natsOptions_Create(&o), NATS_OK);
  natsOptions_SetURL(o, url);
  natsOptions_SetTimeout(o, WAIT_MS);
  if (user)
    natsOptions_SetUserInfo(o, user, user); /* password = name here */
  if (errs)
    natsOptions_SetErrorHandler(o, on_async_error, errs);
  natsStatus s = natsConnection_Connect(&nc, o);
  natsOptions_Destroy(o);
  cr_assert_eq(s, NATS_OK, "connect %s as %s: %s", url, user ? user : "-",
               natsStatus_GetText(s));
  return nc;
}

/* The body api() sent last, for the failure messages of api_ok. */
static _Thread_local char sent[2048];

/* A request whose reply is JSON; NULL when it timed out or was refused. */
static json_t *
api(natsConnection *nc, const char *subject, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sent, sizeof sent, fmt, ap);
  va_end(ap);
  natsMsg *reply = NULL;
  if (natsConnection_RequestString(&reply, nc, subject, sent, WAIT_MS) !=
      NATS_OK)
    return NULL;
  json_t *j = json_loadb(natsMsg_GetData(reply),
                         (size_t)natsMsg_GetDataLength(reply), 0, NULL);
  natsMsg_Destroy(reply);
  return j;
}

/* api's reply j to subject, failing the test on a timeout or an {error}. */
static json_t *
ok(const char *subject, json_t *j) {
  cr_assert_not_null(j, "%s: no answer", subject);
  json_t *e = json_object_get(j, "error");
  cr_assert_null(e, "%s %s: %s", subject, sent,
                 json_string_value(json_object_get(e, "description")));
  return j;
}

/* api, failing the test on a timeout or an {error}. */
#define api_ok(nc, subject, ...) ok(subject, api(nc, subject, __VA_ARGS__))

static void
stream_create(natsConnection *nc, const char *name, const char *extra_json) {
  char subj[128];
  snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
  json_decref(api_ok(nc, subj,
                     "{\"name\":\"%s\",\"subjects\":[\"%s.>\"],"
                     "\"storage\":\"file\"%s%s}",
                     name, name, extra_json ? "," : "",
                     extra_json ? extra_json : ""));
}

static json_int_t
stream_msgs(natsConnection *nc, const char *name) {
  char subj[128];
  snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
  json_t *j = api_ok(nc, subj, "{}");
  json_int_t n = json_integer_value(
      json_object_get(json_object_get(j, "state"), "messages"));
  json_decref(j);
  return n;
}

/*
 * Publish data on subject with header pairs (name, value, ..., NULL). With
 * ack, wait for the broker's answer and return it parsed (NULL on a
 * timeout, *st says which); without, publish and return NULL.
 */
static json_t *
pub(natsConnection *nc, const char *subject, const char *data, int ack,
    natsStatus *st, ...) {
  natsMsg *m = NULL, *reply = NULL;
  va_list ap;
  cr_assert_eq(natsMsg_Create(&m, subject, NULL, data, (int)strlen(data)),
               NATS_OK);
  va_start(ap, st);
  for (const char *k; (k = va_arg(ap, const char *));)
    natsMsgHeader_Set(m, k, va_arg(ap, const char *));
  va_end(ap);
  natsStatus s = ack ? natsConnection_RequestMsg(&reply, nc, m, WAIT_MS)
                     : natsConnection_PublishMsg(nc, m);
  natsMsg_Destroy(m);
  if (st)
    *st = s;
  if (!ack || s != NATS_OK)
    return NULL;
  json_t *j = json_loadb(natsMsg_GetData(reply),
                         (size_t)natsMsg_GetDataLength(reply), 0, NULL);
  natsMsg_Destroy(reply);
  return j;
}

static json_int_t
ack_seq(json_t *ack) {
  return json_integer_value(json_object_get(ack, "seq"));
}

static json_int_t
ack_err(json_t *ack) {
  return json_integer_value(
      json_object_get(json_object_get(ack, "error"), "err_code"));
}

static lt_natsd srv;

static void
start_plain(void) {
  cr_assert_eq(lt_natsd_start(&srv, NULL, NULL), 0);
}

static void
stop_srv(void) {
  lt_natsd_stop(&srv);
}

/*
 * A server with users (password = name) in two accounts: admin may do
 * anything in APP; maker may use the JetStream API and its inbox only;
 * spy may listen on secret.>; sys is the system account's. File storage
 * synced before each acknowledgement, as broker-config sets it.
 */
static const char auth_conf[] =
    "accounts {\n"
    "  SYS: { users: [ {user: sys, password: sys} ] }\n"
    "  APP: {\n"
    "    jetstream: enabled\n"
    "    users: [\n"
    "      {user: admin, password: admin}\n"
    "      {user: maker, password: maker, permissions: {\n"
    "        publish: {allow: [\"$JS.API.>\", \"_INBOX.>\"]}\n"
    "        subscribe: {allow: [\"_INBOX.>\"]} }}\n"
    "      {user: spy, password: spy, permissions: {\n"
    "        publish: {allow: [\"_INBOX.>\"]}\n"
    "        subscribe: {allow: [\"secret.>\", \"_INBOX.>\"]} }}\n"
    "    ]\n"
    "  }\n"
    "}\n"
    "system_account: SYS\n"
    "jetstream { sync_interval: always }\n";

static char auth_dir[256];

static void
start_auth(void) {
  char conf[320];
  lt_tmpdir(auth_dir, sizeof auth_dir, "facts");
  snprintf(conf, sizeof conf, "%s/auth.conf", auth_dir);
  FILE *f = fopen(conf, "w");
  cr_assert_not_null(f);
  fputs(auth_conf, f);
  fclose(f);
  cr_assert_eq(lt_natsd_start(&srv, conf, NULL), 0);
}

static void
stop_auth(void) {
  lt_natsd_stop(&srv);
  lt_rmtree(auth_dir);
}

/* b. A raw Nats-Expected-Last-Subject-Sequence: 0 means "the subject has
 * no message yet": the header's presence counts, not its value. */
Test(facts, expected_last_subject_seq_zero_means_none, .init = start_plain,
     .fini = stop_srv, .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "EZ", NULL);
  const char *h = "Nats-Expected-Last-Subject-Sequence";
  json_t *a = pub(nc, "EZ.a", "1", 1, NULL, h, "0", NULL);
  cr_assert_eq(ack_seq(a), 1, "0 on an empty subject must be accepted");
  json_decref(a);
  a = pub(nc, "EZ.a", "2", 1, NULL, h, "0", NULL);
  cr_assert_eq(ack_err(a), 10071, "0 on a subject with a message: %s",
               json_dumps(a, 0));
  json_decref(a);
  a = pub(nc, "EZ.a", "3", 1, NULL, h, "1", NULL);
  cr_assert_eq(ack_seq(a), 2, "the right last sequence is accepted");
  json_decref(a);
  a = pub(nc, "EZ.a", "4", 1, NULL, h, "1", NULL);
  cr_assert_eq(ack_err(a), 10071, "a stale last sequence is refused");
  json_decref(a);
  natsConnection_Destroy(nc);
}

/* c. A second publish with the same Nats-Msg-Id inside the window is
 * acknowledged as a duplicate and not stored again. */
Test(facts, duplicate_msg_id_acked_as_duplicate, .init = start_plain,
     .fini = stop_srv, .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "DD", "\"duplicate_window\":60000000000");
  json_t *a = pub(nc, "DD.a", "x", 1, NULL, "Nats-Msg-Id", "id-1", NULL);
  cr_assert_eq(ack_seq(a), 1);
  cr_assert_not(json_is_true(json_object_get(a, "duplicate")));
  json_decref(a);
  a = pub(nc, "DD.a", "x", 1, NULL, "Nats-Msg-Id", "id-1", NULL);
  cr_assert_eq(ack_seq(a), 1, "a duplicate is acked with the first's seq");
  cr_assert(json_is_true(json_object_get(a, "duplicate")));
  json_decref(a);
  cr_assert_eq(stream_msgs(nc, "DD"), 1);
  natsConnection_Destroy(nc);
}

static json_int_t
consumer_pending(natsConnection *nc, const char *stream, const char *name,
                 const char *config_json) {
  char subj[256];
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s.%s", stream, name);
  json_t *j = api_ok(nc, subj,
                     "{\"stream_name\":\"%s\",\"config\":{\"name\":\"%s\","
                     "\"durable_name\":\"%s\",\"ack_policy\":\"explicit\",%s}}",
                     stream, name, name, config_json);
  json_int_t n = json_integer_value(json_object_get(j, "num_pending"));
  json_decref(j);
  return n;
}

/* d. A consumer with several filter subjects sees exactly those. */
Test(facts, filter_subjects_honoured, .init = start_plain, .fini = stop_srv,
     .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "FS", NULL);
  const char *subjects[] = {"FS.a", "FS.b", "FS.c", "FS.a", "FS.c", "FS.b"};
  for (int i = 0; i < 6; i++)
    json_decref(pub(nc, subjects[i], "x", 1, NULL, NULL));
  cr_assert_eq(consumer_pending(nc, "FS", "two",
                                "\"filter_subjects\":[\"FS.a\",\"FS.c\"]"),
               4, "filter_subjects must select FS.a and FS.c only");
  json_t *j = api_ok(nc, "$JS.API.CONSUMER.INFO.FS.two", "{}");
  json_t *fs = json_object_get(json_object_get(j, "config"), "filter_subjects");
  cr_assert_eq(json_array_size(fs), 2);
  json_decref(j);
  natsConnection_Destroy(nc);
}

/* h. num_pending of a consumer started at a sequence is exact, with and
 * without a filter. */
Test(facts, num_pending_from_start_sequence_exact, .init = start_plain,
     .fini = stop_srv, .timeout = 60) {
  enum { N = 100, K = 37 };
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "NP", NULL);
  for (int i = 1; i <= N; i++) /* odd sequences on NP.a, even on NP.b */
    json_decref(pub(nc, i % 2 ? "NP.a" : "NP.b", "x", 1, NULL, NULL));
  char cfg[256];
  snprintf(cfg, sizeof cfg,
           "\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":%d", K);
  cr_assert_eq(consumer_pending(nc, "NP", "all", cfg), N - K + 1);
  char cfg2[300];
  snprintf(cfg2, sizeof cfg2, "%s,\"filter_subject\":\"NP.a\"", cfg);
  cr_assert_eq(consumer_pending(nc, "NP", "odd", cfg2), (N - 1 - K) / 2 + 1);
  natsConnection_Destroy(nc);
}

/* f. A pull request to a consumer that does not exist is answered at once
 * with a 503 status (no responders), not left to time out. */
Test(facts, pull_from_gone_consumer_is_no_responders, .init = start_plain,
     .fini = stop_srv, .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "PG", NULL);
  cr_assert_geq(
      consumer_pending(nc, "PG", "gone", "\"deliver_policy\":\"all\""), 0);
  json_decref(api_ok(nc, "$JS.API.CONSUMER.DELETE.PG.gone", ""));
  natsMsg *reply = NULL;
  int64_t t0 = lt_now_ms();
  natsStatus s = natsConnection_RequestString(
      &reply, nc, "$JS.API.CONSUMER.MSG.NEXT.PG.gone",
      "{\"batch\":1,\"expires\":3000000000}", WAIT_MS);
  int64_t dt = lt_now_ms() - t0;
  natsMsg_Destroy(reply);
  cr_assert_eq(s, NATS_NO_RESPONDERS, "pull to a gone consumer: %s",
               natsStatus_GetText(s));
  cr_assert_lt(dt, 3000, "answered before the pull's expiry (%lld ms)",
               (long long)dt);
  natsConnection_Destroy(nc);
}

/* k. The default max payload is 1 MiB; a stream's max_msg_size refuses a
 * bigger message with its own error. */
Test(facts, max_payload_and_max_msg_size, .init = start_plain, .fini = stop_srv,
     .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  cr_assert_eq(natsConnection_GetMaxPayload(nc), 1048576);
  stream_create(nc, "MS", "\"max_msg_size\":1024");
  static char big[2049], fits[1001];
  memset(big, 'x', sizeof big - 1);
  memset(fits, 'x', sizeof fits - 1);
  json_t *a = pub(nc, "MS.a", fits, 1, NULL, NULL);
  cr_assert_eq(ack_seq(a), 1);
  json_decref(a);
  a = pub(nc, "MS.a", big, 1, NULL, NULL);
  cr_assert_eq(ack_err(a), 10054, "over max_msg_size: %s", json_dumps(a, 0));
  json_decref(a);
  cr_assert_eq(stream_msgs(nc, "MS"), 1);
  natsConnection_Destroy(nc);
}

/* l. Atomic batch publish: a batch is stored whole at its commit, and a
 * batch whose commit never comes, or that has a gap, stores nothing. */
Test(facts, atomic_batch_all_or_nothing, .init = start_plain, .fini = stop_srv,
     .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "AB", "\"allow_atomic\":true");
  const char *id = "Nats-Batch-Id", *sq = "Nats-Batch-Sequence",
             *commit = "Nats-Batch-Commit";
  /* b1 never commits */
  pub(nc, "AB.a", "1", 0, NULL, id, "b1", sq, "1", NULL);
  pub(nc, "AB.a", "2", 0, NULL, id, "b1", sq, "2", NULL);
  /* b2 commits three */
  pub(nc, "AB.b", "1", 0, NULL, id, "b2", sq, "1", NULL);
  pub(nc, "AB.b", "2", 0, NULL, id, "b2", sq, "2", NULL);
  json_t *a =
      pub(nc, "AB.b", "3", 1, NULL, id, "b2", sq, "3", commit, "1", NULL);
  cr_assert_not_null(a);
  cr_assert_eq(ack_seq(a), 3, "commit: %s", json_dumps(a, 0));
  cr_assert_eq(json_integer_value(json_object_get(a, "count")), 3);
  json_decref(a);
  cr_assert_eq(stream_msgs(nc, "AB"), 3, "only the committed batch");
  /* b3 has a gap: its commit is refused and none of it lands */
  pub(nc, "AB.c", "1", 0, NULL, id, "b3", sq, "1", NULL);
  a = pub(nc, "AB.c", "3", 1, NULL, id, "b3", sq, "3", commit, "1", NULL);
  cr_assert_not_null(a);
  cr_assert_neq(ack_err(a), 0, "a batch with a gap: %s", json_dumps(a, 0));
  json_decref(a);
  cr_assert_eq(stream_msgs(nc, "AB"), 3);
  /* without allow_atomic a batch is refused */
  stream_create(nc, "NB", NULL);
  a = pub(nc, "NB.a", "1", 1, NULL, id, "b4", sq, "1", commit, "1", NULL);
  cr_assert_neq(ack_err(a), 0, "batch on a plain stream: %s", json_dumps(a, 0));
  json_decref(a);
  natsConnection_Destroy(nc);
}

/* l. Batch direct get: one request, the next messages of a subject from a
 * sequence, each with its headers, then a 204 end of batch. */
Test(facts, direct_get_batch, .init = start_plain, .fini = stop_srv,
     .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "DG", "\"allow_direct\":true");
  for (int i = 1; i <= 10; i++)
    json_decref(pub(nc, i % 2 ? "DG.a" : "DG.b", "x", 1, NULL, NULL));
  natsSubscription *sub = NULL;
  char inbox[64];
  snprintf(inbox, sizeof inbox, "_INBOX.dg.%lld", (long long)lt_now_ms());
  cr_assert_eq(natsConnection_SubscribeSync(&sub, nc, inbox), NATS_OK);
  static const char req[] = "{\"seq\":4,\"batch\":3,\"next_by_subj\":\"DG.a\"}";
  cr_assert_eq(natsConnection_PublishRequest(nc, "$JS.API.DIRECT.GET.DG", inbox,
                                             req, sizeof req - 1),
               NATS_OK);
  const char *want[] = {"5", "7", "9"};
  for (int i = 0;; i++) {
    natsMsg *m = NULL;
    const char *v = NULL;
    cr_assert_eq(natsSubscription_NextMsg(&m, sub, WAIT_MS), NATS_OK,
                 "message %d of the batch", i);
    if (natsMsgHeader_Get(m, "Status", &v) == NATS_OK) {
      cr_assert_str_eq(v, "204", "the batch ends with 204");
      cr_assert_eq(i, 3, "three messages before the end");
      natsMsg_Destroy(m);
      break;
    }
    cr_assert_lt(i, 3);
    cr_assert_eq(natsMsgHeader_Get(m, "Nats-Sequence", &v), NATS_OK);
    cr_assert_str_eq(v, want[i]);
    cr_assert_eq(natsMsgHeader_Get(m, "Nats-Subject", &v), NATS_OK);
    cr_assert_str_eq(v, "DG.a");
    natsMsg_Destroy(m);
  }
  natsSubscription_Destroy(sub);
  natsConnection_Destroy(nc);
}

/* l. Per-message TTL: a message with Nats-TTL goes when it expires, the
 * others stay; a stream without allow_msg_ttl refuses the header. */
Test(facts, per_message_ttl, .init = start_plain, .fini = stop_srv,
     .timeout = 60) {
  natsConnection *nc = conn_as(srv.url, NULL, NULL);
  stream_create(nc, "TT", "\"allow_msg_ttl\":true");
  json_decref(pub(nc, "TT.keep", "x", 1, NULL, NULL));
  json_t *a = pub(nc, "TT.go", "x", 1, NULL, "Nats-TTL", "1s", NULL);
  cr_assert_eq(ack_seq(a), 2, "%s", json_dumps(a, 0));
  json_decref(a);
  int64_t end = lt_now_ms() + 20000;
  json_int_t n;
  while ((n = stream_msgs(nc, "TT")) != 1 && lt_now_ms() < end)
    lt_sleep_ms(100);
  cr_assert_eq(n, 1, "the message with a TTL expired, the other stayed");
  stream_create(nc, "NT", NULL);
  a = pub(nc, "NT.a", "x", 1, NULL, "Nats-TTL", "1s", NULL);
  cr_assert_neq(ack_err(a), 0, "Nats-TTL without allow_msg_ttl");
  json_decref(a);
  natsConnection_Destroy(nc);
}

/* e. A publish the user may not make is dropped by the server: a request
 * times out and the connection is told asynchronously. */
Test(facts, denied_publish_is_timeout_plus_async_error, .init = start_auth,
     .fini = stop_auth, .timeout = 60) {
  natsConnection *admin = conn_as(srv.url, "admin", NULL);
  stream_create(admin, "in", NULL);
  async_errs errs = {0};
  natsConnection *maker = conn_as(srv.url, "maker", &errs);
  natsStatus s;
  json_t *a = pub(maker, "in.x", "x", 1, &s, NULL);
  cr_assert_null(a);
  cr_assert_eq(s, NATS_TIMEOUT, "denied publish: %s", natsStatus_GetText(s));
  int64_t end = lt_now_ms() + WAIT_MS;
  while (!atomic_load(&errs.n) && lt_now_ms() < end)
    lt_sleep_ms(20);
  cr_assert_gt(atomic_load(&errs.n), 0, "no async error");
  cr_assert(strstr(errs.text, "Permissions Violation"), "%s", errs.text);
  cr_assert_eq(stream_msgs(admin, "in"), 0);
  natsConnection_Destroy(maker);
  natsConnection_Destroy(admin);
}

/* g. A user who may create consumers but may neither publish nor
 * subscribe on secret.> can still make a push consumer that delivers the
 * stream to secret.x, and a subscriber there receives it: the broker does
 * not check a deliver subject against its creator's permissions. */
Test(facts, push_deliver_subject_unchecked, .init = start_auth,
     .fini = stop_auth, .timeout = 60) {
  natsConnection *admin = conn_as(srv.url, "admin", NULL);
  stream_create(admin, "in", NULL);
  for (int i = 0; i < 3; i++)
    json_decref(pub(admin, "in.x", "payload", 1, NULL, NULL));
  natsConnection *spy = conn_as(srv.url, "spy", NULL);
  natsSubscription *sub = NULL;
  cr_assert_eq(natsConnection_SubscribeSync(&sub, spy, "secret.x"), NATS_OK);
  natsConnection_Flush(spy);
  async_errs errs = {0};
  natsConnection *maker = conn_as(srv.url, "maker", &errs);
  json_t *j = api(maker, "$JS.API.CONSUMER.CREATE.in.leak",
                  "{\"stream_name\":\"in\",\"config\":{\"name\":\"leak\","
                  "\"deliver_subject\":\"secret.x\",\"ack_policy\":\"none\"}}");
  cr_assert_not_null(j, "consumer create: no answer");
  cr_assert_null(json_object_get(j, "error"), "refused: %s", json_dumps(j, 0));
  json_decref(j);
  for (int i = 0; i < 3; i++) {
    natsMsg *m = NULL;
    cr_assert_eq(natsSubscription_NextMsg(&m, sub, WAIT_MS), NATS_OK,
                 "delivery %d to secret.x", i);
    cr_assert_eq(natsMsg_GetDataLength(m), 7);
    natsMsg_Destroy(m);
  }
  /* while maker itself may not listen there */
  natsSubscription *own = NULL;
  natsConnection_SubscribeSync(&own, maker, "secret.x");
  natsConnection_Flush(maker);
  int64_t end = lt_now_ms() + WAIT_MS;
  while (!atomic_load(&errs.n) && lt_now_ms() < end)
    lt_sleep_ms(20);
  cr_assert(strstr(errs.text, "Permissions Violation"), "%s", errs.text);
  natsSubscription_Destroy(own);
  natsSubscription_Destroy(sub);
  natsConnection_Destroy(maker);
  natsConnection_Destroy(spy);
  natsConnection_Destroy(admin);
}

/* i. sync_interval is a server-wide setting (jetstream block), shown in
 * varz; a stream can only opt out of it (persist_mode: async). */
Test(facts, sync_always_is_server_wide, .init = start_auth, .fini = stop_auth,
     .timeout = 60) {
  natsConnection *sys = conn_as(srv.url, "sys", NULL);
  json_t *j = api(sys, "$SYS.REQ.SERVER.PING.VARZ", "{}");
  cr_assert_not_null(j, "varz: no answer");
  json_t *cfg = json_object_get(
      json_object_get(json_object_get(json_object_get(j, "data"), "jetstream"),
                      "config"),
      "sync_always");
  cr_assert(json_is_true(cfg), "sync_always: %s", json_dumps(j, 0));
  json_decref(j);
  natsConnection *admin = conn_as(srv.url, "admin", NULL);
  stream_create(admin, "pm", "\"persist_mode\":\"async\"");
  j = api_ok(admin, "$JS.API.STREAM.INFO.pm", "{}");
  cr_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(j, "config"), "persist_mode")),
                   "async");
  json_decref(j);
  natsConnection_Destroy(admin);
  natsConnection_Destroy(sys);
}

/* j. With explicit users in accounts, an anonymous client is refused
 * (CVE-2023-47090); test_security_nodes.c checks the same on larkctl's own
 * rendered config with nkey users. */
Test(facts, anonymous_refused_with_explicit_users, .init = start_auth,
     .fini = stop_auth, .timeout = 60) {
  natsConnection *nc = NULL;
  natsStatus s = natsConnection_ConnectTo(&nc, srv.url);
  cr_assert_neq(s, NATS_OK, "an anonymous client was accepted");
  natsConnection_Destroy(nc);
}

/* a. On a 3-server cluster, two writers racing on the same expected
 * subject sequence (the KV's compare-and-set) never both win. */
enum { NSERV = 3, ROUNDS = 60 };

typedef struct racer {
  natsConnection *nc;
  pthread_barrier_t *go, *done;
  _Atomic long long expect;
  long long got[ROUNDS]; /* seq won, 0 lost, -1 no answer */
} racer;

static void *
race(void *arg) {
  racer *r = arg;
  for (int i = 0; i < ROUNDS; i++) {
    char exp[24];
    pthread_barrier_wait(r->go);
    snprintf(exp, sizeof exp, "%lld", atomic_load(&r->expect));
    json_t *a = pub(r->nc, "RC.k", "v", 1, NULL,
                    "Nats-Expected-Last-Subject-Sequence", exp, NULL);
    r->got[i] = !a ? -1 : json_object_get(a, "error") ? 0 : ack_seq(a);
    json_decref(a);
    pthread_barrier_wait(r->done);
  }
  return NULL;
}

static lt_natsd cl[NSERV];

static void
stop_cluster(void) {
  for (int i = 0; i < NSERV; i++)
    if (cl[i].pid > 0)
      lt_natsd_stop(&cl[i]);
}

static int
start_cluster(void) {
  char routes[256], listen[NSERV][64], name[NSERV][16];
  int port[NSERV];
  size_t len = 0;
  for (int i = 0; i < NSERV; i++) {
    port[i] = lt_free_port();
    len += (size_t)snprintf(routes + len, sizeof routes - len,
                            "%snats://127.0.0.1:%d", i ? "," : "", port[i]);
  }
  for (int i = 0; i < NSERV; i++) {
    snprintf(listen[i], sizeof listen[i], "nats://127.0.0.1:%d", port[i]);
    snprintf(name[i], sizeof name[i], "facts-%d", i + 1);
    const char *extra[] = {"-n",       name[i],     "--cluster_name",
                           "facts",    "--cluster", listen[i],
                           "--routes", routes,      NULL};
    if (lt_natsd_start(&cl[i], NULL, extra) < 0) {
      stop_cluster();
      return -1;
    }
  }
  return 0;
}

Test(facts, r3_expected_seq_race_one_winner, .fini = stop_cluster,
     .timeout = 240) {
  int rc = -1;
  for (int t = 0; t < 3 && rc < 0; t++)
    rc = start_cluster();
  cr_assert_eq(rc, 0, "the cluster did not start");
  natsConnection *nc = conn_as(cl[0].url, NULL, NULL);
  json_t *j = NULL;
  int64_t end = lt_now_ms() + 60000; /* a meta leader first */
  while (lt_now_ms() < end) {
    j = api(nc, "$JS.API.STREAM.CREATE.RC",
            "{\"name\":\"RC\",\"subjects\":[\"RC.>\"],\"num_replicas\":3}");
    if (j && !json_object_get(j, "error"))
      break;
    json_decref(j);
    j = NULL;
    lt_sleep_ms(250);
  }
  cr_assert_not_null(j, "no R3 stream within 60 s");
  json_decref(j);
  json_t *a = NULL;
  while (!(a = pub(nc, "RC.k", "v", 1, NULL, NULL)) && lt_now_ms() < end)
    lt_sleep_ms(250);
  cr_assert_eq(ack_seq(a), 1);
  json_decref(a);

  pthread_barrier_t go, done;
  pthread_barrier_init(&go, NULL, 3);
  pthread_barrier_init(&done, NULL, 3);
  static racer r[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    r[i].nc = conn_as(cl[i + 1].url, NULL, NULL); /* two other servers */
    r[i].go = &go;
    r[i].done = &done;
    atomic_store(&r[i].expect, 1);
    pthread_create(&th[i], NULL, race, &r[i]);
  }
  int both = 0, none = 0;
  for (int i = 0; i < ROUNDS; i++) {
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&done);
    long long w0 = r[0].got[i], w1 = r[1].got[i];
    cr_assert(w0 >= 0 && w1 >= 0, "round %d: a publish had no answer", i);
    both += w0 > 0 && w1 > 0;
    none += w0 == 0 && w1 == 0;
    long long next = w0 > 0 ? w0 : w1 > 0 ? w1 : atomic_load(&r[0].expect);
    atomic_store(&r[0].expect, next);
    atomic_store(&r[1].expect, next);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    natsConnection_Destroy(r[i].nc);
  }
  cr_assert_eq(both, 0, "%d of %d rounds had two winners", both, ROUNDS);
  cr_assert_eq(none, 0, "%d of %d rounds had no winner", none, ROUNDS);
  cr_assert_eq(stream_msgs(nc, "RC"), ROUNDS + 1);
  natsConnection_Destroy(nc);
}
