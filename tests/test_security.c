/*
 * test_security.c - the broker's rules, against a real nats-server started
 * with the config larkctl renders (deploy/policy.c): no anonymous access,
 * an edge node can touch nothing but its own slice (docs/design.md 6), and
 * the relays (roles relay and relay-hub) only read what they follow.
 *
 * Denied operations show up as timeouts (the JetStream wait is 500 ms
 * here), so each refusal is also checked where it would have landed: the
 * streams' counts and the consumers that exist.
 *
 * Hostile clients with real credentials of each role (user, node, relay,
 * relay hub) try every way into a service's consumers and replies; all
 * are refused, and a user still reads through batch direct gets and the
 * CLI.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deploy.h"
#include "events.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"

typedef struct sec {
  char data[256];
  char conf[320];
  char accounts[320];
  lt_natsd s;
  bus_conn *admin;
  msgpack_sbuffer body;
} sec;

static void
nap(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void
add(sec *x, const char *name, lark_role role) {
  cr_assert_eq(lark_creds_ensure(x->data, name, role, NULL, NULL), 0, "%s",
               lark_cfg_error());
}

static void
render(sec *x) {
  cr_assert_eq(lt_render_accounts(x->data), 0, "%s", lark_cfg_error());
}

static int
connect_as(sec *x, const char *name, const char *inbox, bus_conn **out) {
  char creds[512];
  bus_conn_opts o;
  lark_creds_path(x->data, name, creds, sizeof creds);
  bus_conn_opts_init(&o);
  o.url = x->s.url;
  o.creds = creds;
  if (inbox && !strcmp(inbox, "own"))
    o.inbox_own = 1; /* _INBOX_<its key> */
  else
    o.inbox_prefix = inbox;
  o.js_wait_ms = 500;
  o.name = name;
  return bus_conn_open(out, &o);
}

static uint64_t
last_seq(sec *x, const char *stream) {
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(x->admin, stream, &seq), 0, "%s",
               bus_last_error());
  return seq;
}

static void
wait_seq(sec *x, const char *stream, uint64_t want) {
  for (int i = 0; i < 100 && last_seq(x, stream) < want; i++)
    nap(20);
  cr_assert_eq(last_seq(x, stream), want, "%s", stream);
}

static void
setup(sec *x) {
  lark_broker_opts o;
  memset(x, 0, sizeof *x);
  lt_tmpdir(x->data, sizeof x->data, "sec");
  add(x, "admin", LARK_ROLE_ADMIN);
  add(x, "lark-catalog", LARK_ROLE_SERVICE);
  add(x, "alice", LARK_ROLE_USER);
  add(x, "gpu-1", LARK_ROLE_NODE);
  add(x, "gpu-2", LARK_ROLE_NODE);
  cr_assert_eq(lark_creds_ensure_relay(x->data, "relay-n1", "c1", NULL, NULL),
               0, "%s", lark_cfg_error());
  add(x, "relay-hub", LARK_ROLE_RELAY_HUB);
  snprintf(x->accounts, sizeof x->accounts, "%s/accounts.conf", x->data);
  snprintf(x->conf, sizeof x->conf, "%s/nats.conf", x->data);
  render(x);
  lark_broker_opts_init(&o);
  o.run_dir = x->data; /* the store: natsd's -sd */
  cr_assert_eq(lark_render_conf("single", &o, x->conf), 0, "%s",
               lark_cfg_error());
  cr_assert_eq(lt_natsd_start(&x->s, x->conf, NULL), 0);
  cr_assert_eq(connect_as(x, "admin", NULL, &x->admin), 0, "%s",
               bus_last_error());
  cr_assert_eq(lt_streams(x->admin, 2000), 0, "%s", bus_last_error());
  /* Each node's own stream, as the scheduler makes them, and its
   * desired states there. */
  cr_assert_eq(bus_node_stream_ensure(x->admin, "gpu-1", NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_node_stream_ensure(x->admin, "gpu-2", NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_conn_publish(x->admin, "lark.node.gpu-1.pod.a", "a1", 2), 0);
  cr_assert_eq(bus_conn_publish(x->admin, "lark.node.gpu-1.pod.b", "b1", 2), 0);
  cr_assert_eq(
      bus_conn_publish(x->admin, "lark.node.gpu-2.pod.secret", "s2", 2), 0);
  wait_seq(x, "LARK_NODE_gpu-1", 2);
  wait_seq(x, "LARK_NODE_gpu-2", 1);
  lt_pack_text(&x->body, "hello");
}

static void
teardown(sec *x) {
  bus_conn_close(x->admin);
  lt_natsd_stop(&x->s);
  lt_rmtree(x->data);
  msgpack_sbuffer_destroy(&x->body);
}

static void
sample(sec *x, bus_event *ev, char id[33]) {
  lt_sample_event(ev, id, "sample.created", &x->body);
}

/* Names of the consumers on stream, as the admin sees them. */
static json_t *
consumers(sec *x, const char *stream) {
  char subj[128];
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.NAMES.%s", stream);
  json_t *j = lt_request_json(x->admin, subj, "{}");
  cr_assert(j, "%s", bus_last_error());
  json_t *names = json_incref(json_object_get(j, "consumers"));
  json_decref(j);
  return names ? names : json_array();
}

/* gpu-1's slice consumer as lark-edge opens it (bus_slice), with the
 * stream, name and filter given instead. */
static int
open_slice(bus_conn *c, const char *stream, const char *durable,
           const char *filter, bus_consumer **k) {
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, "gpu-1"), 0);
  sl.opts.stream = stream;
  sl.opts.durable = durable;
  sl.opts.filter = filter;
  return bus_consumer_open(c, &sl.opts, k);
}

