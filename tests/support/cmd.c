/*
 * cmd.c - commands and describe fields for tests (see cmd.h).
 */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

int
lt_unpack_into(msgpack_zone *z, const void *data, size_t len,
               msgpack_object *o) {
  void *keep = msgpack_zone_malloc(z, len ? len : 1);
  if (!keep)
    return MSGPACK_UNPACK_NOMEM_ERROR;
  memcpy(keep, data, len);
  return msgpack_unpack(keep, len, NULL, z, o);
}

int
lt_request(bus_conn *c, const char *subject, const void *body, size_t len,
           int timeout_ms, int tries, msgpack_zone *z, msgpack_object *reply) {
  void *data = NULL;
  size_t dlen = 0;
  int rc = -1;
  for (int i = 0; i < tries && rc; i++) {
    if (i)
      usleep(100 * 1000);
    rc = bus_conn_request(c, subject, body, len, timeout_ms, &data, &dlen);
  }
  if (rc)
    return rc;
  rc = lt_unpack_into(z, data, dlen, reply) < 0 ? BUS_EMALFORMED : 0;
  free(data);
  return rc;
}

int
lt_command(bus_conn *c, const char *kind, const char *verb, json_t *body,
           msgpack_zone *z, msgpack_object *reply) {
  static int counter;
  char subject[128];
  snprintf(subject, sizeof subject, "lark.cmd.admin.%s.%s", kind, verb);
  json_object_set_new(body, "key",
                      json_sprintf("k%d-%d", counter++, (int)getpid()));
  bus_packbuf b;
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, body);
  json_decref(body);
  /* the service may still start */
  int rc = lt_request(c, subject, b.sb.data, b.sb.size, 3000, 50, z, reply);
  bus_packbuf_destroy(&b);
  return rc;
}

void
lt_obj_text(const msgpack_object *v, char *out, size_t cap) {
  out[0] = 0;
  if (v && v->type == MSGPACK_OBJECT_STR)
    snprintf(out, cap, "%.*s", (int)v->via.str.size, v->via.str.ptr);
  else if (v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    snprintf(out, cap, "%llu", (unsigned long long)v->via.u64);
}

void
lt_field(bus_conn *c, const char *kind, const char *sub, const char *name,
         const char *key, char *out, size_t cap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r;
  out[0] = 0;
  if (lt_command(c, kind, "describe", json_pack("{s:s}", "name", name), &z,
                 &r) == 0) {
    const msgpack_object *res = bus_obj_get(&r, "result");
    if (res && sub)
      res = bus_obj_get(res, sub);
    lt_obj_text(res ? bus_obj_get(res, key) : NULL, out, cap);
  }
  msgpack_zone_destroy(&z);
}

int
lt_wait_field(bus_conn *c, const char *kind, const char *sub, const char *name,
              const char *key, const char *want, int seconds, char *got,
              size_t cap) {
  for (int i = 0; i < seconds * 10; i++) {
    lt_field(c, kind, sub, name, key, got, cap);
    if (!strcmp(got, want) || (want[0] == '~' && strstr(got, want + 1)))
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

static int
desired_now(bus_conn *c, const char *stream, const char *subject) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event ev;
  int rc = bus_last_event(c, stream, subject, &ev, &z);
  msgpack_zone_destroy(&z);
  return rc != BUS_ENOT_FOUND; /* a failure to ask counts as there */
}

int
lt_desired_there(bus_conn *c, const char *node, const char *pod, int seconds) {
  char stream[BUS_NODE_STREAM_MAX], subject[BUS_SUBJECT_MAX];
  bus_node_stream_name(node, stream, sizeof stream);
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node, pod);
  int there = desired_now(c, stream, subject);
  for (int i = 0; there && i < seconds * 10; i++) {
    usleep(100 * 1000);
    there = desired_now(c, stream, subject);
  }
  return there;
}
