/*
 * cmd_check.h - commands from Criterion tests: a refused or unanswered
 * command fails the test with the service's message. Header only: it uses
 * Criterion's asserts, which the support library does not link.
 */
#ifndef LARK_TEST_CMD_CHECK_H
#define LARK_TEST_CMD_CHECK_H

#include <criterion/criterion.h>

#include "cmd.h"

/* lt_command with body j (consumed), failing the test when it fails. */
static inline msgpack_object
lt_must_command_json(bus_conn *c, const char *kind, const char *verb, json_t *j,
                     msgpack_zone *z) {
  msgpack_object o;
  cr_assert_eq(lt_command(c, kind, verb, j, z, &o), 0, "%s.%s: %s", kind, verb,
               bus_last_error());
  return o;
}

/* The same with a JSON text body. */
static inline msgpack_object
lt_must_command(bus_conn *c, const char *kind, const char *verb,
                const char *json, msgpack_zone *z) {
  json_error_t err;
  json_t *j = json_loads(json, 0, &err);
  cr_assert_not_null(j, "bad test json: %s", err.text);
  return lt_must_command_json(c, kind, verb, j, z);
}

/* Fail the test when reply r is an {error}. */
static inline void
lt_expect_ok(const msgpack_object *r) {
  char msg[512] = "";
  const msgpack_object *e = bus_obj_get(r, "error");
  if (e)
    bus_obj_str(e, "message", msg, sizeof msg);
  cr_assert_null(e, "command refused: %s", msg);
}

/* kind.apply with body (consumed), failing the test unless it is ok. */
static inline void
lt_must_apply_body(bus_conn *c, const char *kind, json_t *body) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object r = lt_must_command_json(c, kind, "apply", body, &z);
  lt_expect_ok(&r);
  msgpack_zone_destroy(&z);
}

/* The same with a JSON text body. */
static inline void
lt_must_apply(bus_conn *c, const char *kind, const char *json) {
  json_error_t err;
  json_t *j = json_loads(json, 0, &err);
  cr_assert_not_null(j, "bad test json: %s", err.text);
  lt_must_apply_body(c, kind, j);
}

/* The same with body {resource} (resource consumed). */
static inline void
lt_must_apply_resource(bus_conn *c, const char *kind, json_t *resource) {
  cr_assert_not_null(resource, "bad test resource");
  lt_must_apply_body(c, kind, json_pack("{s:o}", "resource", resource));
}

#endif
