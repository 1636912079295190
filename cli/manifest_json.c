/*
 * manifest_json.c - the JSON front end: one object, an array of objects,
 * or several top-level objects one after the other, read with jansson
 * (duplicate keys refused) and copied into the value of
 * manifest_value.c, within the same depth and key limits as YAML. A JSON
 * value keeps the line its top-level object starts on.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "manifest-int.h"

static lark_mnode *from_json(pctx *p, json_t *j, int line, int depth);

static int
json_children(pctx *p, lark_mnode *n, json_t *j, int line, int depth) {
  if (json_is_object(j)) {
    const char *k;
    json_t *v;
    if (json_object_size(j) > LARK_MANIFEST_MAX_KEYS)
      return mf_fail(p, BUS_ETOO_BIG, p->pos, line,
                     "more than %d keys in one object", LARK_MANIFEST_MAX_KEYS);
    json_object_foreach(j, k, v) {
      lark_mnode *key = mf_str_new(p, k, strlen(k), line);
      lark_mnode *val = key ? from_json(p, v, line, depth + 1) : NULL;
      if (!val || mf_node_add(p, n, key) || mf_node_add(p, n, val))
        return p->rc;
    }
    return 0;
  }
  size_t i;
  json_t *v;
  json_array_foreach(j, i, v) {
    lark_mnode *c = from_json(p, v, line, depth + 1);
    if (!c || mf_node_add(p, n, c))
      return p->rc;
  }
  return 0;
}

static lark_mnode *
from_json(pctx *p, json_t *j, int line, int depth) {
  lark_mnode *n;
  if (depth >= LARK_MANIFEST_MAX_DEPTH) {
    mf_fail(p, BUS_ETOO_BIG, p->pos, line, "nested deeper than %d",
            LARK_MANIFEST_MAX_DEPTH);
    return NULL;
  }
  switch (json_typeof(j)) {
  case JSON_STRING:
    return mf_str_new(p, json_string_value(j), json_string_length(j), line);
  case JSON_OBJECT:
  case JSON_ARRAY:
    n = mf_node_new(p, json_is_object(j) ? MN_MAP : MN_SEQ, line);
    return n && !json_children(p, n, j, line, depth) ? n : NULL;
  case JSON_INTEGER: {
    json_int_t v = json_integer_value(j);
    n = mf_node_new(p, v < 0 ? MN_INT : MN_UINT, line);
    if (n && v < 0)
      n->v.i = v;
    else if (n)
      n->v.u = (uint64_t)v;
    return n;
  }
  case JSON_REAL:
    n = mf_node_new(p, MN_FLOAT, line);
    if (n)
      n->v.f = json_real_value(j);
    return n;
  case JSON_TRUE:
  case JSON_FALSE:
    n = mf_node_new(p, MN_BOOL, line);
    if (n)
      n->v.b = json_is_true(j);
    return n;
  default:
    return mf_node_new(p, MN_NULL, line);
  }
}

int
mf_parse_json(pctx *p, const char *buf, size_t len) {
  size_t off = 0;
  int line = 1;
  for (;;) {
    for (; off < len && isspace((unsigned char)buf[off]); off++)
      line += buf[off] == '\n';
    if (off >= len)
      return 0;
    json_error_t je;
    int flags = JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES;
    json_t *j = json_loadb(buf + off, len - off, (size_t)flags, &je);
    p->pos++;
    if (!j)
      return mf_fail(p, BUS_EMALFORMED, p->pos,
                     line + (je.line > 0 ? je.line - 1 : 0), "%s", je.text);
    lark_mnode *root = from_json(p, j, line, 0);
    json_decref(j);
    if (!root || p->add_top(p, root, p->pos, 1))
      return p->rc;
    size_t used = (size_t)je.position;
    if (used == 0 || used > len - off)
      return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                     "JSON reader lost its place");
    line = mf_line_of_offset(buf + off, used, used) + line - 1;
    off += used;
  }
}

void
lark_json_pack(const json_t *j, msgpack_packer *pk) {
  switch (json_typeof(j)) {
  case JSON_OBJECT: {
    const char *k;
    json_t *v;
    msgpack_pack_map(pk, (uint32_t)json_object_size(j));
    json_object_foreach((json_t *)j, k, v) {
      msgpack_pack_str_with_body(pk, k, strlen(k));
      lark_json_pack(v, pk);
    }
    return;
  }
  case JSON_ARRAY: {
    size_t i;
    json_t *v;
    msgpack_pack_array(pk, (uint32_t)json_array_size(j));
    json_array_foreach(j, i, v) lark_json_pack(v, pk);
    return;
  }
  case JSON_STRING:
    msgpack_pack_str_with_body(pk, json_string_value(j), json_string_length(j));
    return;
  case JSON_INTEGER:
    msgpack_pack_int64(pk, json_integer_value(j));
    return;
  case JSON_REAL:
    msgpack_pack_double(pk, json_real_value(j));
    return;
  case JSON_TRUE:
    msgpack_pack_true(pk);
    return;
  case JSON_FALSE:
    msgpack_pack_false(pk);
    return;
  default:
    msgpack_pack_nil(pk);
  }
}
