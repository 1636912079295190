/*
 * test_command.c - the command path against a real broker: the actor
 * comes from the subject, replies have one shape, bad requests are
 * answered with an error and never reach the handler.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "cmd.h"
#include "natsd.h"

static lt_natsd srv;
static bus_conn *conn;
static int handled;

static void
setup(void) {
  cr_assert_eq(lt_natsd_start(&srv, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&srv, &conn), 0, "%s", bus_last_error());
  handled = 0;
}

static void
teardown(void) {
  bus_conn_close(conn);
  lt_natsd_stop(&srv);
}

TestSuite(command, .init = setup, .fini = teardown, .timeout = 30);

/* verb "ok" replies ok with {user}; verb "bad" replies a field error. */
static void
handler(bus_conn *c, const bus_cmd *cmd, void *ud) {
  (void)ud;
  handled++;
  if (!strcmp(cmd->verb, "ok")) {
    bus_packbuf b;
    bus_packbuf_init(&b);
    bus_pack_kv_str(&b.pk, "user", cmd->user);
    bus_pack_kv_str(&b.pk, "key", cmd->key);
    bus_cmd_reply_ok(c, cmd, 7, b.sb.data, b.sb.size, 2);
    bus_packbuf_destroy(&b);
    return;
  }
  bus_field_err e[2] = {{"spec.tasks[0].replicas", "must be at least 1"},
                        {"metadata.name", "invalid name"}};
  bus_cmd_reply_error(c, cmd, BUS_EFIELD, "invalid Job", e, 2);
}

static msgpack_object
call(const char *subject, const char *body, size_t len, msgpack_zone *z) {
  msgpack_object o;
  int rc = lt_request(conn, subject, body, len, 2000, 1, z, &o);
  cr_assert_eq(rc, 0, "request %s: %s", subject, bus_last_error());
  return o;
}

Test(command, ok_reply_carries_seq_and_the_subjects_user) {
  bus_serve *s;
  cr_assert_eq(bus_cmd_serve(conn, "sample", handler, NULL, &s), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  /* {key: "k1", user: "mallory"}: the body cannot claim another user */
  const char body[] = "\x82\xa3key\xa2k1\xa4user\xa7mallory";
  msgpack_object r =
      call("lark.cmd.alice.sample.ok", body, sizeof body - 1, &z);
  char user[32], key[32];
  cr_expect(bus_obj_get(&r, "ok"));
  cr_expect_eq(bus_obj_int(&r, "seq", 0), 7);
  cr_expect_str_eq(bus_obj_str(&r, "user", user, sizeof user), "alice");
  cr_expect_str_eq(bus_obj_str(&r, "key", key, sizeof key), "k1");
  msgpack_zone_destroy(&z);
  bus_conn_unserve(s);
}

Test(command, error_reply_lists_every_detail) {
  bus_serve *s;
  cr_assert_eq(bus_cmd_serve(conn, "sample", handler, NULL, &s), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r = call("lark.cmd.alice.sample.apply", "\x80", 1, &z);
  const msgpack_object *e = bus_obj_get(&r, "error");
  cr_assert_not_null(e);
  char code[32];
  cr_expect_str_eq(bus_obj_str(e, "code", code, sizeof code), "FIELD");
  const msgpack_object *d = bus_obj_get(e, "details");
  cr_assert_eq(d->via.array.size, 2);
  char path[64];
  cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "path", path, 64),
                   "spec.tasks[0].replicas");
  msgpack_zone_destroy(&z);
  bus_conn_unserve(s);
}

Test(command, malformed_body_never_reaches_the_handler) {
  bus_serve *s;
  cr_assert_eq(bus_cmd_serve(conn, "sample", handler, NULL, &s), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r = call("lark.cmd.alice.sample.ok", "\xc1junk", 5, &z);
  char code[32];
  cr_expect_str_eq(
      bus_obj_str(bus_obj_get(&r, "error"), "code", code, sizeof code),
      "MALFORMED");
  r = call("lark.cmd.alice.sample.ok", "\x93\x01\x02\x03", 4, &z);
  cr_expect_not_null(bus_obj_get(&r, "error"), "an array is not a map");
  cr_expect_eq(handled, 0);
  msgpack_zone_destroy(&z);
  bus_conn_unserve(s);
}

Test(command, parse_refuses_bad_subjects) {
  msgpack_zone z;
  msgpack_zone_init(&z, 256);
  bus_cmd cmd;
  cr_expect_eq(bus_cmd_parse("lark.cmd.alice.job", NULL, NULL, 0, &z, &cmd),
               BUS_EINVAL);
  cr_expect_eq(
      bus_cmd_parse("lark.cmd.alice.job.apply.x", NULL, NULL, 0, &z, &cmd),
      BUS_EINVAL);
  cr_expect_eq(bus_cmd_parse("lark.ev.job.a.b", NULL, NULL, 0, &z, &cmd),
               BUS_EINVAL);
  cr_expect_eq(
      bus_cmd_parse("lark.cmd.alice.job.apply", NULL, NULL, 0, &z, &cmd), 0);
  cr_expect_str_eq(cmd.user, "alice");
  cr_expect_str_eq(cmd.kind, "job");
  cr_expect_str_eq(cmd.verb, "apply");
  msgpack_zone_destroy(&z);
}

/* Stream content delivered onto a command subject by a push consumer (the
 * broker does not check a deliver subject against the permissions of the
 * consumer's creator; the attacker names the services' queue group) is no
 * command: it arrives under its stream subject with a $JS.ACK reply, and
 * the handler never sees it. A real request after it still is one. */
Test(command, stream_content_pushed_onto_a_command_subject_is_ignored) {
  bus_serve *s;
  cr_assert_eq(bus_cmd_serve(conn, "sample", handler, NULL, &s), 0);
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  cr_assert_eq(natsConnection_ConnectTo(&nc, srv.url), NATS_OK);
  cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  const char *subjects[] = {"carrier.>"};
  sc.Name = "CARRIER";
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  cr_assert_eq(js_AddStream(NULL, js, &sc, NULL, NULL), NATS_OK);
  const char body[] = "\x82\xa3key\xa2k1\xa4user\xa7mallory";
  cr_assert_eq(
      js_Publish(NULL, js, "carrier.x", body, sizeof body - 1, NULL, NULL),
      NATS_OK);
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = "pusher";
  cc.DeliverSubject = "lark.cmd.admin.sample.ok";
  cc.DeliverGroup = "lark-sample"; /* the services' queue group */
  cc.AckPolicy = js_AckNone;
  cr_assert_eq(js_AddConsumer(NULL, js, "CARRIER", &cc, NULL, NULL), NATS_OK);
  usleep(500 * 1000); /* the consumer delivers at once; give it time */
  cr_expect_eq(handled, 0, "a pushed stream message was taken for a command");
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r =
      call("lark.cmd.alice.sample.ok", body, sizeof body - 1, &z);
  cr_expect(bus_obj_get(&r, "ok"));
  cr_expect_eq(handled, 1);
  msgpack_zone_destroy(&z);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  bus_conn_unserve(s);
}
