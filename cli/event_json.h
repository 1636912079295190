/*
 * event_json.h - an event as JSON, the one form `larkctl tail -o json`
 * prints and lark-gateway's events feed serves (event_json.c, library
 * larkjson, beside json.c), and a line of text as a JSON string.
 */
#ifndef LARK_EVENT_JSON_H
#define LARK_EVENT_JSON_H

#include <stdint.h>

#include <jansson.h>

#include "bus.h"

/* Format unix ns as RFC 3339 with milliseconds, UTC. */
void cli_format_time(int64_t ns, char *out, size_t cap);

/*
 * {"stream","seq","time","subject","type","id","actor","cause","prev",
 * "data"[,"via"]} in that order (via only when set), data's keys sorted;
 * for a message that did not
 * decode (ev NULL) {"stream","seq","time","subject","error"} with status's
 * name. A new reference, or NULL when out of memory.
 */
json_t *cli_event_json(const bus_tail_msg *m);

/* A line of text as a JSON string; JSON wants UTF-8, so when it is not,
 * every byte outside ASCII (and NUL) becomes '?'. Never NULL. */
json_t *cli_json_text(const char *s, size_t len);

#endif
