/*
 * json.c - msgpack values as JSON text: what `larkctl -o json` prints and
 * what lark-gateway serves, one code for both. Keys sorted when asked,
 * reals in the shortest form that reads back to the same double (jansson
 * alone prints 0.1 as 0.10000000000000001), nesting cut at 64 levels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static json_t *
obj_to_json(const msgpack_object *o, int depth) {
  if (depth > 64)
    return json_null();
  switch (o->type) {
  case MSGPACK_OBJECT_BOOLEAN:
    return json_boolean(o->via.boolean);
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    return json_integer((json_int_t)o->via.u64);
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    return json_integer((json_int_t)o->via.i64);
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    return json_real(o->via.f64);
  case MSGPACK_OBJECT_STR:
    return json_stringn_nocheck(o->via.str.ptr, o->via.str.size);
  case MSGPACK_OBJECT_ARRAY: {
    json_t *a = json_array();
    for (uint32_t i = 0; i < o->via.array.size; i++)
      json_array_append_new(a, obj_to_json(&o->via.array.ptr[i], depth + 1));
    return a;
  }
  case MSGPACK_OBJECT_MAP: {
    json_t *m = json_object();
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      const msgpack_object_kv *kv = &o->via.map.ptr[i];
      if (kv->key.type != MSGPACK_OBJECT_STR)
        continue;
      char key[256];
      size_t n = kv->key.via.str.size < 255 ? kv->key.via.str.size : 255;
      memcpy(key, kv->key.via.str.ptr, n);
      key[n] = 0;
      json_object_set_new(m, key, obj_to_json(&kv->val, depth + 1));
    }
    return m;
  }
  default:
    return json_null();
  }
}

/* jansson prints reals with %.17g, so an emitted 0.1 would show as
 * 0.10000000000000001. The first of %.15g, %.16g, %.17g that strtod reads
 * back equal is the shortest exact form; ".0" keeps an integral value a
 * real in JSON. */
void
cli_real_text(double v, char *buf, size_t cap) {
  char b[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, NULL) == v)
      break;
  }
  snprintf(buf, cap, "%s%s", b, strpbrk(b, ".eEn") ? "" : ".0");
}

static void
dump_real(FILE *f, double v) {
  char buf[48];
  cli_real_text(v, buf, sizeof buf);
  fputs(buf, f);
}

/* Strings, integers, true, false, null: as jansson writes them. */
static void
dump_leaf(FILE *f, const json_t *j) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  fputs(s ? s : "null", f);
  free(s);
}

static int
key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void dump_json(FILE *f, const json_t *j, size_t flags);

static void
dump_object(FILE *f, const json_t *j, size_t flags) {
  size_t n = 0, cap = json_object_size(j);
  const char **keys = malloc((cap ? cap : 1) * sizeof *keys);
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)j, k, v) keys[n++] = k;
  if (flags & JSON_SORT_KEYS)
    qsort(keys, n, sizeof *keys, key_cmp);
  fputc('{', f);
  for (size_t i = 0; i < n; i++) {
    json_t *key = json_string(keys[i]);
    fputs(i ? "," : "", f);
    dump_leaf(f, key);
    fputc(':', f);
    dump_json(f, json_object_get(j, keys[i]), flags);
    json_decref(key);
  }
  fputc('}', f);
  free(keys);
}

static void
dump_json(FILE *f, const json_t *j, size_t flags) {
  if (json_is_real(j)) {
    dump_real(f, json_real_value(j));
  } else if (json_is_object(j)) {
    dump_object(f, j, flags);
  } else if (json_is_array(j)) {
    fputc('[', f);
    for (size_t i = 0; i < json_array_size(j); i++) {
      fputs(i ? "," : "", f);
      dump_json(f, json_array_get(j, i), flags);
    }
    fputc(']', f);
  } else {
    dump_leaf(f, j);
  }
}

char *
cli_json_dumps(const json_t *j, size_t flags) {
  char *s = NULL;
  size_t len = 0;
  FILE *f = j ? open_memstream(&s, &len) : NULL;
  if (!f)
    return NULL;
  dump_json(f, j, flags);
  if (fclose(f)) {
    free(s);
    return NULL;
  }
  return s;
}

json_t *
cli_obj_json(const msgpack_object *o) {
  return obj_to_json(o, 0);
}

char *
cli_obj_to_json(const msgpack_object *o) {
  json_t *j = obj_to_json(o, 0);
  char *s = cli_json_dumps(j, JSON_SORT_KEYS);
  json_decref(j);
  return s;
}
