/*
 * test_gateway_auth.c - the gateway is the one principal that acts for
 * others, against a real nats-server started with the config larkctl
 * renders (tests/support/secbed.c). A command's subject names its actor
 * (lark.cmd.<user>.>): a user, a node, a service, a relay hub asking as
 * bob are refused by the broker and nothing is appended; the gateway's
 * connection (inbox _INBOX_gateway) asks as bob and the service's event
 * records actor bob, via gateway (and `larkctl tail` shows it, in both
 * forms); it may not ask as the admin. The gateway writes no event and reads
 * what its view and feeds need: its own durable on the events, direct gets,
 * readers of the logs, the services' status.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy.h"
#include "natsd.h"
#include "proc.h"
#include "secbed.h"
#include "wait.h"

/* A service of kind "sample" as lark-catalog: each command appends one
 * sample.created on lark.ev.sample.<user>-<n> through bus_cmd_append,
 * the path every service's commands take, and replies with its seq. */
typedef struct sampler {
  const msgpack_sbuffer *body;
  atomic_int n;
} sampler;

static void
on_sample(bus_conn *c, const bus_cmd *cmd, void *ud) {
  sampler *s = ud;
  char subject[BUS_SUBJECT_MAX];
  uint64_t seq = 0;
  snprintf(subject, sizeof subject, "lark.ev.sample.%s-%d", cmd->user,
           atomic_fetch_add(&s->n, 1));
  int rc = bus_cmd_append(c, cmd, subject, "sample.created", 0, s->body->data,
                          s->body->size, &seq, NULL);
  if (rc)
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0);
  else
    bus_cmd_reply_ok(c, cmd, seq, NULL, 0, 0);
}

/* A command from h on lark.cmd.<as>.sample.create: the broker's code. */
static int
ask(bus_conn *h, const char *as) {
  char subject[128], key[33];
  snprintf(subject, sizeof subject, "lark.cmd.%s.sample.create", as);
  bus_event_new_id(key);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "key", key);
  void *reply = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(h, subject, b.sb.data, b.sb.size, 3000, &reply, &len);
  bus_packbuf_destroy(&b);
  free(reply);
  return rc;
}

/* A bare request: the broker's code. */
static int
request(bus_conn *h, const char *subject) {
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(h, subject, "{}", 2, 500, &reply, &len);
  free(reply);
  return rc;
}

static void
refused_as_bob(lt_sec *x, const char *who, const char *inbox) {
  bus_conn *h = NULL;
  cr_assert_eq(lt_sec_connect(x, who, inbox, &h), 0, "%s: %s", who,
               bus_last_error());
  uint64_t before = lt_sec_last_seq(x, "LARK_EVENTS");
  int rc = ask(h, "bob");
  cr_assert_eq(rc, BUS_EDENIED, "%s asked as bob: %s (%s)", who,
               bus_strerror(rc), bus_last_error());
  lt_sleep_ms(100);
  cr_assert_eq(lt_sec_last_seq(x, "LARK_EVENTS"), before, "%s", who);
  bus_conn_close(h);
}

/* The last event on subject, as the admin reads it. */
static void
last_event(lt_sec *x, const char *subject, bus_event *ev, msgpack_zone *z) {
  cr_assert_eq(bus_last_event(x->admin, "LARK_EVENTS", subject, ev, z), 0,
               "%s: %s", subject, bus_last_error());
}

