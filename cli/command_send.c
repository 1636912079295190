/*
 * command_send.c - a command's request and its retries (command_send.h),
 * shared by larkctl's command.c and lark-gateway's writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "command_send.h"

/* A reply whose error says the broker could not store now (no responder
 * while a cluster elects a leader, a timeout, a lost connection) refused
 * nothing: the command is sent again, with the same key. */
static int
transient_reply(const msgpack_object *reply) {
  char code[32] = "";
  const msgpack_object *err = bus_obj_get(reply, "error");
  if (!err || !bus_obj_str(err, "code", code, sizeof code))
    return 0;
  return !strcmp(code, "NO_STREAM") || !strcmp(code, "TIMEOUT") ||
         !strcmp(code, "CONN");
}

/* One request and its reply, decoded into zone. */
static int
request_once(bus_conn *c, const char *subject, const msgpack_sbuffer *body,
             msgpack_zone *zone, msgpack_object *reply) {
  void *buf = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(c, subject, body ? body->data : NULL,
                       body ? body->size : 0, LARK_CMD_TIMEOUT_MS, &buf, &len);
  if (rc)
    return rc;
  /* unpacked strings point into the buffer: keep it in the zone */
  void *keep = msgpack_zone_malloc(zone, len ? len : 1);
  if (keep)
    memcpy(keep, buf, len);
  free(buf);
  if (!keep)
    return bus_error(-ENOMEM, "out of memory");
  if (msgpack_unpack(keep, len, NULL, zone, reply) != MSGPACK_UNPACK_SUCCESS ||
      reply->type != MSGPACK_OBJECT_MAP)
    return bus_error(BUS_EMALFORMED, "malformed reply on %s", subject);
  return 0;
}

int
lark_command_send(bus_conn *c, const char *user, const char *kind,
                  const char *verb, const msgpack_sbuffer *body,
                  msgpack_zone *zone, msgpack_object *reply) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.cmd.%s.%s.%s", user, kind, verb);
  int rc = BUS_ETIMEOUT, timeouts = 0;
  for (int wait_ms = 100, waited = 0;; waited += wait_ms, wait_ms *= 2) {
    rc = request_once(c, subject, body, zone, reply);
    if (rc == BUS_ETIMEOUT && ++timeouts < 2)
      continue;
    if (rc || !transient_reply(reply) || waited > LARK_CMD_TIMEOUT_MS * 3)
      return rc;
    bus_sleep_ms(wait_ms);
  }
}

int
lark_logs_sync(bus_conn *c, const char *user) {
  msgpack_zone z;
  msgpack_zone_init(&z, 512);
  msgpack_object reply;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 0);
  int rc = lark_command_send(c, user, "logs", "sync", &sb, &z, &reply);
  const msgpack_object *res = rc ? NULL : bus_obj_get(&reply, "result");
  const msgpack_object *synced = res ? bus_obj_get(res, "synced") : NULL;
  if (!rc && !(synced && synced->type == MSGPACK_OBJECT_BOOLEAN &&
               synced->via.boolean))
    rc = bus_error(BUS_ETIMEOUT, "lark-logs %s",
                   res ? "is still behind the ingress" : "refused logs.sync");
  msgpack_sbuffer_destroy(&sb);
  msgpack_zone_destroy(&z);
  return rc;
}

void
lark_apply_body(msgpack_sbuffer *sb, const char *key, const lark_doc *d) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "key", key);
  msgpack_pack_str_with_body(&pk, "resource", 8);
  msgpack_sbuffer_write(sb, d->mp, d->mp_len); /* already one msgpack map */
}

void
lark_name_body(msgpack_sbuffer *sb, const char *key, const char *name) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "key", key);
  bus_pack_kv_str(&pk, "name", name);
}

/*
 * What a service says it did: `unchanged: true` or `configured: true` (the
 * contract's flags), else a `result` word it names (lark-scheduler answers
 * {result: "created" | "unchanged" | "stopped" ...}), else dflt.
 */
const char *
lark_reply_outcome(const msgpack_object *reply, const char *dflt, char *buf,
                   size_t cap) {
  static const char *const words[] = {
      "created", "unchanged", "configured", "stopped",    "resumed",
      "deleted", "cordoned",  "uncordoned", "registered", NULL};
  const msgpack_object *u = bus_obj_get(reply, "unchanged");
  const msgpack_object *c = bus_obj_get(reply, "configured");
  if (u && u->type == MSGPACK_OBJECT_BOOLEAN && u->via.boolean)
    return "unchanged";
  if (c && c->type == MSGPACK_OBJECT_BOOLEAN && c->via.boolean)
    return "configured";
  if (bus_obj_str(reply, "result", buf, cap))
    for (const char *const *w = words; *w; w++)
      if (!strcmp(buf, *w))
        return *w;
  return dflt;
}
