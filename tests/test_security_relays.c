/*
 * test_security_relays.c - the broker's rules for the relays (roles relay
 * and relay-hub), against a real nats-server started with the config
 * larkctl renders (tests/support/secbed.c): each only reads what it
 * follows, under its own name, and writes nothing.
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

/* Route rows, a cert event and an engine event, appended as lark-ipam,
 * the signer and lark-engine do. */
static void
relay_fixture(lt_sec *x) {
  lt_sec_put(x, "lark.route.d1.c1.p1");
  lt_sec_put(x, "lark.route.d1.c2.p2");
  lt_sec_put(x, "lark.ev.cert.s1");
  lt_sec_put(x, "lark.ev.engine.j1");
}

/* What the relays' followers do (netrelay/follow.c): an ephemeral,
 * ack-none consumer, last per subject, named (name NULL: unnamed, through
 * the generic create subject) and deleted after one fetch; how many
 * messages it reads, or a negative code when it cannot be made. */
static int
follow(bus_conn *c, const char *stream, const char *filter, const char *name) {
  bus_consumer_opts o;
  bus_consumer *k = NULL;
  bus_batch *b = NULL;
  bus_consumer_opts_init(&o);
  o.stream = stream;
  o.filter = filter;
  o.name = name;
  o.recreate = name != NULL;
  o.deliver = BUS_DELIVER_LAST_PER_SUBJECT;
  o.ack_none = 1;
  int rc = bus_consumer_open(c, &o, &k);
  if (rc < 0)
    return rc;
  cr_assert_eq(bus_batch_new(&b), 0);
  rc = bus_consumer_fetch(k, 16, 1000, b);
  int n = rc < 0 ? rc : (int)bus_batch_len(b);
  bus_batch_free(b);
  bus_consumer_close(k);
  if (name)
    cr_assert_eq(bus_consumer_delete(c, stream, name), 0, "%s",
                 bus_last_error());
  return n;
}

/* A create request sent by hand to subj (the filter-carrying subject the
 * relay may publish) with filter in the body (NULL: none); 1 when the
 * server made the consumer, 0 when it answered with an error. */
static int
raw_create(bus_conn *c, const char *subj, const char *stream, const char *name,
           const char *filter) {
  json_t *cfg = json_pack("{s:s, s:s, s:s}", "name", name, "ack_policy", "none",
                          "deliver_policy", "last_per_subject");
  if (filter)
    json_object_set_new(cfg, "filter_subject", json_string(filter));
  json_t *req = json_pack("{s:s, s:o}", "stream_name", stream, "config", cfg);
  char *body = json_dumps(req, JSON_COMPACT);
  json_t *j = lt_request_json(c, subj, body);
  cr_assert(j, "%s: %s", subj, bus_last_error());
  int made = json_object_get(j, "error") == NULL;
  json_decref(j);
  json_decref(req);
  free(body);
  return made;
}

/* The relay's own consumer name and the create subject it may use. */
static void
relay_names(bus_conn *c, const char *stream, const char *filter, char *name,
            size_t ncap, char *subj, size_t scap) {
  cr_assert_eq(bus_consumer_name(c, "relay", name, ncap), 0, "%s",
               bus_last_error());
  snprintf(subj, scap, "$JS.API.CONSUMER.CREATE.%s.%s.%s", stream, name,
           filter);
}

Test(security, node_relay_only_reads_routes, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  relay_fixture(&x);
  bus_conn *r = NULL;
  bus_serve *srv = NULL;
  atomic_int cmds = 0;
  bus_event ev;
  char id[33], name[128], subj[320];
  cr_assert_eq(lt_sec_connect(&x, "relay-n1", "own", &r), 0, "%s",
               bus_last_error());
  relay_names(r, "LARK_ROUTES", "lark.route.*.c1.>", name, sizeof name, subj,
              sizeof subj);
  cr_assert_eq(follow(r, "LARK_ROUTES", "lark.route.*.c1.>", name), 1, "%s",
               bus_last_error());

  /* Its own cluster's rows only, under its own name, on LARK_ROUTES. */
  cr_assert_lt(follow(r, "LARK_ROUTES", "lark.route.*.c2.>", name), 0);
  cr_assert_lt(follow(r, "LARK_ROUTES", "lark.route.>", name), 0);
  cr_assert_lt(follow(r, "LARK_ROUTES", "lark.route.d1.c2.p2", name), 0);
  cr_assert_lt(follow(r, "LARK_ROUTES", "lark.route.*.c1.>", NULL), 0);
  cr_assert_lt(follow(r, "LARK_ROUTES", "lark.route.*.c1.>", "relay-other"), 0);
  cr_assert_lt(follow(r, "LARK_EVENTS", "lark.ev.cert.>", name), 0);
  cr_assert_lt(follow(r, "LARK_EVENTS", "lark.ev.engine.>", name), 0);
  cr_assert_eq(bus_consumer_name(r, "relay-engine", name, sizeof name), 0);
  cr_assert_lt(follow(r, "LARK_EVENTS", "lark.ev.engine.>", name), 0);
  relay_names(r, "LARK_ROUTES", "lark.route.*.c1.>", name, sizeof name, subj,
              sizeof subj);
  cr_assert_lt(follow(r, OWN, "lark.node.gpu-1.>", name), 0);
  /* The subject it may use, with another filter (or none) in the body:
   * the server refuses what does not match the subject. */
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, NULL), 0);
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, "lark.route.>"), 0);
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, "lark.route.*.c2.>"),
               0);
  cr_assert_eq(lt_sec_consumer_count(&x, "LARK_ROUTES"), 0,
               "a consumer was left");

  /* No durable, no read by subject. */
  bus_consumer *k = NULL;
  cr_assert_lt(
      lt_sec_durable(r, "LARK_ROUTES", "relay-n1", "lark.route.*.c1.>", &k), 0);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  cr_assert_lt(
      bus_last_event(r, "LARK_ROUTES", "lark.route.d1.c2.p2", &ev, &zone), 0);
  msgpack_zone_destroy(&zone);
  /* It writes nothing: no route, no event, no command. */
  cr_assert_eq(
      bus_conn_serve(x.admin, "lark.cmd.>", NULL, lt_count_cb, &cmds, &srv), 0);
  lt_sec_sample(&x, &ev, id);
  cr_assert_lt(bus_append(r, "lark.route.d1.c1.forged", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0);
  bus_conn_publish(r, "lark.route.d1.c1.p1", "x", 1);
  bus_conn_publish(r, "lark.ev.cert.s1", "x", 1);
  bus_conn_publish(r, "lark.cmd.relay-n1.cert.sign", "x", 1);
  bus_conn_publish(r, "$JS.API.STREAM.PURGE.LARK_ROUTES", "", 0);
  lt_sleep_ms(300);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_ROUTES"), 2);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 2);
  cr_assert_eq(atomic_load(&cmds), 0);
  /* Replies to others' inboxes never reach it. */
  atomic_int leaked = 0;
  bus_serve *wide = NULL;
  bus_conn_serve(r, "_INBOX.>", NULL, lt_count_cb, &leaked, &wide);
  lt_sleep_ms(200);
  bus_conn_publish(x.admin, "_INBOX.abc.1", "x", 1);
  lt_sleep_ms(300);
  cr_assert_eq(atomic_load(&leaked), 0, "another client's inbox leaked");
  bus_conn_unserve(wide);
  bus_conn_unserve(srv);
  bus_conn_close(r);
  lt_sec_down(&x);
}

