/*
 * test_security_hostile.c - hostile clients with real credentials of each
 * role (user, node, relay, relay hub, gateway) try every way into a service's
 * consumers and replies, against a real nats-server started with the
 * config larkctl renders (tests/support/secbed.c); all are refused, and
 * a denial is told apart from silence.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"
#include "secbed.h"
#include "wait.h"

static void
echo_cb(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  (void)subject;
  atomic_fetch_add((atomic_int *)ud, 1);
  if (reply)
    bus_conn_publish(c, reply, data, len);
}

/* Consumer info as the admin sees it; NULL when it is not there. */
static json_t *
consumer_info(lt_sec *x, const char *stream, const char *name) {
  char subj[160];
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.%s.%s", stream, name);
  json_t *j = lt_request_json(x->admin, subj, "");
  cr_assert(j, "%s", bus_last_error());
  if (json_object_get(j, "error")) {
    json_decref(j);
    return NULL;
  }
  return j;
}

static json_int_t
jint(json_t *j, const char *path1, const char *path2) {
  json_t *o = json_object_get(j, path1);
  return json_integer_value(path2 ? json_object_get(o, path2) : o);
}

/* A request the broker must refuse (not merely leave unanswered). */
static void
refused(bus_conn *h, const char *who, const char *subj, const char *body) {
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(h, subj, body, strlen(body), 1000, &reply, &len);
  free(reply);
  cr_assert_eq(rc, BUS_EDENIED, "%s: %s: %s (%s)", who, subj, bus_strerror(rc),
               bus_last_error());
}

typedef struct victim {
  bus_conn *svc;
  bus_consumer *k;
  bus_batch *b;
  char ack[256]; /* the reply subject of the message it holds */
  char inbox_sub[96];
} victim;

/* lark-catalog's durable "catalog" on LARK_EVENTS, holding (unacked) the
 * one event there; nothing else has been delivered. */