#define OWN "LARK_NODE_gpu-1"
#define OTHER "LARK_NODE_gpu-2"

Test(security, anonymous_and_wrong_seed_are_refused, .timeout = 60) {
  sec x;
  setup(&x);
  bus_conn *c = NULL;
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = x.s.url;
  int rc = bus_conn_open(&c, &o);
  cr_assert_lt(rc, 0, "anonymous client was accepted");
  cr_assert_eq(rc, BUS_EAUTH, "anonymous: %s", bus_strerror(rc));

  /* A valid nkey the broker does not know. */
  char seed[BUS_NKEY_SEED_LEN + 1], pub[BUS_NKEY_PUB_LEN + 1], path[400];
  cr_assert_eq(bus_nkey_create(seed, pub), 0);
  snprintf(path, sizeof path, "%s/stranger.nk", x.data);
  cr_assert_eq(bus_nkey_write(path, seed), 0);
  o.creds = path;
  rc = bus_conn_open(&c, &o);
  cr_assert_eq(rc, BUS_EAUTH, "stranger: %s", bus_strerror(rc));

  /* A node's creds file whose seed was tampered with. */
  char nk[400];
  lark_creds_path(x.data, "gpu-1", nk, sizeof nk);
  FILE *f = fopen(nk, "r+");
  cr_assert(f);
  char body[256];
  size_t n = fread(body, 1, sizeof body - 1, f);
  body[n] = 0;
  char *s = strstr(body, "\nSU");
  cr_assert(s);
  s[10] = s[10] == 'A' ? 'B' : 'A';
  rewind(f);
  fwrite(body, 1, n, f);
  fclose(f);
  o.creds = nk;
  o.inbox_prefix = "_INBOX_gpu-1";
  rc = bus_conn_open(&c, &o);
  cr_assert_lt(rc, 0, "a tampered seed was accepted");
  teardown(&x);
}

