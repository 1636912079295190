/*
 * test_security_nodes.c - the broker's rules for clients and nodes,
 * against a real nats-server started with the config larkctl renders
 * (deploy/policy.c, tests/support/secbed.c): no anonymous access, no
 * unknown or tampered key, and an edge node can touch nothing but its
 * own slice, its own ingress and its own inbox (docs/design.md 6).
 *
 * Denied operations show up as timeouts (the JetStream wait is 500 ms
 * here), so each refusal is also checked where it would have landed: the
 * streams' counts and the consumers that exist.
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

Test(security, anonymous_and_wrong_seed_are_refused, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
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
  lt_sec_down(&x);
}

Test(security, node_reads_only_its_own_slice, .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *n1 = NULL, *n2 = NULL;
  bus_consumer *k = NULL;
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0, "%s",
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
  cr_assert_eq(lt_sec_consumer_count(&x, OTHER), 0, "consumers appeared");
  cr_assert_eq(lt_sec_consumer_count(&x, OWN), 0, "consumers appeared");

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

  json_t *names = lt_sec_consumers(&x, OWN);
  cr_assert_eq(json_array_size(names), 1);
  cr_assert_str_eq(json_string_value(json_array_get(names, 0)), "edge-gpu-1");
  json_decref(names);

  /* gpu-2's data is intact and readable by gpu-2 alone. */
  cr_assert_eq(lt_sec_connect(&x, "gpu-2", "_INBOX_gpu-2", &n2), 0);
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
  cr_assert_eq(lt_sec_last_seq(&x, OWN), 2);
  cr_assert_eq(lt_sec_last_seq(&x, OTHER), 1);
  bus_conn_close(n2);
  bus_conn_close(n1);
  lt_sec_down(&x);
}

Test(security, node_writes_only_its_ingress, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *n1 = NULL;
  bus_event ev;
  char id[33];
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);

  /* Its own ingress, through JetStream with an ack to its inbox. */
  lt_sec_sample(&x, &ev, id);
  uint64_t seq = 0;
  cr_assert_eq(bus_append(n1, "lark.in.gpu-1.sched.pod.a", &ev,
                          BUS_APPEND_NOCHECK, &seq, NULL),
               0, "%s", bus_last_error());
  cr_assert_eq(seq, 1);

  /* Anything else is refused. */
  lt_sec_sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(n1, "lark.ev.sample.x", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  lt_sec_sample(&x, &ev, id);
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
  lt_sec_wait_seq(&x, "LARK_INGRESS", 2);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 0);
  cr_assert_eq(lt_sec_last_seq(&x, OWN), 2);
  cr_assert_eq(lt_sec_last_seq(&x, OTHER), 1);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_RUNS"), 0);

  /* Nothing under gpu-2's name reached the ingress. */
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  cr_assert_eq(bus_last_event(x.admin, "LARK_INGRESS",
                              "lark.in.gpu-2.sched.pod.a", &ev, &zone),
               BUS_ENOT_FOUND);
  msgpack_zone_destroy(&zone);
  bus_conn_close(n1);
  lt_sec_down(&x);
}

Test(security, node_inbox_is_pinned, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *n1 = NULL;
  bus_serve *wide = NULL, *other = NULL, *own = NULL, *slice = NULL;
  atomic_int leaked = 0, mine = 0;
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  bus_conn_serve(n1, "_INBOX.>", NULL, lt_count_cb, &leaked, &wide);
  bus_conn_serve(n1, "_INBOX_gpu-2.>", NULL, lt_count_cb, &leaked, &other);
  bus_conn_serve(n1, "lark.node.>", NULL, lt_count_cb, &leaked, &slice);
  cr_assert_eq(
      bus_conn_serve(n1, "_INBOX_gpu-1.probe", NULL, lt_count_cb, &mine, &own),
      0);
  lt_sleep_ms(200);
  bus_conn_publish(x.admin, "_INBOX.abc.1", "x", 1);
  bus_conn_publish(x.admin, "_INBOX_gpu-2.abc.1", "x", 1);
  bus_conn_publish(x.admin, "lark.node.gpu-2.pod.z", "x", 1);
  bus_conn_publish(x.admin, "_INBOX_gpu-1.probe", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&mine) == 0; i++)
    lt_sleep_ms(20);
  lt_sleep_ms(200);
  cr_assert_eq(atomic_load(&mine), 1, "its own inbox must work");
  cr_assert_eq(atomic_load(&leaked), 0, "a foreign inbox leaked");
  bus_conn_unserve(own);
  bus_conn_unserve(other);
  bus_conn_unserve(wide);
  bus_conn_unserve(slice);
  bus_conn_close(n1);
  lt_sec_down(&x);
}

