/*
 * sockline.c - a line from LARK_SOCKET parsed into its answer and, for a
 * report, its run.reported data (sockline.h; the forms are in
 * edge/README.md). Anything malformed gets its reason; nothing here
 * trusts the line.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "sockline.h"

enum { VALUES_MAX = 256, VALUE_STR_MAX = 1024 };

static const char *
pack_value(msgpack_packer *pk, const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_INTEGER:
    msgpack_pack_int64(pk, json_integer_value(v));
    return NULL;
  case JSON_REAL:
    msgpack_pack_double(pk, json_real_value(v));
    return NULL;
  case JSON_TRUE:
    msgpack_pack_true(pk);
    return NULL;
  case JSON_FALSE:
    msgpack_pack_false(pk);
    return NULL;
  case JSON_NULL:
    msgpack_pack_nil(pk);
    return NULL;
  case JSON_STRING:
    if (json_string_length(v) > VALUE_STR_MAX)
      return "a string value is longer than 1024 bytes";
    msgpack_pack_str_with_body(pk, json_string_value(v), json_string_length(v));
    return NULL;
  default:
    return "values must be numbers, strings, booleans or null";
  }
}

/* A report's data {kind, values} into sb, or why not. */
static const char *
run_report(const json_t *o, msgpack_sbuffer *sb) {
  const char *kind = json_string_value(json_object_get(o, "kind"));
  const json_t *values = json_object_get(o, "values");
  if (!kind || !bus_name_valid(kind, 32))
    return "kind must be a name of at most 32 characters ([a-z0-9-])";
  if (!values)
    values = json_object();
  else
    json_incref((json_t *)values);
  const char *why = NULL;
  if (!json_is_object(values) || json_object_size(values) > VALUES_MAX)
    why = "values must be an object of at most 256 entries";
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "kind", 4);
  msgpack_pack_str_with_body(&pk, kind, strlen(kind));
  msgpack_pack_str_with_body(&pk, "values", 6);
  if (!why) {
    const char *k;
    json_t *v;
    msgpack_pack_map(&pk, (uint32_t)json_object_size(values));
    json_object_foreach((json_t *)values, k, v) {
      if (!*k || strlen(k) > 253) { /* the schema's keys: 1 to 253 bytes */
        why = *k ? "a value's name is longer than 253 bytes"
                 : "a value's name is empty";
        break;
      }
      msgpack_pack_str_with_body(&pk, k, strlen(k));
      if ((why = pack_value(&pk, v)))
        break;
    }
  }
  json_decref((json_t *)values);
  return why;
}

int
edge_sock_batch_grow(edge_sock_batch *b) {
  if (b->nlines == b->lcap) {
    size_t cap = b->lcap ? b->lcap * 2 : 64;
    edge_sock_line *g = realloc(b->lines, cap * sizeof *g);
    if (!g)
      return -1;
    b->lines = g;
    b->lcap = cap;
  }
  if (b->nreports == b->rcap) {
    size_t cap = b->rcap ? b->rcap * 2 : 64;
    msgpack_sbuffer *g = realloc(b->reports, cap * sizeof *g);
    if (!g)
      return -1;
    b->reports = g;
    b->rcap = cap;
  }
  return 0;
}

/* One line into b: its answer, and its report when it is one. */
void
edge_sock_line_parse(edge_sock_batch *b, const char *line, size_t len,
                     edge_sock_log_fn log, void *ud) {
  json_error_t err;
  json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
  edge_sock_line *l = &b->lines[b->nlines++];
  *l = (edge_sock_line){NULL, 0};
  if (!o || !json_is_object(o))
    l->why = "not a JSON object";
  else if (json_is_string(json_object_get(o, "type")) &&
           !strcmp(json_string_value(json_object_get(o, "type")), "log")) {
    const char *text = json_string_value(json_object_get(o, "text"));
    const char *st = json_string_value(json_object_get(o, "stream"));
    if (!text)
      l->why = "a log needs text";
    else
      log(ud, st && !strcmp(st, "stderr") ? "stderr" : "stdout", text,
          json_string_length(json_object_get(o, "text")));
  } else {
    msgpack_sbuffer *sb = &b->reports[b->nreports];
    msgpack_sbuffer_init(sb);
    if ((l->why = run_report(o, sb)))
      msgpack_sbuffer_destroy(sb);
    else {
      l->report = 1;
      b->nreports++;
    }
  }
  json_decref(o);
}

void
edge_sock_batch_clear(edge_sock_batch *b) {
  for (size_t i = 0; i < b->nreports; i++)
    msgpack_sbuffer_destroy(&b->reports[i]);
  b->nlines = b->nreports = 0;
}
