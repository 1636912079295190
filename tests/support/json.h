/*
 * json.h - JSON text into msgpack, for tests that write their resources
 * and events as JSON.
 */
#ifndef LARK_TEST_JSON_H
#define LARK_TEST_JSON_H

#include <jansson.h>
#include <msgpack.h>

/* Pack j (objects, arrays, strings, integers, reals, booleans, null). */
void lt_pack_json(msgpack_packer *pk, const json_t *j);

#endif
