/*
 * test_security_users.c - the broker's rules for users and services,
 * against a real nats-server started with the config larkctl renders
 * (tests/support/secbed.c): a user commands as itself only, reads the
 * events by direct gets (and through larkctl) without a consumer, and
 * writes none; a service writes events and keeps its consumer; keys are
 * kept and every user is explicit.
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

Test(security, user_commands_as_itself_and_reads, .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *u = NULL;
  bus_serve *srv = NULL;
  atomic_int cmds = 0;
  bus_event ev;
  char id[33];
  lt_sec_put(&x, "lark.ev.sample.one");
  cr_assert_eq(
      bus_conn_serve(x.admin, "lark.cmd.>", NULL, lt_count_cb, &cmds, &srv), 0);
  cr_assert_eq(lt_sec_connect(&x, "alice", NULL, &u), 0, "%s",
               bus_last_error());
  bus_conn_publish(u, "lark.cmd.bob.job.apply", "x", 1);
  bus_conn_publish(u, "lark.cmd.alice.job.apply", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&cmds) == 0; i++)
    lt_sleep_ms(20);
  lt_sleep_ms(200);
  cr_assert_eq(atomic_load(&cmds), 1, "only lark.cmd.alice.> may pass");

  /* Events are the services' to write. */
  lt_sec_sample(&x, &ev, id);
  cr_assert_lt(
      bus_append(u, "lark.ev.sample.two", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_EVENTS"), 1);

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
  bus_consumer *k = NULL;
  cr_assert_lt(
      lt_sec_durable(u, "LARK_EVENTS", "lark-catalog", "lark.ev.>", &k), 0);
  bus_conn_unserve(srv);
  bus_conn_close(u);
  lt_sec_down(&x);
}

Test(security, service_writes_events, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *svc = NULL;
  bus_event ev;
  char id[33];
  cr_assert_eq(lt_sec_connect(&x, "lark-catalog", NULL, &svc), 0);
  lt_sec_sample(&x, &ev, id);
  cr_assert_eq(
      bus_append(svc, "lark.ev.sample.one", &ev, BUS_APPEND_CHECK, NULL, NULL),
      0, "%s", bus_last_error());
  bus_consumer *k = NULL;
  cr_assert_eq(
      lt_sec_durable(svc, "LARK_EVENTS", "lark-catalog", "lark.ev.>", &k), 0,
      "%s", bus_last_error());
  bus_consumer_close(k);
  bus_conn_close(svc);
  lt_sec_down(&x);
}

Test(security, keys_kept_and_users_explicit, .timeout = 60) {
  lt_sec x;
  lt_sec_up(&x);
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
  cr_assert_eq(users, 8); /* every principal of lt_sec_up */

  cr_assert_eq(lark_creds_ensure(x.data, "gpu-1", LARK_ROLE_NODE, &after, NULL),
               0);
  cr_assert_str_eq(before.pub, after.pub);
  lt_sec_down(&x);
}

/* larkctl with creds against the test broker; up to four arguments. */
static int
larkctl(lt_sec *x, const char *who, char *out, size_t ocap, char *err,
        size_t ecap, const char *a1, const char *a2, const char *a3,
        const char *a4) {
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
  lt_sec x;
  lt_sec_up(&x);
  char out[16384], err[4096];
  lt_sec_put(&x, "lark.ev.sample.one");
  setenv("LARK_JS_WAIT_MS", "1000", 1);
  int rc = larkctl(&x, "alice", out, sizeof out, err, sizeof err, "-o", "json",
                   "tail", NULL);
  cr_assert_eq(rc, 0, "tail as a user: %s", err);
  cr_assert(strstr(out, "\"type\":\"sample.created\""), "out: %s", out);
  cr_assert(strstr(out, "\"subject\":\"lark.ev.sample.one\""), "out: %s", out);
  cr_assert_eq(lt_sec_consumer_count(&x, "LARK_EVENTS"), 0,
               "tail made a consumer");

  rc = larkctl(&x, "gpu-1", out, sizeof out, err, sizeof err, "delete", "job",
               "j1", NULL);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err, "permission denied"), "stderr: %s", err);
  cr_assert_null(strstr(err, "lark-job"), "stderr: %s", err);
  rc = larkctl(&x, "gpu-1", out, sizeof out, err, sizeof err, "status", NULL,
               NULL, NULL);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err, "permission denied"), "stderr: %s", err);
  lt_sec_down(&x);
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
  lt_sec x;
  lt_sec_up(&x);
  const char *subj[] = {"lark.ev.sample.a", "lark.ev.sample.b",
                        "lark.ev.sample.a", "lark.ev.sample.a"};
  for (int i = 0; i < 4; i++)
    lt_sec_put(&x, subj[i]);
  bus_conn *u = NULL;
  cr_assert_eq(lt_sec_connect(&x, "alice", NULL, &u), 0);
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
  lt_sec_put(&x, "lark.ev.sample.a"); /* after open: past the bound */
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
  lt_sec_put(&x, "lark.ev.sample.a");
  cr_assert_eq(drain(r, b, 1, &last), 1);
  cr_assert_eq(last, 6);
  bus_reader_close(r);
  cr_assert_eq(lt_sec_consumer_count(&x, "LARK_EVENTS"), 0);
  bus_batch_free(b);
  bus_conn_close(u);
  lt_sec_down(&x);
}
