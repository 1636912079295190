/*
 * secbed.c - the security tests' broker (see secbed.h).
 */
#include "secbed.h"

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "deploy.h"
#include "events.h"
#include "json.h"
#include "secure.h"
#include "wait.h"

static void
add(lt_sec *x, const char *name, lark_role role) {
  cr_assert_eq(lark_creds_ensure(x->data, name, role, NULL, NULL), 0, "%s",
               lark_cfg_error());
}

/* Credentials of every role, accounts.conf and nats.conf from them. */
static void
render(lt_sec *x) {
  lark_broker_opts o;
  add(x, "admin", LARK_ROLE_ADMIN);
  add(x, "lark-catalog", LARK_ROLE_SERVICE);
  add(x, "alice", LARK_ROLE_USER);
  add(x, "gpu-1", LARK_ROLE_NODE);
  add(x, "gpu-2", LARK_ROLE_NODE);
  cr_assert_eq(lark_creds_ensure_relay(x->data, "relay-n1", "c1", NULL, NULL),
               0, "%s", lark_cfg_error());
  add(x, "relay-hub", LARK_ROLE_RELAY_HUB);
  add(x, "gateway", LARK_ROLE_GATEWAY);
  snprintf(x->accounts, sizeof x->accounts, "%s/accounts.conf", x->data);
  snprintf(x->conf, sizeof x->conf, "%s/nats.conf", x->data);
  cr_assert_eq(lt_render_accounts(x->data), 0, "%s", lark_cfg_error());
  lark_broker_opts_init(&o);
  o.run_dir = x->data; /* the store: natsd's -sd */
  cr_assert_eq(lark_render_conf("single", &o, x->conf), 0, "%s",
               lark_cfg_error());
}

void
lt_sec_up(lt_sec *x) {
  memset(x, 0, sizeof *x);
  lt_tmpdir(x->data, sizeof x->data, "sec");
  render(x);
  cr_assert_eq(lt_natsd_start(&x->s, x->conf, NULL), 0);
  cr_assert_eq(lt_sec_connect(x, "admin", NULL, &x->admin), 0, "%s",
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
  lt_sec_wait_seq(x, OWN, 2);
  lt_sec_wait_seq(x, OTHER, 1);
  lt_pack_text(&x->body, "hello");
}

void
lt_sec_down(lt_sec *x) {
  bus_conn_close(x->admin);
  lt_natsd_stop(&x->s);
  lt_rmtree(x->data);
  msgpack_sbuffer_destroy(&x->body);
}

int
lt_sec_connect(lt_sec *x, const char *name, const char *inbox, bus_conn **out) {
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

uint64_t
lt_sec_last_seq(lt_sec *x, const char *stream) {
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(x->admin, stream, &seq), 0, "%s",
               bus_last_error());
  return seq;
}

void
lt_sec_wait_seq(lt_sec *x, const char *stream, uint64_t want) {
  for (int i = 0; i < 100 && lt_sec_last_seq(x, stream) < want; i++)
    lt_sleep_ms(20);
  cr_assert_eq(lt_sec_last_seq(x, stream), want, "%s", stream);
}

void
lt_sec_sample(lt_sec *x, bus_event *ev, char id[33]) {
  lt_sample_event(ev, id, "sample.created", &x->body);
}

void
lt_sec_put(lt_sec *x, const char *subject) {
  bus_event ev;
  char id[33];
  lt_sec_sample(x, &ev, id);
  cr_assert_eq(
      bus_append(x->admin, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0,
      "%s", bus_last_error());
}

json_t *
lt_sec_consumers(lt_sec *x, const char *stream) {
  char subj[128];
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.NAMES.%s", stream);
  json_t *j = lt_request_json(x->admin, subj, "{}");
  cr_assert(j, "%s", bus_last_error());
  json_t *names = json_incref(json_object_get(j, "consumers"));
  json_decref(j);
  return names ? names : json_array();
}

size_t
lt_sec_consumer_count(lt_sec *x, const char *stream) {
  json_t *names = lt_sec_consumers(x, stream);
  size_t n = json_array_size(names);
  json_decref(names);
  return n;
}

int
lt_sec_durable(bus_conn *c, const char *stream, const char *durable,
               const char *filter, bus_consumer **k) {
  bus_consumer_opts co;
  bus_consumer_opts_init(&co);
  co.stream = stream;
  co.durable = durable;
  co.filter = filter;
  return bus_consumer_open(c, &co, k);
}

void
lt_count_cb(bus_conn *c, const char *subject, const char *reply,
            const void *data, size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)data, (void)len;
  atomic_fetch_add((atomic_int *)ud, 1);
}
