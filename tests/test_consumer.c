/*
 * test_consumer.c - pull consumers against a real nats-server: durable
 * resume with acks and redelivery, deliver-last-per-subject, ephemeral
 * consumers, batch metadata and a permission denial.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nats/nats.h>

#include "bus.h"
#include "bed.h"
#include "events.h"
#include "natsd.h"
#include "wait.h"

static uint64_t
put(lt_fixture *f, const char *subject) {
  bus_event ev;
  char id[33];
  uint64_t seq = 0;
  lt_sample_event(&ev, id, "sample.created", &f->data);
  int rc = bus_append(f->c, subject, &ev, 0, &seq, NULL);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  return seq;
}

/* Delete a consumer with the fixture's short JetStream wait (0.5 s): a
 * busy machine can answer late, and a delete that timed out may still
 * have been done, so a timeout is asked again and "not found" after one
 * counts as done. */
static int
delete_consumer(lt_fixture *f, const char *name) {
  int rc = bus_consumer_delete(f->c, "LARK_EVENTS", name);
  for (int i = 0; rc == BUS_ETIMEOUT && i < 10; i++) {
    rc = bus_consumer_delete(f->c, "LARK_EVENTS", name);
    if (rc == BUS_ENOT_FOUND)
      rc = 0;
  }
  return rc;
}

static bus_consumer *
open_durable(lt_fixture *f, const char *name, int recreate) {
  bus_consumer_opts o;
  bus_consumer *k = NULL;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.durable = name;
  o.filter = "lark.ev.>";
  o.ack_wait_ns = INT64_C(1000000000);
  o.recreate = recreate;
  int rc = bus_consumer_open(f->c, &o, &k);
  cr_assert_eq(rc, 0, "%s %s", bus_err_name(rc), bus_last_error());
  return k;
}