Test(security, node_reads_only_its_own_slice, .timeout = 90) {
  sec x;
  setup(&x);
  bus_conn *n1 = NULL, *n2 = NULL;
  bus_consumer *k = NULL;
  cr_assert_eq(connect_as(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0, "%s",
               bus_last_error());

  /* Every way at gpu-2's slice or a wider view fails. */
  cr_assert_lt(open_slice(n1, OTHER, "edge-gpu-2", "lark.node.gpu-2.>", &k), 0);
  cr_assert_lt(open_slice(n1, OTHER, "edge-gpu-1", "lark.node.gpu-2.>", &k), 0);
  cr_assert_lt(open_slice(n1, OTHER, "edge-gpu-1", "lark.node.gpu-1.>", &k), 0);
  cr_assert_lt(open_slice(n1, OTHER, "edge-gpu-1", NULL, &k), 0);
  cr_assert_lt(open_slice(n1, OWN, "edge-gpu-1", "lark.node.gpu-2.>", &k), 0);
  cr_assert_lt(open_slice(n1, OWN, "edge-gpu-1", "lark.node.>", &k), 0);
  cr_assert_lt(open_slice(n1, OWN, "edge-gpu-1", "lark.node.*.pod.secret", &k),
               0);
  cr_assert_lt(open_slice(n1, OWN, "edge-gpu-1", NULL, &k), 0, "unfiltered");
  cr_assert_lt(open_slice(n1, OWN, NULL, "lark.node.gpu-1.>", &k), 0,
               "ephemeral");
  cr_assert_lt(open_slice(n1, OWN, "other", "lark.node.gpu-1.>", &k), 0);

  /* No direct reads either. */
  bus_event ev;
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  cr_assert_lt(
      bus_last_event(n1, OTHER, "lark.node.gpu-2.pod.secret", &ev, &zone), 0,
      "STREAM.MSG.GET");
  cr_assert_lt(bus_last_event(n1, OWN, "lark.node.gpu-1.pod.a", &ev, &zone), 0,
               "STREAM.MSG.GET of its own");
  msgpack_zone_destroy(&zone);
  void *reply = NULL;
  size_t len = 0;
  const char get[] = "{\"last_by_subj\":\"lark.node.gpu-2.pod.secret\"}";
  cr_assert_lt(bus_conn_request(n1, "$JS.API.DIRECT.GET." OTHER, get,
                                sizeof get - 1, 500, &reply, &len),
               0, "DIRECT.GET");
  cr_assert_lt(bus_conn_request(n1, "$JS.API.STREAM.MSG.GET." OTHER,
                                "{\"seq\":1}", 9, 500, &reply, &len),
               0, "STREAM.MSG.GET raw");
  cr_assert_lt(bus_conn_request(n1, "$JS.API.STREAM.INFO." OTHER, "", 0, 500,
                                &reply, &len),
               0, "STREAM.INFO");
  cr_assert_lt(
      bus_conn_request(n1, "$JS.API.STREAM.NAMES", "", 0, 500, &reply, &len), 0,
      "STREAM.NAMES");

  /* Nothing was created on the way. */
  json_t *names = consumers(&x, OTHER);
  cr_assert_eq(json_array_size(names), 0, "consumers appeared");
  json_decref(names);
  names = consumers(&x, OWN);
  cr_assert_eq(json_array_size(names), 0, "consumers appeared");
  json_decref(names);

  /* Its own pinned consumer works and holds only its pods. */
  cr_assert_eq(open_slice(n1, OWN, "edge-gpu-1", "lark.node.gpu-1.>", &k), 0,
               "%s", bus_last_error());
  bus_batch *b = NULL;
  cr_assert_eq(bus_batch_new(&b), 0);
  cr_assert_eq(bus_consumer_fetch(k, 16, 2000, b), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_len(b), 2);
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const char *subject = NULL;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    cr_assert(!strncmp(subject, "lark.node.gpu-1.pod.", 20), "%s", subject);
  }
  cr_assert_eq(bus_batch_ack(b), 0, "%s", bus_last_error());
  cr_assert_eq(bus_consumer_fetch(k, 16, 300, b), 0);
  cr_assert_eq(bus_batch_len(b), 0);
  bus_consumer_close(k);

  names = consumers(&x, OWN);
  cr_assert_eq(json_array_size(names), 1);
  cr_assert_str_eq(json_string_value(json_array_get(names, 0)), "edge-gpu-1");
  json_decref(names);

  /* gpu-2's data is intact and readable by gpu-2 alone. */
  cr_assert_eq(connect_as(&x, "gpu-2", "_INBOX_gpu-2", &n2), 0);
  cr_assert_eq(open_slice(n2, OTHER, "edge-gpu-2", "lark.node.gpu-2.>", &k), 0,
               "%s", bus_last_error());
  cr_assert_eq(bus_consumer_fetch(k, 16, 2000, b), 0);
  cr_assert_eq(bus_batch_len(b), 1);
  const void *data = NULL;
  bus_batch_data(b, 0, &data, &len);
  cr_assert_eq(len, 2);
  cr_assert_eq(memcmp(data, "s2", 2), 0);
  bus_consumer_close(k);
  bus_batch_free(b);
  cr_assert_eq(last_seq(&x, OWN), 2);
  cr_assert_eq(last_seq(&x, OTHER), 1);
  bus_conn_close(n2);
  bus_conn_close(n1);
  teardown(&x);
}

