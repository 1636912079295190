/*
 * sockline.c - a line from LARK_SOCKET parsed into its answer and, for a
 * report, its run.reported data (sockline.h; the forms are in
 * edge/README.md); an engine request ("op") only recognised. Anything malformed
 * gets its reason; nothing here trusts the line.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "sockline.h"

enum { VALUES_MAX = 256, VALUE_STR_MAX = 1024 };

const char *
edge_sock_value(const json_t *v, bus_value *out) {
  switch (json_typeof(v)) {
  case JSON_INTEGER:
    out->kind = BUS_V_INT, out->as.i = json_integer_value(v);
    return NULL;
  case JSON_REAL:
    out->kind = BUS_V_FLOAT, out->as.f = json_real_value(v);
    return NULL;
  case JSON_TRUE:
  case JSON_FALSE:
    out->kind = BUS_V_BOOL, out->as.b = json_is_true(v);
    return NULL;
  case JSON_NULL:
    out->kind = BUS_V_NIL;
    return NULL;
  case JSON_STRING:
    if (json_string_length(v) > VALUE_STR_MAX)
      return "a string value is longer than 1024 bytes";
    out->kind = BUS_V_STR;
    out->as.s =
        (bus_str){json_string_value(v), (uint32_t)json_string_length(v)};
    return NULL;
  default:
    return "values must be numbers, strings, booleans or null";
  }
}

/* A report's data {kind, values} into sb, or why not. */
static const char *
run_report(const json_t *o, msgpack_sbuffer *sb) {
  const char *kind = json_string_value(json_object_get(o, "kind"));
  json_t *values = json_object_get(o, "values"), *v;
  if (!kind || !bus_name_valid(kind, 32))
    return "kind must be a name of at most 32 characters ([a-z0-9-])";
  if (values &&
      (!json_is_object(values) || json_object_size(values) > VALUES_MAX))
    return "values must be an object of at most 256 entries";
  bus_value vals[VALUES_MAX];
  bus_ev_run_reported d = {.kind = bus_str_of(kind), .values = {vals, 0}};
  const char *k, *why;
  json_object_foreach(values, k, v) {
    if (!*k || strlen(k) > 253) /* the schema's keys: 1 to 253 bytes */
      return *k ? "a value's name is longer than 253 bytes"
                : "a value's name is empty";
    vals[d.values.n].key = bus_str_of(k);
    if ((why = edge_sock_value(v, &vals[d.values.n])))
      return why;
    d.values.n++;
  }
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  bus_ev_run_reported_write(&pk, &d);
  return NULL;
}

int
edge_sock_batch_grow(edge_sock_batch *b) {
  return bus_grow(&b->lines, b->nlines, &b->lcap, sizeof *b->lines, 64) ||
                 bus_grow(&b->reports, b->nreports, &b->rcap,
                          sizeof *b->reports, 64)
             ? -1
             : 0;
}

/* One line into b: its answer, and its report when it is one. */
void
edge_sock_line_parse(edge_sock_batch *b, const char *line, size_t len,
                     edge_sock_log_fn log, void *ud) {
  json_error_t err;
  json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
  edge_sock_line *l = &b->lines[b->nlines++];
  *l = (edge_sock_line){NULL, 0, 0};
  if (!o || !json_is_object(o))
    l->why = "not a JSON object";
  else if (json_object_get(o, "op"))
    l->op = 1;
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
