/*
 * typed_fill.c - the field types every generated event type shares:
 * unpacking a checked msgpack object into lists, maps, values and raw
 * bytes from a zone, packing them back, subjects built from the schema's
 * patterns, and bus_str (typed-int.h, bus.h "typed data").
 */
#include <math.h>
#include <stdio.h>

#include "bus-int.h"
#include "schema-int.h"
#include "typed-int.h"

/* ------------------------------------------------------------- bus_str */

bus_str
bus_str_of(const char *s) {
  bus_str r = {s, s ? (uint32_t)strlen(s) : 0};
  return r;
}

int
bus_str_eq(bus_str s, const char *c) {
  size_t n = c ? strlen(c) : 0;
  return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

char *
bus_str_copy(bus_str s, char *buf, size_t cap) {
  size_t n = s.len;
  if (!cap)
    return buf;
  if (n >= cap)
    n = cap - 1;
  if (n)
    memcpy(buf, s.ptr, n);
  buf[n] = 0;
  return buf;
}

/* ------------------------------------------------------------ unpacking */

double
bus__f64(const msgpack_object *o) {
  if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
    return o->via.f64;
  return o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? (double)o->via.i64
                                                    : (double)o->via.u64;
}

void *
bus__alloc(msgpack_zone *z, uint32_t n, size_t size) {
  if (n == 0)
    return NULL;
  return msgpack_zone_malloc(z, (size_t)n * size);
}

/* out, a { v, n } list, filled with n items from z: item i is set by SET
 * from e, element i of an array or value i of a map. */
#define FILL(T, N, ELEM, SET)                                                  \
  do {                                                                         \
    uint32_t i, n = (N);                                                       \
    T *v = bus__alloc(z, n, sizeof *v);                                        \
    if (n && !v)                                                               \
      return -1;                                                               \
    for (i = 0; i < n; i++) {                                                  \
      const msgpack_object *e = (ELEM);                                        \
      SET;                                                                     \
    }                                                                          \
    out->v = v;                                                                \
    out->n = n;                                                                \
    return 0;                                                                  \
  } while (0)

/* The fill of a list type, each element EXPR of e; of a map type, each
 * value. */
#define FILL_LIST(fn, list_t, T, EXPR)                                         \
  int fn(msgpack_zone *z, const msgpack_object *o, list_t *out) {              \
    FILL(T, o->via.array.size, &o->via.array.ptr[i], v[i] = (EXPR));           \
  }
#define FILL_MAP(fn, map_t, T, EXPR)                                           \
  int fn(msgpack_zone *z, const msgpack_object *o, map_t *out) {               \
    FILL(T, o->via.map.size, &o->via.map.ptr[i].val,                           \
         (v[i].key = bus__str(&o->via.map.ptr[i].key), v[i].val = (EXPR)));    \
  }

FILL_LIST(bus__fill_strs, bus_str_list, bus_str, bus__str(e))
FILL_LIST(bus__fill_u64s, bus_u64_list, uint64_t, e->via.u64)
FILL_LIST(bus__fill_i64s, bus_i64_list, int64_t, bus__i64(e))
FILL_MAP(bus__fill_str_map, bus_str_map, bus_str_kv, bus__str(e))
FILL_MAP(bus__fill_u64_map, bus_u64_map, bus_u64_kv, e->via.u64)

static void
value_of(const msgpack_object *o, bus_value *v) {
  switch (o->type) {
  case MSGPACK_OBJECT_BOOLEAN:
    v->kind = BUS_V_BOOL, v->as.b = o->via.boolean;
    break;
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    v->kind = BUS_V_INT, v->as.i = o->via.i64;
    break;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    if (o->via.u64 > INT64_MAX)
      v->kind = BUS_V_UINT, v->as.u = o->via.u64;
    else
      v->kind = BUS_V_INT, v->as.i = (int64_t)o->via.u64;
    break;
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    v->kind = BUS_V_FLOAT, v->as.f = o->via.f64;
    break;
  case MSGPACK_OBJECT_STR:
    v->kind = BUS_V_STR, v->as.s = bus__str(o);
    break;
  default:
    v->kind = BUS_V_NIL;
  }
}

int
bus__fill_values(msgpack_zone *z, const msgpack_object *o, bus_values *out) {
  uint32_t i, n = o->via.map.size;
  bus_value *v = bus__alloc(z, n, sizeof *v);
  if (n && !v)
    return -1;
  for (i = 0; i < n; i++) {
    memset(&v[i], 0, sizeof v[i]);
    v[i].key = bus__str(&o->via.map.ptr[i].key);
    value_of(&o->via.map.ptr[i].val, &v[i]);
  }
  out->v = v;
  out->n = n;
  return 0;
}

/* msgpack-c keeps no byte offsets, so an `any` is packed again into z. */
int
bus__fill_raw(msgpack_zone *z, const msgpack_object *o, bus_raw *out) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  void *p;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  if (msgpack_pack_object(&pk, *o) != 0 ||
      !(p = msgpack_zone_malloc_no_align(z, sb.size ? sb.size : 1))) {
    msgpack_sbuffer_destroy(&sb);
    return -1;
  }
  memcpy(p, sb.data, sb.size);
  out->mp = p;
  out->len = sb.size;
  msgpack_sbuffer_destroy(&sb);
  return 0;
}