/* The hub's engine follower: lark.ev.engine.> under relay-engine-<K> and
 * nothing wider, nor under another name, nor that name for another
 * filter. */
static void
hub_engine_consumer(lt_sec *x, bus_conn *h) {
  char name[128], other[128], subj[320];
  cr_assert_eq(bus_consumer_name(h, "relay-engine", name, sizeof name), 0);
  cr_assert_eq(bus_consumer_name(h, "relay", other, sizeof other), 0);
  cr_assert_eq(follow(h, "LARK_EVENTS", "lark.ev.engine.>", name), 1, "%s",
               bus_last_error());
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.engine.>", other), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.engine.>", NULL), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.>", name), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.cert.>", name), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.job.>", name), 0);
  cr_assert_lt(follow(h, "LARK_ROUTES", "lark.route.>", name), 0);
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.LARK_EVENTS.%s.%s", name,
           "lark.ev.engine.>");
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, NULL), 0);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, "lark.ev.>"), 0);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, "lark.ev.job.>"), 0);
  cr_assert_eq(lt_sec_consumer_count(x, "LARK_EVENTS"), 0,
               "a consumer was left");
}

Test(security, relay_hub_reads_routes_cert_and_engine_events, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  relay_fixture(&x);
  bus_conn *h = NULL;
  bus_event ev;
  char id[33], name[128], subj[320];
  cr_assert_eq(lt_sec_connect(&x, "relay-hub", "own", &h), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_consumer_name(h, "relay", name, sizeof name), 0);
  cr_assert_eq(follow(h, "LARK_ROUTES", "lark.route.>", name), 2, "%s",
               bus_last_error());
  cr_assert_eq(follow(h, "LARK_EVENTS", "lark.ev.cert.>", name), 1, "%s",
               bus_last_error());
  /* cert events only, under its own name, on those two streams */
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.>", name), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.cert.>", NULL), 0);
  cr_assert_lt(follow(h, "LARK_ROUTES", "lark.route.>", NULL), 0);
  cr_assert_lt(follow(h, "LARK_ROUTES", "lark.route.>", "relay-other"), 0);
  cr_assert_lt(follow(h, OWN, "lark.node.gpu-1.>", name), 0);
  cr_assert_lt(follow(h, "LARK_INGRESS", "lark.in.>", name), 0);
  cr_assert_lt(follow(h, "LARK_EVENTS", "lark.ev.engine.>", name), 0);
  hub_engine_consumer(&x, h);
  relay_names(h, "LARK_EVENTS", "lark.ev.cert.>", name, sizeof name, subj,
              sizeof subj);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, NULL), 0);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, "lark.ev.>"), 0);
  cr_assert_eq(lt_sec_consumer_count(&x, "LARK_EVENTS"), 0,
               "a consumer was left");
  cr_assert_eq(lt_sec_consumer_count(&x, "LARK_ROUTES"), 0,
               "a consumer was left");
  lt_sec_sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(h, "lark.ev.cert.s2", &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0);
  bus_conn_publish(h, "lark.route.d1.c1.p1", "x", 1);
  cr_assert_lt(
      bus_append(h, "lark.ev.engine.j1", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  bus_conn_publish(h, "$JS.API.STREAM.DELETE.LARK_EVENTS", "", 0);
  lt_sleep_ms(300);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_ROUTES"), 2);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 2);
  bus_conn_close(h);
  lt_sec_down(&x);
}
