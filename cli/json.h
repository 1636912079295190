/*
 * json.h - msgpack values as JSON text (json.c, library larkjson): shared
 * by larkctl and lark-gateway so both print the same bytes.
 */
#ifndef LARK_JSON_H
#define LARK_JSON_H

#include <stddef.h>

#include <jansson.h>
#include <msgpack.h>

/* The msgpack object as compact JSON, keys sorted; malloc'd, NULL on
 * failure. */
char *cli_obj_to_json(const msgpack_object *o);
/* j as compact JSON like json_dumps (flags: only JSON_SORT_KEYS is read),
 * each real in the shortest form that reads back to the same double;
 * malloc'd, NULL on failure. */
char *cli_json_dumps(const json_t *j, size_t flags);
/* v in the shortest form strtod reads back equal ("0.1", "3.0", "1e-07"). */
void cli_real_text(double v, char *buf, size_t cap);
/* The msgpack object as a jansson value (new reference). */
json_t *cli_obj_json(const msgpack_object *o);

#endif