Test(security, node_writes_only_its_ingress, .timeout = 60) {
  sec x;
  setup(&x);
  bus_conn *n1 = NULL;
  bus_event ev;
  char id[33];
  cr_assert_eq(connect_as(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);

  /* Its own ingress, through JetStream with an ack to its inbox. */
  sample(&x, &ev, id);
  uint64_t seq = 0;
  cr_assert_eq(bus_append(n1, "lark.in.gpu-1.sched.pod.a", &ev,
                          BUS_APPEND_NOCHECK, &seq, NULL),
               0, "%s", bus_last_error());
  cr_assert_eq(seq, 1);

  /* Anything else is refused. */
  sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(n1, "lark.ev.sample.x", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  sample(&x, &ev, id);
  cr_assert_lt(bus_append(n1, "lark.in.gpu-2.sched.pod.a", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0);
  bus_conn_publish(n1, "lark.ev.sample.y", "x", 1);
  bus_conn_publish(n1, "lark.in.gpu-2.logs.p", "x", 1);
  bus_conn_publish(n1, "lark.node.gpu-1.pod.forged", "x", 1);
  bus_conn_publish(n1, "lark.run.job", "x", 1);
  bus_conn_publish(n1, "$JS.API.STREAM.PURGE." OWN, "", 0);
  bus_conn_publish(n1, "$JS.API.STREAM.DELETE." OTHER, "", 0);
  bus_conn_publish(n1, "$JS.API.STREAM.DELETE.LARK_INGRESS", "", 0);

  /* An allowed publish after them: once it lands, they were handled. */
  bus_conn_publish(n1, "lark.in.gpu-1.logs.p", "ok", 2);
  wait_seq(&x, "LARK_INGRESS", 2);
  cr_assert_eq(last_seq(&x, "LARK_EVENTS"), 0);
  cr_assert_eq(last_seq(&x, OWN), 2);
  cr_assert_eq(last_seq(&x, OTHER), 1);
  cr_assert_eq(last_seq(&x, "LARK_RUNS"), 0);

  /* Nothing under gpu-2's name reached the ingress. */
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  cr_assert_eq(bus_last_event(x.admin, "LARK_INGRESS",
                              "lark.in.gpu-2.sched.pod.a", &ev, &zone),
               BUS_ENOT_FOUND);
  msgpack_zone_destroy(&zone);
  bus_conn_close(n1);
  teardown(&x);
}

static void
count_cb(bus_conn *c, const char *subject, const char *reply, const void *data,
         size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)data, (void)len;
  atomic_fetch_add((atomic_int *)ud, 1);
}

static void
echo_cb(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  (void)subject;
  atomic_fetch_add((atomic_int *)ud, 1);
  if (reply)
    bus_conn_publish(c, reply, data, len);
}

Test(security, node_inbox_is_pinned, .timeout = 60) {
  sec x;
  setup(&x);
  bus_conn *n1 = NULL;
  bus_serve *wide = NULL, *other = NULL, *own = NULL, *slice = NULL;
  atomic_int leaked = 0, mine = 0;
  cr_assert_eq(connect_as(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  bus_conn_serve(n1, "_INBOX.>", NULL, count_cb, &leaked, &wide);
  bus_conn_serve(n1, "_INBOX_gpu-2.>", NULL, count_cb, &leaked, &other);
  bus_conn_serve(n1, "lark.node.>", NULL, count_cb, &leaked, &slice);
  cr_assert_eq(
      bus_conn_serve(n1, "_INBOX_gpu-1.probe", NULL, count_cb, &mine, &own), 0);
  nap(200);
  bus_conn_publish(x.admin, "_INBOX.abc.1", "x", 1);
  bus_conn_publish(x.admin, "_INBOX_gpu-2.abc.1", "x", 1);
  bus_conn_publish(x.admin, "lark.node.gpu-2.pod.z", "x", 1);
  bus_conn_publish(x.admin, "_INBOX_gpu-1.probe", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&mine) == 0; i++)
    nap(20);
  nap(200);
  cr_assert_eq(atomic_load(&mine), 1, "its own inbox must work");
  cr_assert_eq(atomic_load(&leaked), 0, "a foreign inbox leaked");
  bus_conn_unserve(own);
  bus_conn_unserve(other);
  bus_conn_unserve(wide);
  bus_conn_unserve(slice);
  bus_conn_close(n1);
  teardown(&x);
}

Test(security, user_commands_as_itself_and_reads, .timeout = 90) {
  sec x;
  setup(&x);
  bus_conn *u = NULL;
  bus_serve *srv = NULL;
  atomic_int cmds = 0;
  bus_event ev;
  char id[33];
  sample(&x, &ev, id);
  cr_assert_eq(bus_append(x.admin, "lark.ev.sample.one", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  cr_assert_eq(
      bus_conn_serve(x.admin, "lark.cmd.>", NULL, count_cb, &cmds, &srv), 0);
  cr_assert_eq(connect_as(&x, "alice", NULL, &u), 0, "%s", bus_last_error());
  bus_conn_publish(u, "lark.cmd.bob.job.apply", "x", 1);
  bus_conn_publish(u, "lark.cmd.alice.job.apply", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&cmds) == 0; i++)
    nap(20);
  nap(200);
  cr_assert_eq(atomic_load(&cmds), 1, "only lark.cmd.alice.> may pass");

  /* Events are the services' to write. */
  sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(u, "lark.ev.sample.two", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  cr_assert_eq(last_seq(&x, "LARK_EVENTS"), 1);

  /* What `larkctl tail` does: an ordered read of LARK_EVENTS. */
  bus_reader_opts ro;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  bus_reader_opts_init(&ro);
  ro.stream = "LARK_EVENTS";
  ro.direct = 1; /* a user makes no consumer */
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_new(&b), 0);
  size_t got = 0;
  for (int i = 0; i < 10; i++) {
    int rc = bus_reader_next(r, b, 1000);
    got += bus_batch_len(b);
    if (rc == BUS_EEOF)
      break;
    cr_assert_eq(rc, 0, "%s", bus_last_error());
  }
  cr_assert_eq(got, 1);
  bus_reader_close(r);

  /* Not LARK_LOGS: other users' pods' output. */
  ro.stream = "LARK_LOGS";
  ro.follow = 1;
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  cr_assert_eq(bus_reader_next(r, b, 1000), BUS_EDENIED);
  bus_reader_close(r);
  bus_batch_free(b);

  /* A durable consumer on the events (a service's) is refused. */
  bus_consumer_opts co;
  bus_consumer *k = NULL;
  bus_consumer_opts_init(&co);
  co.stream = "LARK_EVENTS";
  co.durable = "lark-catalog";
  co.filter = "lark.ev.>";
  cr_assert_lt(bus_consumer_open(u, &co, &k), 0);
  bus_conn_unserve(srv);
  bus_conn_close(u);
  teardown(&x);
}

Test(security, service_writes_events, .timeout = 60) {
  sec x;
  setup(&x);
  bus_conn *svc = NULL;
  bus_event ev;
  char id[33];
  cr_assert_eq(connect_as(&x, "lark-catalog", NULL, &svc), 0);
  sample(&x, &ev, id);
  cr_assert_eq(
      bus_append(svc, "lark.ev.sample.one", &ev, BUS_APPEND_CHECK, NULL, NULL),
      0, "%s", bus_last_error());
  bus_consumer_opts co;
  bus_consumer *k = NULL;
  bus_consumer_opts_init(&co);
  co.stream = "LARK_EVENTS";
  co.durable = "lark-catalog";
  co.filter = "lark.ev.>";
  cr_assert_eq(bus_consumer_open(svc, &co, &k), 0, "%s", bus_last_error());
  bus_consumer_close(k);
  bus_conn_close(svc);
  teardown(&x);
}

Test(security, keys_kept_and_users_explicit, .timeout = 60) {
  sec x;
  setup(&x);
  lark_principal before, after;
  int created = 1;
  cr_assert_eq(
      lark_creds_ensure(x.data, "gpu-1", LARK_ROLE_NODE, &before, &created), 0);
  cr_assert_eq(created, 0, "an existing key was replaced");
  cr_assert_eq(lark_creds_ensure(x.data, "gpu-1", LARK_ROLE_USER, NULL, NULL),
               BUS_EEXISTS);

  /* The rendered text: explicit users only. */
  char *text = lark_accounts_text(&before, 1);
  cr_assert(text && strstr(text, before.pub));
  free(text);
  FILE *f = fopen(x.accounts, "r");
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cr_assert_null(strstr(buf, "no_auth_user"));
  cr_assert_null(strstr(buf, "authorization"));
  int users = 0;
  for (char *p = buf; (p = strstr(p, "nkey: \"U")); p++)
    users++;
  cr_assert_eq(users, 7);

  cr_assert_eq(lark_creds_ensure(x.data, "gpu-1", LARK_ROLE_NODE, &after, NULL),
               0);
  cr_assert_str_eq(before.pub, after.pub);
  teardown(&x);
}

/* ---------------------------------------------------------------- relays */

/* A route row and a cert event, appended as lark-ipam and the signer do. */
static void
relay_fixture(sec *x) {
  bus_event ev;
  char id[33];
  sample(x, &ev, id);
  cr_assert_eq(bus_append(x->admin, "lark.route.d1.c1.p1", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  sample(x, &ev, id);
  cr_assert_eq(bus_append(x->admin, "lark.route.d1.c2.p2", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  sample(x, &ev, id);
  cr_assert_eq(bus_append(x->admin, "lark.ev.cert.s1", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0, "%s", bus_last_error());
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
  sec x;
  setup(&x);
  relay_fixture(&x);
  bus_conn *r = NULL;
  bus_serve *srv = NULL;
  atomic_int cmds = 0;
  bus_event ev;
  char id[33], name[128], subj[320];
  cr_assert_eq(connect_as(&x, "relay-n1", "own", &r), 0, "%s",
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
  cr_assert_lt(follow(r, OWN, "lark.node.gpu-1.>", name), 0);
  /* The subject it may use, with another filter (or none) in the body:
   * the server refuses what does not match the subject. */
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, NULL), 0);
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, "lark.route.>"), 0);
  cr_assert_eq(raw_create(r, subj, "LARK_ROUTES", name, "lark.route.*.c2.>"),
               0);
  json_t *names = consumers(&x, "LARK_ROUTES");
  cr_assert_eq(json_array_size(names), 0, "a consumer was left");
  json_decref(names);

  /* No durable, no read by subject. */
  bus_consumer_opts co;
  bus_consumer *k = NULL;
  bus_consumer_opts_init(&co);
  co.stream = "LARK_ROUTES";
  co.durable = "relay-n1";
  co.filter = "lark.route.*.c1.>";
  cr_assert_lt(bus_consumer_open(r, &co, &k), 0);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  cr_assert_lt(
      bus_last_event(r, "LARK_ROUTES", "lark.route.d1.c2.p2", &ev, &zone), 0);
  msgpack_zone_destroy(&zone);
  /* It writes nothing: no route, no event, no command. */
  cr_assert_eq(
      bus_conn_serve(x.admin, "lark.cmd.>", NULL, count_cb, &cmds, &srv), 0);
  sample(&x, &ev, id);
  cr_assert_lt(bus_append(r, "lark.route.d1.c1.forged", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0);
  bus_conn_publish(r, "lark.route.d1.c1.p1", "x", 1);
  bus_conn_publish(r, "lark.ev.cert.s1", "x", 1);
  bus_conn_publish(r, "lark.cmd.relay-n1.cert.sign", "x", 1);
  bus_conn_publish(r, "$JS.API.STREAM.PURGE.LARK_ROUTES", "", 0);
  nap(300);
  cr_assert_eq(last_seq(&x, "LARK_ROUTES"), 2);
  cr_assert_eq(last_seq(&x, "LARK_EVENTS"), 1);
  cr_assert_eq(atomic_load(&cmds), 0);
  /* Replies to others' inboxes never reach it. */
  atomic_int leaked = 0;
  bus_serve *wide = NULL;
  bus_conn_serve(r, "_INBOX.>", NULL, count_cb, &leaked, &wide);
  nap(200);
  bus_conn_publish(x.admin, "_INBOX.abc.1", "x", 1);
  nap(300);
  cr_assert_eq(atomic_load(&leaked), 0, "another client's inbox leaked");
  bus_conn_unserve(wide);
  bus_conn_unserve(srv);
  bus_conn_close(r);
  teardown(&x);
}

Test(security, relay_hub_reads_routes_and_cert_events, .timeout = 60) {
  sec x;
  setup(&x);
  relay_fixture(&x);
  bus_conn *h = NULL;
  bus_event ev;
  char id[33], name[128], subj[320];
  cr_assert_eq(connect_as(&x, "relay-hub", "own", &h), 0, "%s",
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
  relay_names(h, "LARK_EVENTS", "lark.ev.cert.>", name, sizeof name, subj,
              sizeof subj);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, NULL), 0);
  cr_assert_eq(raw_create(h, subj, "LARK_EVENTS", name, "lark.ev.>"), 0);
  json_t *names = consumers(&x, "LARK_EVENTS");
  cr_assert_eq(json_array_size(names), 0, "a consumer was left");
  json_decref(names);
  names = consumers(&x, "LARK_ROUTES");
  cr_assert_eq(json_array_size(names), 0, "a consumer was left");
  json_decref(names);
  sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(h, "lark.ev.cert.s2", &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0);
  bus_conn_publish(h, "lark.route.d1.c1.p1", "x", 1);
  bus_conn_publish(h, "$JS.API.STREAM.DELETE.LARK_EVENTS", "", 0);
  nap(300);
  cr_assert_eq(last_seq(&x, "LARK_ROUTES"), 2);
  cr_assert_eq(last_seq(&x, "LARK_EVENTS"), 1);
  bus_conn_close(h);
  teardown(&x);
}

/* ------------------------------------------------- services' consumers */

/* Consumer info as the admin sees it; NULL when it is not there. */
static json_t *
consumer_info(sec *x, const char *stream, const char *name) {
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
victim_open(sec *x, victim *v) {
  bus_event ev;
  char id[33];
  memset(v, 0, sizeof *v);
  sample(x, &ev, id);
  cr_assert_eq(bus_append(x->admin, "lark.ev.sample.one", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  cr_assert_eq(connect_as(x, "lark-catalog", NULL, &v->svc), 0, "%s",
               bus_last_error());
  bus_consumer_opts co;
  bus_consumer_opts_init(&co);
  co.stream = "LARK_EVENTS";
  co.durable = "catalog";
  co.filter = "lark.ev.>";
  cr_assert_eq(bus_consumer_open(v->svc, &co, &v->k), 0, "%s",
               bus_last_error());
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
consumers_refused(sec *x, bus_conn *h, const char *who) {
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
  json_t *names = consumers(x, "LARK_EVENTS");
  cr_assert_eq(json_array_size(names), 1, "%s made a consumer", who);
  json_decref(names);
  refused(h, who, "lark.run.x", "{}");
  cr_assert_eq(last_seq(x, "LARK_RUNS"), 0);
}

/* The service now holds the message; the hostile client acks it. */
static void
ack_refused(sec *x, victim *v, bus_conn *h, const char *who) {
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
inbox_refused(sec *x, victim *v, bus_conn *h, const char *who) {
  atomic_int leaked = 0, answered = 0;
  bus_serve *wide = NULL, *theirs = NULL, *echo = NULL;
  bus_conn_serve(h, "_INBOX.>", NULL, count_cb, &leaked, &wide);
  bus_conn_serve(h, v->inbox_sub, NULL, count_cb, &leaked, &theirs);
  cr_assert_eq(bus_conn_serve(x->admin, "lark.sys.echo", NULL, echo_cb,
                              &answered, &echo),
               0);
  nap(200);
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(
      bus_conn_request(v->svc, "lark.sys.echo", "hi", 2, 5000, &reply, &len), 0,
      "%s", bus_last_error());
  free(reply);
  bus_conn_publish(x->admin, "_INBOX.abc.1", "x", 1);
  nap(300);
  cr_assert_eq(atomic_load(&answered), 1);
  cr_assert_eq(atomic_load(&leaked), 0, "%s saw another client's reply", who);
  bus_conn_unserve(echo);
  bus_conn_unserve(theirs);
  bus_conn_unserve(wide);
}

static void
hostile(sec *x, victim *v, const char *name, const char *inbox) {
  bus_conn *h = NULL;
  cr_assert_eq(connect_as(x, name, inbox, &h), 0, "%s: %s", name,
               bus_last_error());
  consumers_refused(x, h, name);
  ack_refused(x, v, h, name);
  inbox_refused(x, v, h, name);
  bus_conn_close(h);
}

Test(security, nobody_but_a_service_touches_its_consumers, .timeout = 180) {
  sec x;
  victim v;
  setup(&x);
  victim_open(&x, &v);
  hostile(&x, &v, "alice", NULL);
  hostile(&x, &v, "gpu-1", "_INBOX_gpu-1");
  hostile(&x, &v, "relay-n1", NULL);
  hostile(&x, &v, "relay-hub", NULL);
  /* and the service itself still has its message */
  cr_assert_eq(bus_batch_ack(v.b), 0, "%s", bus_last_error());
  victim_close(&v);
  teardown(&x);
}

/* A denial says so, whatever the request: a node's credentials asking
 * for the services' status are refused, not "no answer". */
Test(security, denial_is_told_apart_from_silence, .timeout = 60) {
  sec x;
  setup(&x);
  bus_conn *n1 = NULL;
  cr_assert_eq(connect_as(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  cr_assert_eq(bus_conn_gather(n1, "lark.sys.status", "", 0, 500, NULL, NULL),
               BUS_EDENIED);
  refused(n1, "gpu-1", "lark.cmd.gpu-1.job.apply", "");
  bus_conn_close(n1);
  bus_conn *u = NULL;
  cr_assert_eq(connect_as(&x, "alice", NULL, &u), 0);
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(
      bus_conn_request(u, "lark.cmd.alice.job.apply", "", 0, 300, &reply, &len),
      BUS_ENOT_FOUND, "nobody serves it: %s", bus_last_error());
  bus_conn_close(u);
  teardown(&x);
}

/* larkctl with creds against the test broker; up to four arguments. */
static int
larkctl(sec *x, const char *who, char *out, size_t ocap, char *err, size_t ecap,
        const char *a1, const char *a2, const char *a3, const char *a4) {
  char bin[512], creds[512];
  const char *dir = getenv("LARK_BIN_DIR");
  snprintf(bin, sizeof bin, "%s/larkctl", dir ? dir : "bin");
  lark_creds_path(x->data, who, creds, sizeof creds);
  char *argv[] = {
      bin,        (char *)"--url", x->s.url,   (char *)"--creds", creds,
      (char *)a1, (char *)a2,      (char *)a3, (char *)a4,        NULL};
  return lt_run(argv, out, ocap, err, ecap);
}

/* larkctl as a user: tail reads both streams without a consumer; as a
 * node, a command is "permission denied". */
Test(security, larkctl_as_user_and_as_node, .timeout = 120) {
  sec x;
  setup(&x);
  bus_event ev;
  char id[33], out[16384], err[4096];
  sample(&x, &ev, id);
  cr_assert_eq(bus_append(x.admin, "lark.ev.sample.one", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  setenv("LARK_JS_WAIT_MS", "1000", 1);
  int rc = larkctl(&x, "alice", out, sizeof out, err, sizeof err, "-o", "json",
                   "tail", NULL);
  cr_assert_eq(rc, 0, "tail as a user: %s", err);
  cr_assert(strstr(out, "\"type\":\"sample.created\""), "out: %s", out);
  cr_assert(strstr(out, "\"subject\":\"lark.ev.sample.one\""), "out: %s", out);
  json_t *names = consumers(&x, "LARK_EVENTS");
  cr_assert_eq(json_array_size(names), 0, "tail made a consumer");
  json_decref(names);

  rc = larkctl(&x, "gpu-1", out, sizeof out, err, sizeof err, "delete", "job",
               "j1", NULL);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err, "permission denied"), "stderr: %s", err);
  cr_assert_null(strstr(err, "lark-job"), "stderr: %s", err);
  rc = larkctl(&x, "gpu-1", out, sizeof out, err, sizeof err, "status", NULL,
               NULL, NULL);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err, "permission denied"), "stderr: %s", err);
  teardown(&x);
}

/* Read everything r gives until EEOF (bounded) or n messages; the count. */
static size_t
drain(bus_reader *r, bus_batch *b, size_t want, uint64_t *last) {
  size_t got = 0;
  for (int i = 0; i < 50 && got < want; i++) {
    int rc = bus_reader_next(r, b, 500);
    for (size_t k = 0; k < bus_batch_len(b); k++) {
      const char *subj = NULL;
      bus_batch_meta(b, k, &subj, last, NULL);
      cr_assert(subj && !strncmp(subj, "lark.ev.sample.", 15), "%s", subj);
    }
    got += bus_batch_len(b);
    if (rc == BUS_EEOF)
      break;
    cr_assert_eq(rc, 0, "%s", bus_last_error());
  }
  return got;
}

/* A user's direct reads: a filter, the bound taken at open, small
 * batches, and follow picking up what comes later. */
Test(security, user_reads_by_direct_get, .timeout = 90) {
  sec x;
  setup(&x);
  bus_event ev;
  char id[33];
  const char *subj[] = {"lark.ev.sample.a", "lark.ev.sample.b",
                        "lark.ev.sample.a", "lark.ev.sample.a"};
  for (int i = 0; i < 4; i++) {
    sample(&x, &ev, id);
    cr_assert_eq(
        bus_append(x.admin, subj[i], &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0);
  }
  bus_conn *u = NULL;
  cr_assert_eq(connect_as(&x, "alice", NULL, &u), 0);
  bus_reader_opts ro;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  uint64_t last = 0;
  cr_assert_eq(bus_batch_new(&b), 0);
  bus_reader_opts_init(&ro);
  ro.stream = "LARK_EVENTS";
  ro.filter = "lark.ev.sample.a";
  ro.direct = 1;
  ro.batch = 2;
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  sample(&x, &ev, id); /* after open: past the bound */
  cr_assert_eq(bus_append(x.admin, "lark.ev.sample.a", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0);
  cr_assert_eq(drain(r, b, 100, &last), 3);
  cr_assert_eq(last, 4);
  bus_reader_close(r);

  /* --since: from the stored time of sequence 3 on (start_time) */
  int64_t at = 0;
  ro.filter = NULL;
  ro.from_seq = 3;
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  cr_assert_eq(bus_reader_next(r, b, 1000), 0, "%s", bus_last_error());
  bus_batch_meta(b, 0, NULL, &last, &at);
  cr_assert_eq(last, 3);
  cr_assert_gt(at, INT64_C(1600000000) * 1000000000);
  bus_reader_close(r);
  ro.from_seq = 1;
  ro.since_ns = at;
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  int rc = bus_reader_next(r, b, 1000);
  cr_assert(rc == 0 || rc == BUS_EEOF, "%s", bus_last_error());
  cr_assert_gt(bus_batch_len(b), 0);
  bus_batch_meta(b, 0, NULL, &last, NULL);
  cr_assert_eq(last, 3, "since the time of 3: %llu", (unsigned long long)last);
  bus_reader_close(r);
  ro.since_ns = 0;
  ro.filter = "lark.ev.sample.a";

  ro.follow = 1;
  ro.from_seq = 5;
  cr_assert_eq(bus_reader_open(u, &ro, &r), 0, "%s", bus_last_error());
  cr_assert_eq(drain(r, b, 1, &last), 1);
  cr_assert_eq(last, 5);
  sample(&x, &ev, id);
  cr_assert_eq(bus_append(x.admin, "lark.ev.sample.a", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0);
  cr_assert_eq(drain(r, b, 1, &last), 1);
  cr_assert_eq(last, 6);
  bus_reader_close(r);
  json_t *names = consumers(&x, "LARK_EVENTS");
  cr_assert_eq(json_array_size(names), 0);
  json_decref(names);
  bus_batch_free(b);
  bus_conn_close(u);
  teardown(&x);
}
