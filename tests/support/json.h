/*
 * json.h - JSON text into msgpack, for tests that write their resources
 * and events as JSON; and the broker's JSON API, asked and answered.
 */
#ifndef LARK_TEST_JSON_H
#define LARK_TEST_JSON_H

#include <jansson.h>
#include <msgpack.h>

#include "bus.h"

/* Pack j (objects, arrays, strings, integers, reals, booleans, null). */
void lt_pack_json(msgpack_packer *pk, const json_t *j);

/* Request subject with body (a JSON text) on c, within 2 s; the reply
 * parsed, or NULL when none came or it is not JSON (json_decref it). */
json_t *lt_request_json(bus_conn *c, const char *subject, const char *body);

#endif
