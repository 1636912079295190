/*
 * event_json.c - an event as `larkctl tail -o json` prints it, shared with
 * lark-gateway's events feed so both give the same bytes. The envelope's
 * keys keep their order; data is the event's msgpack as JSON with its keys
 * sorted (cli_obj_to_json), read back so the whole dumps as one object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "event_json.h"
#include "json.h"

void
cli_format_time(int64_t ns, char *out, size_t cap) {
  time_t secs = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, cap, "%s.%03dZ", base, (int)((ns / 1000000) % 1000));
}

json_t *
cli_event_json(const bus_tail_msg *m) {
  json_t *o = json_object();
  char when[40];
  if (!o)
    return NULL;
  cli_format_time(m->stored_ns, when, sizeof when);
  json_object_set_new(o, "stream", json_string(m->stream));
  json_object_set_new(o, "seq", json_integer((json_int_t)m->seq));
  json_object_set_new(o, "time", json_string(when));
  json_object_set_new(o, "subject", json_string(m->subject));
  const bus_event *ev = m->ev;
  if (!ev) {
    json_object_set_new(o, "error", json_string(bus_err_name(m->status)));
    return o;
  }
  char *data = cli_obj_to_json(&ev->data);
  json_object_set_new(o, "type", json_string(ev->type));
  json_object_set_new(o, "id", json_string(ev->id));
  json_object_set_new(o, "actor", json_string(ev->actor));
  json_object_set_new(o, "cause", json_string(ev->cause));
  json_object_set_new(o, "prev", json_integer((json_int_t)ev->prev));
  json_object_set_new(o, "data",
                      json_loads(data ? data : "null", JSON_DECODE_ANY, NULL));
  if (ev->via && ev->via[0])
    json_object_set_new(o, "via", json_string(ev->via));
  free(data);
  return o;
}

json_t *
cli_json_text(const char *s, size_t len) {
  json_t *j = json_stringn(s, len);
  if (j)
    return j;
  char *copy = malloc(len + 1);
  if (!copy)
    return json_null();
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    copy[i] = ch >= 0x80 || ch == 0 ? '?' : (char)ch;
  }
  j = json_stringn(copy, len);
  free(copy);
  return j ? j : json_null();
}