static void
victim_open(lt_sec *x, victim *v) {
  memset(v, 0, sizeof *v);
  lt_sec_put(x, "lark.ev.sample.one");
  cr_assert_eq(lt_sec_connect(x, "lark-catalog", NULL, &v->svc), 0, "%s",
               bus_last_error());
  cr_assert_eq(
      lt_sec_durable(v->svc, "LARK_EVENTS", "catalog", "lark.ev.>", &v->k), 0,
      "%s", bus_last_error());
  cr_assert_eq(bus_batch_new(&v->b), 0);
  lark_principal *p = NULL;
  size_t n = 0;
  cr_assert_eq(lark_creds_load(x->data, &p, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(p[i].name, "lark-catalog"))
      snprintf(v->inbox_sub, sizeof v->inbox_sub, "_INBOX_%s.>", p[i].pub);
  free(p);
}

static void
victim_close(victim *v) {
  bus_batch_free(v->b);
  bus_consumer_close(v->k);
  bus_conn_close(v->svc);
}

/* Steal a message, ack one, look at or delete the consumer, make a push
 * consumer onto a command subject or a pull one, publish a run report:
 * each one refused, and the consumer as the service left it. */
static void
consumers_refused(lt_sec *x, bus_conn *h, const char *who) {
  json_t *ci = consumer_info(x, "LARK_EVENTS", "catalog");
  cr_assert(ci);
  json_int_t before = jint(ci, "delivered", "consumer_seq");
  json_decref(ci);
  refused(h, who, "$JS.API.CONSUMER.MSG.NEXT.LARK_EVENTS.catalog",
          "{\"batch\":1,\"expires\":200000000}");
  ci = consumer_info(x, "LARK_EVENTS", "catalog");
  cr_assert(ci);
  cr_assert_eq(jint(ci, "delivered", "consumer_seq"), before, "%s stole one",
               who);
  json_decref(ci);
  refused(h, who, "$JS.API.CONSUMER.INFO.LARK_EVENTS.catalog", "");
  refused(h, who, "$JS.API.CONSUMER.DELETE.LARK_EVENTS.catalog", "");
  ci = consumer_info(x, "LARK_EVENTS", "catalog");
  cr_assert(ci, "%s deleted the service's consumer", who);
  json_decref(ci);
  const char *push = "{\"stream_name\":\"LARK_EVENTS\",\"config\":{"
                     "\"deliver_subject\":\"lark.cmd.admin.job.apply\","
                     "\"ack_policy\":\"none\"}}";
  const char *pull = "{\"stream_name\":\"LARK_EVENTS\",\"config\":{"
                     "\"name\":\"evil\",\"ack_policy\":\"none\"}}";
  refused(h, who, "$JS.API.CONSUMER.CREATE.LARK_EVENTS", push);
  refused(h, who, "$JS.API.CONSUMER.CREATE.LARK_EVENTS.evil", push);
  refused(h, who, "$JS.API.CONSUMER.CREATE.LARK_EVENTS.evil.lark.ev.>", pull);
  refused(h, who, "$JS.API.CONSUMER.DURABLE.CREATE.LARK_EVENTS.evil", pull);
  cr_assert_eq(lt_sec_consumer_count(x, "LARK_EVENTS"), 1, "%s made a consumer",
               who);
  refused(h, who, "lark.run.x", "{}");
  cr_assert_eq(lt_sec_last_seq(x, "LARK_RUNS"), 0);
}

/* The service now holds the message; the hostile client acks it. */
static void
ack_refused(lt_sec *x, victim *v, bus_conn *h, const char *who) {
  if (!v->ack[0]) {
    cr_assert_eq(bus_consumer_fetch(v->k, 1, 5000, v->b), 0, "%s",
                 bus_last_error());
    cr_assert_eq(bus_batch_len(v->b), 1);
    /* the server reads only the tokens of an ack subject: stream,
     * consumer, delivery count, stream and consumer sequences */
    snprintf(v->ack, sizeof v->ack, "$JS.ACK.LARK_EVENTS.catalog.1.1.1.0.0");
  }
  refused(h, who, v->ack, "+ACK");
  refused(h, who, v->ack, "+TERM");
  json_t *ci = consumer_info(x, "LARK_EVENTS", "catalog");
  cr_assert_eq(jint(ci, "num_ack_pending", NULL), 1, "%s acked it", who);
  json_decref(ci);
}

/* A client on _INBOX.> and on the service's own inbox sees none of the
 * service's replies (nor any other _INBOX. traffic). */
static void
inbox_refused(lt_sec *x, victim *v, bus_conn *h, const char *who) {
  atomic_int leaked = 0, answered = 0;
  bus_serve *wide = NULL, *theirs = NULL, *echo = NULL;
  bus_conn_serve(h, "_INBOX.>", NULL, lt_count_cb, &leaked, &wide);
  bus_conn_serve(h, v->inbox_sub, NULL, lt_count_cb, &leaked, &theirs);
  cr_assert_eq(bus_conn_serve(x->admin, "lark.sys.echo", NULL, echo_cb,
                              &answered, &echo),
               0);
  lt_sleep_ms(200);
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(
      bus_conn_request(v->svc, "lark.sys.echo", "hi", 2, 5000, &reply, &len), 0,
      "%s", bus_last_error());
  free(reply);
  bus_conn_publish(x->admin, "_INBOX.abc.1", "x", 1);
  lt_sleep_ms(300);
  cr_assert_eq(atomic_load(&answered), 1);
  cr_assert_eq(atomic_load(&leaked), 0, "%s saw another client's reply", who);
  bus_conn_unserve(echo);
  bus_conn_unserve(theirs);
  bus_conn_unserve(wide);
}

static void
hostile(lt_sec *x, victim *v, const char *name, const char *inbox) {
  bus_conn *h = NULL;
  cr_assert_eq(lt_sec_connect(x, name, inbox, &h), 0, "%s: %s", name,
               bus_last_error());
  consumers_refused(x, h, name);
  ack_refused(x, v, h, name);
  inbox_refused(x, v, h, name);
  bus_conn_close(h);
}

Test(security, nobody_but_a_service_touches_its_consumers, .timeout = 180) {
  lt_sec x;
  victim v;
  lt_sec_up(&x);
  victim_open(&x, &v);
  hostile(&x, &v, "alice", NULL);
  hostile(&x, &v, "gpu-1", "_INBOX_gpu-1");
  hostile(&x, &v, "relay-n1", NULL);
  hostile(&x, &v, "relay-hub", NULL);
  hostile(&x, &v, "gateway", "_INBOX_gateway");
  /* and the service itself still has its message */
  cr_assert_eq(bus_batch_ack(v.b), 0, "%s", bus_last_error());
  victim_close(&v);
  lt_sec_down(&x);
}

/* A denial says so, whatever the request: a node's credentials asking
 * for the services' status are refused, not "no answer". */
Test(security, denial_is_told_apart_from_silence, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *n1 = NULL;
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  cr_assert_eq(bus_conn_gather(n1, "lark.sys.status", "", 0, 500, NULL, NULL),
               BUS_EDENIED);
  refused(n1, "gpu-1", "lark.cmd.gpu-1.job.apply", "");
  bus_conn_close(n1);
  bus_conn *u = NULL;
  cr_assert_eq(lt_sec_connect(&x, "alice", NULL, &u), 0);
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(
      bus_conn_request(u, "lark.cmd.alice.job.apply", "", 0, 300, &reply, &len),
      BUS_ENOT_FOUND, "nobody serves it: %s", bus_last_error());
  bus_conn_close(u);
  lt_sec_down(&x);
}
