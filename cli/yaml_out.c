/*
 * yaml_out.c - -o yaml: the very value -o json prints, as a YAML
 * document, written by libyaml's emitter.
 *
 * Maps are block maps with their keys sorted (as -o json sorts them),
 * lists are block sequences, empty ones [] and {}. Integers, booleans and
 * null are plain scalars; reals take the shortest form that reads back
 * the same double (cli_real_text, as -o json); a string is plain unless
 * a YAML reader would take it for something else (a number, a boolean,
 * null, a date, or empty), then double-quoted.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "cli.h"

#define YTAG "tag:yaml.org,2002:"

/* Whether a reader resolving plain scalars (YAML 1.1 or 1.2) would read s
 * as something other than a string. */
static int
looks_typed(const char *s) {
  static const char *const words[] = {
      "null", "~",    "true",  "false", "yes",  "no", "on", "off", "y",
      "n",    ".inf", "-.inf", "+.inf", ".nan", "=",  "<<", NULL};
  if (!*s)
    return 1;
  for (const char *const *w = words; *w; w++)
    if (!strcasecmp(s, *w))
      return 1;
  char *end;
  strtod(s, &end);
  if (!*end || (!strncmp(s, "0o", 2) && s[2]))
    return 1;
  int date = strlen(s) >= 10 && isdigit((unsigned char)s[0]) && s[4] == '-' &&
             isdigit((unsigned char)s[5]) && s[7] == '-';
  return date || strchr(s, '_') != NULL;
}

static int emit_value(yaml_emitter_t *e, const json_t *j, int depth);

static int
emit_scalar(yaml_emitter_t *e, const char *tag, const char *text, int plain) {
  yaml_event_t ev;
  if (!yaml_scalar_event_initialize(
          &ev, NULL, (yaml_char_t *)tag, (yaml_char_t *)text, (int)strlen(text),
          1, 1,
          plain ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE))
    return -1;
  return yaml_emitter_emit(e, &ev) ? 0 : -1;
}

static int
emit_string(yaml_emitter_t *e, const char *s) {
  return emit_scalar(e, YTAG "str", s, !looks_typed(s));
}

static int
key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
emit_map(yaml_emitter_t *e, const json_t *j, int depth) {
  yaml_event_t ev;
  size_t n = 0, cap = json_object_size(j);
  const char **keys = malloc((cap ? cap : 1) * sizeof *keys);
  const char *k;
  json_t *v;
  if (!keys)
    return -1;
  json_object_foreach((json_t *)j, k, v) keys[n++] = k;
  qsort(keys, n, sizeof *keys, key_cmp);
  int rc = yaml_mapping_start_event_initialize(
               &ev, NULL, (yaml_char_t *)YTAG "map", 1,
               n ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE) &&
                   yaml_emitter_emit(e, &ev)
               ? 0
               : -1;
  for (size_t i = 0; !rc && i < n; i++) {
    rc = emit_string(e, keys[i]);
    if (!rc)
      rc = emit_value(e, json_object_get(j, keys[i]), depth + 1);
  }
  free(keys);
  if (!rc &&
      (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev)))
    rc = -1;
  return rc;
}

static int
emit_list(yaml_emitter_t *e, const json_t *j, int depth) {
  yaml_event_t ev;
  size_t n = json_array_size(j);
  if (!yaml_sequence_start_event_initialize(
          &ev, NULL, (yaml_char_t *)YTAG "seq", 1,
          n ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE) ||
      !yaml_emitter_emit(e, &ev))
    return -1;
  for (size_t i = 0; i < n; i++)
    if (emit_value(e, json_array_get(j, i), depth + 1))
      return -1;
  if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev))
    return -1;
  return 0;
}

static int
emit_value(yaml_emitter_t *e, const json_t *j, int depth) {
  char buf[48];
  if (depth > 64)
    return -1;
  switch (json_typeof(j)) {
  case JSON_OBJECT:
    return emit_map(e, j, depth);
  case JSON_ARRAY:
    return emit_list(e, j, depth);
  case JSON_STRING:
    return emit_string(e, json_string_value(j));
  case JSON_INTEGER:
    snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
    return emit_scalar(e, YTAG "int", buf, 1);
  case JSON_REAL:
    cli_real_text(json_real_value(j), buf, sizeof buf);
    return emit_scalar(e, YTAG "float", buf, 1);
  case JSON_TRUE:
    return emit_scalar(e, YTAG "bool", "true", 1);
  case JSON_FALSE:
    return emit_scalar(e, YTAG "bool", "false", 1);
  default:
    return emit_scalar(e, YTAG "null", "null", 1);
  }
}

static int
write_cb(void *ud, unsigned char *buf, size_t len) {
  return fwrite(buf, 1, len, ud) == len;
}

/* The stream and document around j. */
static int
emit_doc(yaml_emitter_t *e, const json_t *j) {
  yaml_event_t ev;
  if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
      !yaml_emitter_emit(e, &ev) ||
      !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
      !yaml_emitter_emit(e, &ev) || emit_value(e, j, 0) ||
      !yaml_document_end_event_initialize(&ev, 1) ||
      !yaml_emitter_emit(e, &ev) || !yaml_stream_end_event_initialize(&ev) ||
      !yaml_emitter_emit(e, &ev))
    return -1;
  return yaml_emitter_flush(e) ? 0 : -1;
}

char *
cli_yaml_dumps(const json_t *j) {
  char *s = NULL;
  size_t len = 0;
  FILE *f = j ? open_memstream(&s, &len) : NULL;
  yaml_emitter_t e;
  if (!f)
    return NULL;
  if (!yaml_emitter_initialize(&e)) {
    fclose(f);
    free(s);
    return NULL;
  }
  yaml_emitter_set_output(&e, write_cb, f);
  yaml_emitter_set_unicode(&e, 1);
  yaml_emitter_set_width(&e, -1);
  yaml_emitter_set_indent(&e, 2);
  int rc = emit_doc(&e, j);
  yaml_emitter_delete(&e);
  if (fclose(f) || rc) {
    free(s);
    return NULL;
  }
  return s;
}

int
cli_print_doc(const json_t *j, int output) {
  char *s = output == CLI_OUT_YAML ? cli_yaml_dumps(j)
                                   : cli_json_dumps(j, JSON_SORT_KEYS);
  if (!s)
    return cli_fail("output", 0, "cannot write the %s form",
                    output == CLI_OUT_YAML ? "YAML" : "JSON");
  fputs(s, stdout);
  if (output != CLI_OUT_YAML)
    putchar('\n');
  free(s);
  return CLI_OK;
}