/* `larkctl tail`, as the admin, in both forms: via where it is set. */
static void
tail_shows_via(lt_sec *x) {
  char bin[512], creds[512], out[16384], err[4096];
  const char *dir = getenv("LARK_BIN_DIR");
  snprintf(bin, sizeof bin, "%s/larkctl", dir ? dir : "bin");
  lark_creds_path(x->data, "admin", creds, sizeof creds);
  char *argv[] = {bin,
                  (char *)"--url",
                  x->s.url,
                  (char *)"--creds",
                  creds,
                  (char *)"tail",
                  (char *)"lark.ev.sample.>",
                  (char *)"-o",
                  (char *)"json",
                  NULL};
  cr_assert_eq(lt_run(argv, out, sizeof out, err, sizeof err), 0, "%s", err);
  const char *bob = strstr(out, "\"subject\":\"lark.ev.sample.bob-1\"");
  cr_assert(bob, "%s", out);
  const char *end = strchr(bob, '\n');
  const char *via = strstr(bob, "\"via\":\"gateway\"");
  cr_assert(via && (!end || via < end), "%s", out);
  const char *own = strstr(out, "lark.ev.sample.alice-0");
  cr_assert(own && strchr(own, '\n') < strstr(out, "\"via\""),
            "no via on a user's own event: %s", out);
  argv[7] = NULL;
  cr_assert_eq(lt_run(argv, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_assert(strstr(out, "sample.created actor=bob via=gateway cause="), "%s",
            out);
  cr_assert(strstr(out, "sample.created actor=alice cause="), "%s", out);
}

Test(gateway_auth, only_the_gateway_commands_for_others, .timeout = 120) {
  lt_sec x;
  lt_sec_up(&x);
  sampler s = {.body = &x.body};
  bus_conn *svc = NULL, *alice = NULL, *gw = NULL;
  bus_serve *srv = NULL;
  cr_assert_eq(lt_sec_connect(&x, "lark-catalog", "own", &svc), 0);
  cr_assert_eq(bus_cmd_serve(svc, "sample", on_sample, &s, &srv), 0, "%s",
               bus_last_error());
  lt_sleep_ms(100);

  /* as itself: a user's own command lands, with no via */
  cr_assert_eq(lt_sec_connect(&x, "alice", NULL, &alice), 0);
  cr_assert_eq(ask(alice, "alice"), 0, "%s", bus_last_error());
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  last_event(&x, "lark.ev.sample.alice-0", &ev, &z);
  cr_assert_str_eq(ev.actor, "alice");
  cr_assert_str_eq(ev.via, "", "a user's own command came through nobody");
  bus_conn_close(alice);

  /* as bob: refused for everyone but the gateway */
  refused_as_bob(&x, "alice", NULL);
  refused_as_bob(&x, "alice", "own");
  refused_as_bob(&x, "gpu-1", "_INBOX_gpu-1");
  refused_as_bob(&x, "lark-catalog", "own");
  refused_as_bob(&x, "relay-hub", NULL);
  refused_as_bob(&x, "relay-n1", NULL);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 1);

  cr_assert_eq(lt_sec_connect(&x, "gateway", "_INBOX_gateway", &gw), 0, "%s",
               bus_last_error());
  cr_assert_eq(ask(gw, "bob"), 0, "%s", bus_last_error());
  last_event(&x, "lark.ev.sample.bob-1", &ev, &z);
  cr_assert_str_eq(ev.actor, "bob", "the actor is the user, not the gateway");
  cr_assert_str_eq(ev.via, "gateway");
  cr_assert_eq(ask(gw, "alice"), 0, "%s", bus_last_error());
  last_event(&x, "lark.ev.sample.alice-2", &ev, &z);
  cr_assert_str_eq(ev.actor, "alice");
  cr_assert_str_eq(ev.via, "gateway");
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 3);
  tail_shows_via(&x);
  /* but never as the admin, whose verbs (signing) check that actor */
  cr_assert_eq(ask(gw, "admin"), BUS_EDENIED, "%s", bus_last_error());

  /* the gateway itself writes no event and no run report */
  bus_event forged;
  char id[33];
  lt_sec_sample(&x, &forged, id);
  forged.actor = "bob";
  cr_assert_lt(bus_append(gw, "lark.ev.sample.forged", &forged,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0);
  cr_assert_eq(request(gw, "lark.run.x"), BUS_EDENIED);
  cr_assert_eq(request(gw, "lark.rep.bob.x.y"), BUS_EDENIED);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 3);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_RUNS"), 0);

  msgpack_zone_destroy(&z);
  bus_conn_close(gw);
  bus_conn_unserve(srv);
  bus_conn_close(svc);
  lt_sec_down(&x);
}

/* Everything in a reader until it ends; BUS_EDENIED and the like fail. */
static size_t
read_all(bus_conn *c, const char *stream, int direct, int follow) {
  bus_reader_opts ro;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  bus_reader_opts_init(&ro);
  ro.stream = stream;
  ro.direct = direct;
  ro.follow = follow;
  cr_assert_eq(bus_reader_open(c, &ro, &r), 0, "%s: %s", stream,
               bus_last_error());
  cr_assert_eq(bus_batch_new(&b), 0);
  size_t got = 0;
  for (int i = 0; i < 10; i++) {
    int rc = bus_reader_next(r, b, 1000);
    got += bus_batch_len(b);
    if (rc == BUS_EEOF || (follow && got))
      break;
    cr_assert_eq(rc, 0, "%s: %s", stream, bus_last_error());
  }
  bus_batch_free(b);
  bus_reader_close(r);
  return got;
}

Test(gateway_auth, gateway_reads_what_it_serves, .timeout = 120) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *gw = NULL;
  bus_consumer *k = NULL;
  lt_sec_put(&x, "lark.ev.sample.one");
  cr_assert_eq(bus_conn_publish(x.admin, "lark.log.j1.t.p", "line", 4), 0);
  lt_sec_wait_seq(&x, "LARK_LOGS", 1);
  cr_assert_eq(lt_sec_connect(&x, "gateway", "_INBOX_gateway", &gw), 0);

  /* its view's durable, named as the principal, as a service keeps one */
  cr_assert_eq(lt_sec_durable(gw, "LARK_EVENTS", "gateway", "lark.ev.>", &k), 0,
               "%s", bus_last_error());
  bus_batch *b = NULL;
  cr_assert_eq(bus_batch_new(&b), 0);
  cr_assert_eq(bus_consumer_fetch(k, 1, 5000, b), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_len(b), 1);
  cr_assert_eq(bus_batch_ack(b), 0, "%s", bus_last_error());
  bus_batch_free(b);
  bus_consumer_close(k);
  k = NULL;
  /* and no other */
  cr_assert_neq(lt_sec_durable(gw, "LARK_EVENTS", "catalog", "lark.ev.>", &k),
                0);
  cr_assert_neq(lt_sec_durable(gw, "LARK_LOGS", "gateway", "lark.log.>", &k),
                0);

  /* the feeds: events and runs by direct gets, logs by a reader */
  cr_assert_eq(read_all(gw, "LARK_EVENTS", 1, 0), 1);
  cr_assert_eq(read_all(gw, "LARK_RUNS", 1, 0), 0);
  cr_assert_eq(read_all(gw, "LARK_LOGS", 0, 1), 1);

  /* /metrics and /api/v1/status: stream sizes, the services' status */
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(gw, "LARK_LOGS", &last), 0, "%s",
               bus_last_error());
  cr_assert_eq(last, 1);
  cr_assert_eq(bus_conn_gather(gw, "lark.sys.status", "", 0, 300, NULL, NULL),
               0, "%s", bus_last_error());
  bus_conn_close(gw);
  lt_sec_down(&x);
}
