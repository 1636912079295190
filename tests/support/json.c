/*
 * json.c - JSON values packed as msgpack, the way larkctl packs manifests;
 * the broker's JSON API asked through a test's connection.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"

void
lt_pack_json(msgpack_packer *pk, const json_t *j) {
  const char *key;
  json_t *v;
  size_t i;
  switch (json_typeof(j)) {
  case JSON_OBJECT:
    msgpack_pack_map(pk, (uint32_t)json_object_size(j));
    json_object_foreach((json_t *)j, key, v) {
      bus_pack_str(pk, key);
      lt_pack_json(pk, v);
    }
    break;
  case JSON_ARRAY:
    msgpack_pack_array(pk, (uint32_t)json_array_size(j));
    json_array_foreach(j, i, v) lt_pack_json(pk, v);
    break;
  case JSON_STRING:
    msgpack_pack_str_with_body(pk, json_string_value(j), json_string_length(j));
    break;
  case JSON_INTEGER:
    msgpack_pack_int64(pk, json_integer_value(j));
    break;
  case JSON_REAL:
    msgpack_pack_double(pk, json_real_value(j));
    break;
  case JSON_TRUE:
    msgpack_pack_true(pk);
    break;
  case JSON_FALSE:
    msgpack_pack_false(pk);
    break;
  default:
    msgpack_pack_nil(pk);
    break;
  }
}

json_t *
lt_request_json(bus_conn *c, const char *subject, const char *body) {
  void *reply = NULL;
  size_t len = 0;
  if (bus_conn_request(c, subject, body, strlen(body), 2000, &reply, &len))
    return NULL;
  json_t *j = json_loadb(reply, len, 0, NULL);
  free(reply);
  return j;
}