/* -------------------------------------------------------------- packing */

int
bus__pack_key(msgpack_packer *pk, const char *name, uint32_t n) {
  return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, name, n);
}

int
bus__pack_bstr(msgpack_packer *pk, bus_str s) {
  return msgpack_pack_str(pk, s.len) ||
         (s.len && msgpack_pack_str_body(pk, s.ptr, s.len));
}

int
bus__pack_bool(msgpack_packer *pk, bool b) {
  return b ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

/* An array: its length, then each element. */
#define PACK_LIST(fn, list_t, each)                                            \
  int fn(msgpack_packer *pk, const list_t *l) {                                \
    int bad = msgpack_pack_array(pk, l->n);                                    \
    for (uint32_t i = 0; i < l->n; i++)                                        \
      bad |= each(pk, l->v[i]);                                                \
    return bad;                                                                \
  }

/* A map: its size, then each key and value. */
#define PACK_MAP(fn, map_t, each)                                              \
  int fn(msgpack_packer *pk, const map_t *m) {                                 \
    int bad = msgpack_pack_map(pk, m->n);                                      \
    for (uint32_t i = 0; i < m->n; i++)                                        \
      bad |= bus__pack_bstr(pk, m->v[i].key) || each(pk, m->v[i].val);         \
    return bad;                                                                \
  }

PACK_LIST(bus__pack_strs, bus_str_list, bus__pack_bstr)
PACK_LIST(bus__pack_u64s, bus_u64_list, msgpack_pack_uint64)
PACK_LIST(bus__pack_i64s, bus_i64_list, msgpack_pack_int64)
PACK_MAP(bus__pack_str_map, bus_str_map, bus__pack_bstr)
PACK_MAP(bus__pack_u64_map, bus_u64_map, msgpack_pack_uint64)

static int
pack_value(msgpack_packer *pk, const bus_value *v) {
  switch (v->kind) {
  case BUS_V_BOOL:
    return bus__pack_bool(pk, v->as.b);
  case BUS_V_INT:
    return msgpack_pack_int64(pk, v->as.i);
  case BUS_V_UINT:
    return msgpack_pack_uint64(pk, v->as.u);
  case BUS_V_FLOAT:
    return msgpack_pack_double(pk, v->as.f);
  case BUS_V_STR:
    return bus__pack_bstr(pk, v->as.s);
  default:
    return msgpack_pack_nil(pk);
  }
}

int
bus__pack_values(msgpack_packer *pk, const bus_values *m) {
  int bad = msgpack_pack_map(pk, m->n);
  for (uint32_t i = 0; i < m->n; i++)
    bad |= bus__pack_bstr(pk, m->v[i].key) || pack_value(pk, &m->v[i]);
  return bad;
}

int
bus__pack_raw(msgpack_packer *pk, const bus_raw *r) {
  if (!r->mp || !r->len)
    return msgpack_pack_nil(pk);
  return pk->callback(pk->data, r->mp, r->len);
}

/* ------------------------------------------------------------- subjects */

static int
subj_arg(const char *name, size_t nlen, const char *arg, uint16_t max) {
  char shown[72];
  size_t len = arg ? strlen(arg) : 0;
  if (arg && bus__name_valid(arg, len, max))
    return 0;
  return BUS_ERR(BUS_ENAME,
                 "<%.*s>: '%s' is not a name of 1 to %u lowercase letters, "
                 "digits and '-', not starting or ending with '-'",
                 (int)nlen, name,
                 arg ? bus__printable(arg, len, shown, sizeof shown) : "(null)",
                 (unsigned)max);
}

int
bus__subj(char *out, size_t cap, const char *pattern, const char *const *args,
          const uint16_t *max, int n) {
  size_t used = 0;
  int i = 0, rc;
  if (!out || !cap)
    return BUS_ERR(BUS_EINVAL, "subject: no room for %s", pattern);
  out[0] = 0;
  for (const char *p = pattern; *p;) {
    const char *piece = p, *end;
    size_t len;
    if (*p == '<') {
      end = strchr(p, '>');
      if (i >= n)
        return BUS_ERR(BUS_EINVAL, "subject %s: too few arguments", pattern);
      rc = subj_arg(p + 1, (size_t)(end - p - 1), args[i], max[i]);
      if (rc < 0) {
        out[0] = 0;
        return rc;
      }
      piece = args[i++];
      len = strlen(piece);
      p = end + 1;
    } else {
      end = strchr(p, '<');
      len = end ? (size_t)(end - p) : strlen(p);
      p += len;
    }
    if (used + len >= cap) {
      out[0] = 0;
      return BUS_ERR(BUS_EINVAL, "subject %s: more than %zu bytes", pattern,
                     cap - 1);
    }
    memcpy(out + used, piece, len);
    out[used += len] = 0;
  }
  return 0;
}