Test(consumer, durable_resume_ack_and_redelivery) {
  lt_fixture f;
  lt_fixture_up(&f);
  for (int i = 0; i < 10; i++)
    put(&f, "lark.ev.sample.r");
  bus_consumer *k = open_durable(&f, "svc", 1);
  cr_assert_eq(bus_consumer_fetch(k, 4, 1000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 4);
  cr_assert_eq(bus_batch_ack(f.b), 0);
  cr_assert_eq(bus_consumer_fetch(k, 3, 1000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 3); /* 5..7, never acked */
  bus_consumer_close(k);

  k = open_durable(&f, "svc", 0);
  int seen[11] = {0};
  for (int round = 0; round < 20; round++) {
    cr_assert_eq(bus_consumer_fetch(k, 10, 300, f.b), 0);
    for (size_t i = 0; i < bus_batch_len(f.b); i++) {
      uint64_t seq;
      bus_batch_meta(f.b, i, NULL, &seq, NULL);
      cr_assert(seq >= 1 && seq <= 10);
      seen[seq]++;
    }
    cr_assert_eq(bus_batch_ack(f.b), 0);
    if (seen[5] && seen[6] && seen[7] && seen[8] && seen[9] && seen[10])
      break;
  }
  for (int s = 1; s <= 4; s++)
    cr_assert_eq(seen[s], 0, "acked %d came again", s);
  for (int s = 5; s <= 10; s++)
    cr_assert_eq(seen[s], 1, "seq %d seen %d times", s, seen[s]);
  bus_consumer_close(k);
  cr_assert_eq(delete_consumer(&f, "svc"), 0, "%s", bus_last_error());
  cr_assert_eq(bus_consumer_delete(f.c, "LARK_EVENTS", "svc"), BUS_ENOT_FOUND);
  lt_fixture_down(&f);
}

Test(consumer, deliver_last_per_subject_then_new) {
  lt_fixture f;
  bus_consumer_opts o;
  bus_consumer *k = NULL;
  lt_fixture_up(&f);
  put(&f, "lark.ev.sample.x");
  uint64_t x2 = put(&f, "lark.ev.sample.x");
  uint64_t y1 = put(&f, "lark.ev.sample.y");
  put(&f, "lark.ev.other.z");
  bus_consumer_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.durable = "edge-n1";
  o.filter = "lark.ev.sample.>";
  o.deliver = BUS_DELIVER_LAST_PER_SUBJECT;
  cr_assert_eq(bus_consumer_open(f.c, &o, &k), 0, "%s", bus_last_error());
  cr_assert_eq(bus_consumer_fetch(k, 10, 1000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 2);
  uint64_t s0, s1;
  const char *subj;
  int64_t ns;
  bus_batch_meta(f.b, 0, &subj, &s0, &ns);
  bus_batch_meta(f.b, 1, NULL, &s1, NULL);
  cr_assert_eq(s0, x2);
  cr_assert_eq(s1, y1);
  cr_assert_str_eq(subj, "lark.ev.sample.x");
  cr_assert_gt(ns, 0);
  const bus_event *ev = bus_batch_event(f.b, 0);
  cr_assert_not_null(ev, "status %d", bus_batch_status(f.b, 0));
  cr_assert_str_eq(ev->type, "sample.created");
  cr_assert_eq(ev->seq, x2);
  const void *data;
  size_t len;
  bus_batch_data(f.b, 0, &data, &len);
  cr_assert_gt(len, 0);
  cr_assert_eq(bus_batch_ack(f.b), 0);
  uint64_t y2 = put(&f, "lark.ev.sample.y");
  cr_assert_eq(bus_consumer_fetch(k, 10, 1000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 1);
  bus_batch_meta(f.b, 0, NULL, &s0, NULL);
  cr_assert_eq(s0, y2);
  bus_consumer_close(k);
  lt_fixture_down(&f);
}

Test(consumer, ephemeral_from_seq_pending_and_empty) {
  lt_fixture f;
  bus_consumer_opts o;
  bus_consumer *k = NULL;
  lt_fixture_up(&f);
  for (int i = 0; i < 5; i++)
    put(&f, "lark.run.j1");
  bus_consumer_opts_init(&o);
  o.stream = "LARK_RUNS";
  o.deliver = BUS_DELIVER_FROM_SEQ;
  o.start_seq = 3;
  o.ack_none = 1;
  cr_assert_eq(bus_consumer_open(f.c, &o, &k), 0, "%s", bus_last_error());
  uint64_t pending = 0;
  cr_assert_eq(bus_consumer_pending(k, &pending), 0);
  cr_assert_eq(pending, 3);
  cr_assert_eq(bus_consumer_fetch(k, 100, 1000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 3);
  /* empty: timeouts are "nothing yet", twice in a row too */
  cr_assert_eq(bus_consumer_fetch(k, 100, 100, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 0);
  cr_assert_eq(bus_consumer_fetch(k, 100, 0, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 0);
  bus_consumer_close(k);
  o.stream = "NOPE";
  cr_assert_eq(bus_consumer_open(f.c, &o, &k), BUS_ENO_STREAM);
  lt_fixture_down(&f);
}

/* An edge user that may not touch LARK_EVENTS's consumers. */
Test(consumer, denied) {
  char dir[256], conf[300], admin[300], edge[300];
  char seed[BUS_NKEY_SEED_LEN + 1], apub[BUS_NKEY_PUB_LEN + 1],
      epub[BUS_NKEY_PUB_LEN + 1];
  lt_natsd s;
  bus_conn *ac = NULL, *ec = NULL;
  bus_consumer *k = NULL;
  lt_tmpdir(dir, sizeof dir, "deny");
  snprintf(conf, sizeof conf, "%s/server.conf", dir);
  snprintf(admin, sizeof admin, "%s/admin.nk", dir);
  snprintf(edge, sizeof edge, "%s/edge.nk", dir);
  cr_assert_eq(bus_nkey_create(seed, apub), 0);
  cr_assert_eq(bus_nkey_write(admin, seed), 0);
  cr_assert_eq(bus_nkey_create(seed, epub), 0);
  cr_assert_eq(bus_nkey_write(edge, seed), 0);
  FILE *cf = fopen(conf, "w");
  fprintf(cf,
          "authorization { users = [\n {nkey: %s}\n"
          " {nkey: %s, permissions: {publish: [\"lark.in.n1.>\"],"
          " subscribe: [\"_INBOX_n1.>\"]}}\n] }\n",
          apub, epub);
  fclose(cf);
  cr_assert_eq(lt_natsd_start(&s, conf, NULL), 0);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = s.url;
  o.js_wait_ms = 500;
  o.creds = admin;
  cr_assert_eq(bus_conn_open(&ac, &o), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(ac, 1000), 0, "%s", bus_last_error());
  o.creds = edge;
  o.inbox_prefix = "_INBOX_n1";
  cr_assert_eq(bus_conn_open(&ec, &o), 0, "%s", bus_last_error());
  bus_consumer_opts co;
  bus_consumer_opts_init(&co);
  co.stream = "LARK_EVENTS";
  co.durable = "edge-n1";
  co.filter = "lark.ev.>";
  int rc = bus_consumer_open(ec, &co, &k);
  cr_assert_eq(rc, BUS_EDENIED, "%s %s", bus_err_name(rc), bus_last_error());
  bus_conn_close(ec);
  bus_conn_close(ac);
  lt_natsd_stop(&s);
  lt_rmtree(dir);
}

/* A node's slice consumer: last per subject, one pull held open, one ack
 * per batch, position in the broker's memory. A fetch hands over what is
 * there as soon as something is; a restarted broker forgets the consumer
 * (and the node stream, kept in memory) and the next empty fetch says so;
 * once the stream is made and filled again, the consumer opened again
 * hands over the current states. */
static bus_consumer *
open_slice(lt_fixture *f) {
  bus_slice sl;
  bus_consumer *k = NULL;
  cr_assert_eq(bus_slice_init(&sl, "n1"), 0);
  int rc = bus_consumer_open(f->c, &sl.opts, &k);
  cr_assert_eq(rc, 0, "%s %s", bus_err_name(rc), bus_last_error());
  return k;
}

Test(consumer, slice_acks_once_and_is_found_gone_after_a_restart,
     .timeout = 60) {
  lt_fixture f;
  lt_fixture_up(&f);
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  put(&f, "lark.node.n1.pod.a");
  put(&f, "lark.node.n1.pod.a");
  put(&f, "lark.node.n1.pod.b");
  bus_consumer *k = open_slice(&f);
  cr_assert_eq(bus_consumer_fetch(k, 100, 2000, f.b), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_batch_len(f.b), 2, "the last of each pod");
  cr_assert_eq(bus_batch_ack(f.b), 0, "%s", bus_last_error());
  /* one lone message comes at once, not when the batch would be full */
  put(&f, "lark.node.n1.pod.c");
  int64_t t0 = lt_now_ms();
  cr_assert_eq(bus_consumer_fetch(k, 100, 5000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 1);
  cr_expect_lt(lt_now_ms() - t0, 2500, "a lone message waited for the batch");
  cr_assert_eq(bus_batch_ack(f.b), 0);
  /* the last ack covered the first batch too: nothing comes back */
  bus_consumer_close(k);
  k = open_slice(&f);
  cr_assert_eq(bus_consumer_fetch(k, 100, 300, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 0, "acked messages came again");
  uint64_t pending = 99;
  int prc = bus_consumer_pending(k, &pending);
  cr_assert_eq(prc, 0, "%s %s", bus_err_name(prc), bus_last_error());
  cr_assert_eq(pending, 0);

  cr_assert_eq(lt_natsd_kill_restart(&f.s), 0);
  int rc = 0;
  for (int i = 0; i < 40 && rc == 0; i++)
    rc = bus_consumer_fetch(k, 100, 250, f.b);
  cr_assert_eq(rc, BUS_ENOT_FOUND, "%s: %s", bus_err_name(rc),
               bus_last_error());
  bus_consumer_close(k);
  /* the node stream was kept in memory: gone as well, until its writers
   * make it again and send what it held (bus_view_node_streams_repair) */
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, "n1"), 0);
  k = NULL;
  rc = bus_consumer_open(f.c, &sl.opts, &k);
  cr_assert_eq(rc, BUS_ENO_STREAM, "%s: %s", bus_err_name(rc),
               bus_last_error());
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  put(&f, "lark.node.n1.pod.a");
  put(&f, "lark.node.n1.pod.b");
  put(&f, "lark.node.n1.pod.c");
  k = open_slice(&f);
  cr_assert_eq(bus_consumer_fetch(k, 100, 2000, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 3, "every pod's current state again");
  bus_consumer_close(k);
  lt_fixture_down(&f);
}

/* The JetStream API requests another client of the account sees until
 * none comes for 300 ms, their subjects joined by spaces into out. */
static int
api_requests(natsSubscription *sub, char *out, size_t cap) {
  natsMsg *m = NULL;
  int n = 0;
  out[0] = 0;
  while (natsSubscription_NextMsg(&m, sub, 300) == NATS_OK) {
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", n ? " " : "", natsMsg_GetSubject(m));
    n++;
    natsMsg_Destroy(m);
  }
  return n;
}

/* A fleet opens its slices at once: each open is one API request (the
 * consumer made), not a question then a create; made anew after a hole,
 * it is the delete and the create. */
Test(consumer, a_slice_opens_with_one_api_request, .timeout = 60) {
  lt_fixture f;
  lt_fixture_up(&f);
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  put(&f, "lark.node.n1.pod.a");
  natsConnection *nc = NULL;
  natsSubscription *sub = NULL;
  cr_assert_eq(natsConnection_ConnectTo(&nc, f.s.url), NATS_OK);
  cr_assert_eq(natsConnection_SubscribeSync(&sub, nc, "$JS.API.>"), NATS_OK);
  cr_assert_eq(natsConnection_Flush(nc), NATS_OK);
  char seen[2048];
  bus_consumer *k = open_slice(&f);
  int n = api_requests(sub, seen, sizeof seen);
  cr_expect_eq(n, 1, "opening a new slice took %d requests: %s", n, seen);
  cr_expect(strstr(seen, "CONSUMER.CREATE.LARK_NODE_n1.edge-n1"),
            "not a create: %s", seen);
  cr_assert_eq(bus_consumer_fetch(k, 100, 500, f.b), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_len(f.b), 1, "the slice's one pod");
  cr_assert_eq(bus_batch_ack(f.b), 0);
  bus_consumer_close(k);
  put(&f, "lark.node.n1.pod.b");
  api_requests(sub, seen, sizeof seen); /* the pull's own */
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, "n1"), 0);
  sl.opts.recreate = 1; /* as lark-edge opens it after a hole */
  k = NULL;
  int rc = bus_consumer_open(f.c, &sl.opts, &k);
  cr_assert_eq(rc, 0, "%s %s", bus_err_name(rc), bus_last_error());
  n = api_requests(sub, seen, sizeof seen);
  cr_expect_eq(n, 2, "opening it anew took %d requests: %s", n, seen);
  cr_assert_eq(bus_consumer_fetch(k, 100, 2000, f.b), 0, "%s",
               bus_last_error());
  cr_expect_eq(bus_batch_len(f.b), 2, "%zu messages, not each pod's state",
               bus_batch_len(f.b));
  bus_consumer_close(k);
  natsSubscription_Destroy(sub);
  natsConnection_Destroy(nc);
  lt_fixture_down(&f);
}

/* Deleted under a reader that keeps fetching nothing: the broker answers
 * the next pull "503 no responders" (2.9 said nothing, and the reader
 * found out only by asking after 30 s without messages), and the
 * consumer's info then says it is gone. */
Test(consumer, a_deleted_consumer_is_noticed_when_idle, .timeout = 90) {
  lt_fixture f;
  lt_fixture_up(&f);
  bus_consumer *k = open_durable(&f, "gone", 1);
  int rc = bus_consumer_fetch(k, 10, 500, f.b);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_eq(delete_consumer(&f, "gone"), 0, "%s", bus_last_error());
  int64_t t0 = lt_now_ms();
  while (rc == 0 && lt_now_ms() - t0 < 45000)
    rc = bus_consumer_fetch(k, 10, 1000, f.b);
  cr_assert_eq(rc, BUS_ENOT_FOUND, "%s: %s", bus_err_name(rc),
               bus_last_error());
  cr_expect_lt(lt_now_ms() - t0, 10000, "the 503 was not taken for 'gone'");
  bus_consumer_close(k);
  lt_fixture_down(&f);
}

/* A node's slice acks one message per batch, so a message lost on its
 * way would be acked by the next one. Another client takes a message
 * from the slice's consumer (once the slice's own held pull has ended):
 * the next fetch hands over what came before the hole, then says the
 * consumer must be opened again; made anew, it hands over every pod's
 * current state, the taken one included. */
Test(consumer, a_hole_in_the_slice_is_told_and_mended, .timeout = 60) {
  lt_fixture f;
  lt_fixture_up(&f);
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  bus_consumer *k = open_slice(&f);
  put(&f, "lark.node.n1.pod.a");
  cr_assert_eq(bus_consumer_fetch(k, 100, 500, f.b), 0);
  cr_assert_eq(bus_batch_len(f.b), 1);
  cr_assert_eq(bus_batch_ack(f.b), 0);
  lt_sleep_ms(1000); /* its pull, held 500 ms, is over */
  put(&f, "lark.node.n1.pod.b");
  /* a raw pull from the slice's consumer, as a client with that right
   * would make it */
  void *reply = NULL;
  size_t rlen = 0;
  const char req[] = "{\"batch\":1,\"expires\":1000000000}";
  int rc =
      bus_conn_request(f.c, "$JS.API.CONSUMER.MSG.NEXT.LARK_NODE_n1.edge-n1",
                       req, sizeof req - 1, 2000, &reply, &rlen);
  cr_assert_eq(rc, 0, "the other client's pull: %s", bus_last_error());
  free(reply);
  put(&f, "lark.node.n1.pod.c");
  int got = 0;
  for (int i = 0; i < 10 && rc == 0; i++) {
    rc = bus_consumer_fetch(k, 100, 500, f.b);
    got += rc == 0 ? (int)bus_batch_len(f.b) : 0;
  }
  cr_assert_eq(rc, BUS_ENOT_FOUND, "the hole went unnoticed: %s",
               bus_last_error());
  cr_expect_eq(got, 0, "pod c was handed over past the hole");
  bus_consumer_close(k);
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, "n1"), 0);
  sl.opts.recreate = 1;
  cr_assert_eq(bus_consumer_open(f.c, &sl.opts, &k), 0, "%s", bus_last_error());
  cr_assert_eq(bus_consumer_fetch(k, 100, 2000, f.b), 0);
  cr_expect_eq(bus_batch_len(f.b), 3, "every pod's current state again");
  bus_consumer_close(k);
  lt_fixture_down(&f);
}

/* A fetch loop on its own thread, while the test upsets its consumer (a
 * broker started from another thread dies with that thread). */
typedef struct reading {
  bus_consumer *k;
  bus_batch *b;
  int rc;
  int64_t ms;
  pthread_t th;
} reading;

static void *
read_run(void *arg) {
  reading *r = arg;
  int64_t t0 = lt_now_ms();
  r->rc = 0;
  while (r->rc == 0 && lt_now_ms() - t0 < 25000)
    r->rc = bus_consumer_fetch(r->k, 100, 20000, r->b);
  r->ms = lt_now_ms() - t0;
  return NULL;
}

/* The slice's pull is held for a node's whole wait (30 s in lark-edge):
 * a consumer deleted under it (its stream made anew), or forgotten by a
 * restarted broker, is noticed at once, not when that wait is over. */
static void
held_pull_notices(int restart) {
  lt_fixture f;
  lt_fixture_up(&f);
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  reading r = {.k = open_slice(&f), .b = f.b};
  cr_assert_eq(pthread_create(&r.th, NULL, read_run, &r), 0);
  lt_sleep_ms(700);
  if (restart)
    cr_assert_eq(lt_natsd_kill_restart(&f.s), 0);
  else
    cr_assert_eq(bus_consumer_delete(f.c, "LARK_NODE_n1", "edge-n1"), 0, "%s",
                 bus_last_error());
  pthread_join(r.th, NULL);
  cr_expect_eq(r.rc, BUS_ENOT_FOUND, "%s: %s", bus_err_name(r.rc),
               bus_last_error());
  cr_expect_lt(r.ms, 8000, "the held pull was waited out (%lld ms)",
               (long long)r.ms);
  bus_consumer_close(r.k);
  lt_fixture_down(&f);
}

Test(consumer, a_held_pull_notices_its_consumer_deleted, .timeout = 60) {
  held_pull_notices(0);
}

Test(consumer, a_held_pull_notices_a_broker_restart, .timeout = 60) {
  held_pull_notices(1);
}

/* ------------------------------------------- closed under a message flow */

typedef struct flow {
  const lt_natsd *s;
  atomic_int stop;
  long sent;
  pthread_t th;
} flow;

/* Core publishes into node n1's stream, about 10,000 a second (faster,
 * each pod's one message is replaced before the slice is handed it),
 * until stop. */
static void *
flow_run(void *arg) {
  flow *w = arg;
  bus_conn *c = NULL;
  if (lt_connect(w->s, &c))
    return NULL;
  char subject[64], body[64] = "desired";
  while (!atomic_load(&w->stop)) {
    snprintf(subject, sizeof subject, "lark.node.n1.pod.p%ld", w->sent % 50);
    if (bus_conn_publish(c, subject, body, sizeof body) == 0)
      w->sent++;
    if (w->sent % 10 == 0)
      usleep(1000);
  }
  bus_conn_close(c);
  return NULL;
}

static void
echo(bus_conn *c, const char *subject, const char *reply, const void *data,
     size_t len, void *ud) {
  (void)subject, (void)ud;
  if (reply)
    bus_conn_publish(c, reply, data, len);
}

typedef struct closing {
  bus_conn *c;
  atomic_int done;
} closing;

static void *
close_run(void *arg) {
  closing *k = arg;
  bus_conn_close(k->c);
  atomic_store(&k->done, 1);
  return NULL;
}

/* A slice closed while its held pull still receives (lark-edge opens it
 * again after a failure, and closes it at its end) leaves its connection
 * whole: nats.c 3.4.1's read loop may still be handing a message to the
 * subscription being closed, and a subscription freed under it left the
 * read loop stuck on its freed lock (the connection deaf, its close
 * waiting forever) or crashed the process. */
Test(consumer, a_slice_closed_while_messages_flow_leaves_its_connection,
     .timeout = 120) {
  lt_fixture f;
  bus_conn *c = NULL;
  bus_serve *sv = NULL;
  lt_fixture_up(&f);
  cr_assert_eq(bus_node_stream_ensure(f.c, "n1", NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_conn_serve(f.c, "lark.sys.echo", NULL, echo, NULL, &sv), 0);
  cr_assert_eq(lt_connect(&f.s, &c), 0, "%s", bus_last_error());
  flow w = {.s = &f.s};
  cr_assert_eq(pthread_create(&w.th, NULL, flow_run, &w), 0);
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, "n1"), 0);
  int fetched = 0;
  for (int i = 0; i < 3000; i++) {
    bus_consumer *k = NULL;
    int rc = bus_consumer_open(c, &sl.opts, &k);
    cr_assert_eq(rc, 0, "%d: %s %s", i, bus_err_name(rc), bus_last_error());
    if (bus_consumer_fetch(k, 100, 20, f.b) == 0 && bus_batch_len(f.b)) {
      fetched += (int)bus_batch_len(f.b);
      bus_batch_ack(f.b);
    }
    bus_batch_clear(f.b);
    bus_consumer_close(k); /* its pull still open, messages coming */
  }
  atomic_store(&w.stop, 1);
  pthread_join(w.th, NULL);
  cr_expect_gt(fetched, 0, "the slice read nothing (sent %ld)", w.sent);
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(c, "lark.sys.echo", "hi", 2, 3000, &reply, &len);
  cr_expect_eq(rc, 0, "the connection went deaf: %s", bus_last_error());
  free(reply);
  closing k = {.c = c};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, close_run, &k), 0);
  for (int i = 0; i < 300 && !atomic_load(&k.done); i++)
    lt_sleep_ms(50);
  cr_assert(atomic_load(&k.done), "closing the connection hung");
  pthread_join(th, NULL);
  bus_conn_unserve(sv);
  lt_fixture_down(&f);
}