/* A node's push subject (lark.push.<node>.>, bus_node_push_subject)
 * carries its desired states ahead of its stream: only a service
 * publishes there and only that node hears it. gpu-1 listens on its own,
 * on gpu-2's and on the whole tree; every other role listens on the whole
 * tree; each role that is not a service pushes to gpu-1, and a service
 * pushes once to each node. gpu-1 must hear exactly the service's one. */
Test(security, node_pushes_come_from_services_to_their_node_only,
     .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  const char *roles[] = {"alice",     "gpu-2",   "relay-n1",
                         "relay-hub", "gateway", "gpu-1"};
  const size_t nroles = sizeof roles / sizeof *roles;
  bus_conn *c[8] = {0}, *n1 = NULL, *svc = NULL;
  bus_serve *s[8] = {0}, *other = NULL, *wide = NULL, *own = NULL;
  atomic_int leaked = 0, mine = 0;
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  cr_assert_eq(lt_sec_connect(&x, "lark-catalog", "own", &svc), 0);
  bus_conn_serve(n1, "lark.push.gpu-2.>", NULL, lt_count_cb, &leaked, &other);
  bus_conn_serve(n1, "lark.push.>", NULL, lt_count_cb, &leaked, &wide);
  cr_assert_eq(
      bus_conn_serve(n1, "lark.push.gpu-1.>", NULL, lt_count_cb, &mine, &own),
      0, "a node subscribes to its own pushes: %s", bus_last_error());
  for (size_t i = 0; i < nroles; i++) {
    const char *inbox = !strncmp(roles[i], "gpu-", 4)  ? NULL
                        : !strcmp(roles[i], "gateway") ? "_INBOX_gateway"
                                                       : "own";
    char prefix[32];
    if (!inbox) {
      snprintf(prefix, sizeof prefix, "_INBOX_%s", roles[i]);
      inbox = prefix;
    }
    cr_assert_eq(lt_sec_connect(&x, roles[i], inbox, &c[i]), 0, "%s", roles[i]);
    bus_conn_serve(c[i], "lark.push.>", NULL, lt_count_cb, &leaked, &s[i]);
  }
  bus_conn_serve(svc, "lark.push.>", NULL, lt_count_cb, &leaked, &s[nroles]);
  lt_sleep_ms(300);
  for (size_t i = 0; i < nroles; i++)
    bus_conn_publish(c[i], "lark.push.gpu-1.pod.forged", "x", 1);
  bus_conn_publish(svc, "lark.push.gpu-2.pod.p", "x", 1);
  bus_conn_publish(svc, "lark.push.gpu-1.pod.p", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&mine) == 0; i++)
    lt_sleep_ms(20);
  lt_sleep_ms(300);
  cr_assert_eq(atomic_load(&mine), 1,
               "gpu-1 hears the service's push and nothing forged");
  cr_assert_eq(atomic_load(&leaked), 0,
               "a push reached a principal it was not for");
  for (size_t i = 0; i <= nroles; i++)
    bus_conn_unserve(s[i]);
  for (size_t i = 0; i < nroles; i++)
    bus_conn_close(c[i]);
  bus_conn_unserve(own);
  bus_conn_unserve(wide);
  bus_conn_unserve(other);
  bus_conn_close(svc);
  bus_conn_close(n1);
  lt_sec_down(&x);
}
