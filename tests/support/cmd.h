/*
 * cmd.h - drive services the way larkctl does, from tests: commands on
 * lark.cmd.admin.<kind>.<verb>, and the fields of what they describe.
 */
#ifndef LARK_TEST_CMD_H
#define LARK_TEST_CMD_H

#include <jansson.h>

#include "bus.h"

/* Unpack len bytes of data into o, from a copy kept in z (the strings
 * of o point into it): msgpack_unpack's code. */
int lt_unpack_into(msgpack_zone *z, const void *data, size_t len,
                   msgpack_object *o);

/*
 * Request subject with body (len bytes), waiting timeout_ms for the
 * answer, and again every 100 ms while nobody answers, up to tries times
 * in all. The reply is unpacked into reply (kept in z). Returns 0, the
 * request's error (detail in bus_last_error()), or BUS_EMALFORMED.
 */
int lt_request(bus_conn *c, const char *subject, const void *body, size_t len,
               int timeout_ms, int tries, msgpack_zone *z,
               msgpack_object *reply);

/*
 * Send lark.cmd.admin.<kind>.<verb> with body (a JSON object, consumed;
 * a fresh idempotency key is added), retrying for up to 5 s while nobody
 * answers (a service still starting). The reply is unpacked into z.
 * Returns 0, or the error with detail in bus_last_error().
 */
int lt_command(bus_conn *c, const char *kind, const char *verb, json_t *body,
               msgpack_zone *z, msgpack_object *reply);

/* A string or a count as text into out; "" for anything else or NULL. */
void lt_obj_text(const msgpack_object *v, char *out, size_t cap);

/*
 * The text of field key of kind/name as its service describes it (sub: a
 * map inside the result to look in, e.g. "job"; NULL: the result itself);
 * integers as decimal; "" when absent.
 */
void lt_field(bus_conn *c, const char *kind, const char *sub, const char *name,
              const char *key, char *out, size_t cap);

/*
 * Poll lt_field every 100 ms for up to seconds until it equals want (or,
 * when want starts with '~', contains the rest). 1 when it did; 0 with
 * the last value in got.
 */
int lt_wait_field(bus_conn *c, const char *kind, const char *sub,
                  const char *name, const char *key, const char *want,
                  int seconds, char *got, size_t cap);

/*
 * Whether node's stream holds a desired state for pod: 1 yes, 0 no. With
 * seconds > 0, poll every 100 ms for up to that long until it is
 * gone, and say whether it still is.
 */
int lt_desired_there(bus_conn *c, const char *node, const char *pod,
                     int seconds);

#endif
