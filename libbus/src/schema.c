/*
 * schema.c - validation of msgpack objects against the tables generated
 * from schema/schema.yaml.
 *
 * The walk is table-driven and recursive over the schema, not over the
 * input: only struct, array and map types recurse, and the schema has no
 * cycles, so the depth is bounded by schema.yaml whatever the input holds.
 * Every problem is reported (the first max stored) with its path; counts
 * are checked before items are visited, so an oversized array is one
 * problem, not a million. Work is linear in the object except duplicate-key
 * checks in maps, which are quadratic in at most max_items (a few hundred).
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"
#include "schema-int.h"

/*
 * The path is kept as a stack of segments (a key, or an array index) and
 * spelled out only when a problem is reported, so a valid object costs no
 * formatting at all.
 */
#define MAX_SEGS 32

typedef struct seg {
  const char *key; /* NULL: an index */
  uint32_t len;
  uint32_t index;
} seg;

typedef struct walk {
  bus_field_err *errs;
  int max;
  int n;
  int first;
  seg segs[MAX_SEGS];
  size_t depth; /* may exceed MAX_SEGS; deeper segments are not kept */
} walk;

static void check(walk *w, const bus__type *t, const msgpack_object *o);

/* The path spelled out; a path too long for buf keeps its tail, which names
 * the field: "...[3].replicas". */
static const char *
path_text(const walk *w, char *buf, size_t cap) {
  char full[512], key[64];
  size_t used = 0, i, n = w->depth < MAX_SEGS ? w->depth : MAX_SEGS;
  full[0] = 0;
  for (i = 0; i < n && used < sizeof full; i++) {
    const seg *g = &w->segs[i];
    if (g->key)
      used += (size_t)snprintf(full + used, sizeof full - used, "%s%s",
                               used ? "." : "",
                               bus__printable(g->key, g->len, key, sizeof key));
    else
      used += (size_t)snprintf(full + used, sizeof full - used, "[%u]",
                               (unsigned)g->index);
  }
  if (used >= sizeof full)
    used = sizeof full - 1;
  if (used < cap) {
    memcpy(buf, full, used + 1);
    return buf;
  }
  memcpy(buf, "...", 3);
  memcpy(buf + 3, full + used - (cap - 4), cap - 3);
  return buf;
}

static void __attribute__((format(printf, 3, 4)))
report(walk *w, int code, const char *fmt, ...) {
  va_list ap;
  if (w->n < w->max) {
    bus_field_err *e = &w->errs[w->n];
    path_text(w, e->path, sizeof e->path);
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
  }
  if (w->n == 0) {
    char reason[160], path[256];
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    path_text(w, path, sizeof path);
    w->first = BUS_ERR(code, "%s: %s", path[0] ? path : "(top)", reason);
  }
  w->n++;
}

static size_t
push_seg(walk *w, const char *key, size_t len, uint32_t index) {
  size_t mark = w->depth;
  if (w->depth < MAX_SEGS) {
    w->segs[w->depth].key = key;
    w->segs[w->depth].len = (uint32_t)len;
    w->segs[w->depth].index = index;
  }
  w->depth++;
  return mark;
}

static size_t
push_key(walk *w, const char *s, size_t len) {
  return push_seg(w, s ? s : "", len, 0);
}

static size_t
push_index(walk *w, uint32_t i) {
  return push_seg(w, NULL, 0, i);
}

static void
pop(walk *w, size_t mark) {
  w->depth = mark;
}

/* ------------------------------------------------------------ scalars */

static int
utf8_valid(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i], n, cp, k;
    if (c < 0x80) {
      if (c == 0)
        return 0; /* a NUL would cut the string short in C */
      i++;
      continue;
    }
    n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : 0;
    if (n == 0 || c > 0xf4 || len - i <= n)
      return 0;
    cp = c & (0x3f >> n);
    for (k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += n + 1;
  }
  return 1;
}

static int
format_valid(int format, const char *s, size_t len) {
  char buf[80];
  unsigned char addr[16];
  bus_cidr c;
  if (len == 0 || len >= sizeof buf)
    return 0;
  memcpy(buf, s, len);
  buf[len] = 0;
  if (format == BUS__F_IP)
    return !strchr(buf, '/') && (inet_pton(AF_INET, buf, addr) == 1 ||
                                 inet_pton(AF_INET6, buf, addr) == 1);
  return bus_cidr_parse(buf, 0, &c) == 0;
}

static int
in_enum(const bus__type *t, const char *s, size_t len) {
  uint32_t i;
  for (i = 0; i < t->nenums; i++)
    if (len && strlen(t->enums[i]) == len && memcmp(t->enums[i], s, len) == 0)
      return 1;
  return 0;
}

static void
enum_report(walk *w, const bus__type *t) {
  char list[128] = "";
  size_t used = 0;
  uint32_t i;
  for (i = 0; i < t->nenums && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                             i ? ", " : "", t->enums[i]);
  report(w, BUS_EFIELD, "must be one of %s", list);
}

static void
check_string(walk *w, const bus__type *t, const msgpack_object *o) {
  const char *s = o->via.str.ptr;
  size_t len = o->via.str.size;
  if (t->kind == BUS__K_NAME || t->kind == BUS__K_DNAME) {
    if (!bus__name_valid(s, len, t->max_len))
      report(w, BUS_ENAME,
             "must be a name of 1 to %u lowercase letters, digits and '-', "
             "not starting or ending with '-'",
             (unsigned)t->max_len);
  } else if (t->kind == BUS__K_TOKEN) {
    if (!bus__token_valid(s, len, t->max_len))
      report(w, BUS_EFIELD,
             "must be 1 to %u printable ASCII characters without spaces",
             (unsigned)t->max_len);
  } else if (len < t->min_len || len > t->max_len) {
    report(w, BUS_EFIELD, "must be a string of %u to %u bytes",
           (unsigned)t->min_len, (unsigned)t->max_len);
  } else if (!utf8_valid((const unsigned char *)s, len)) {
    report(w, BUS_EFIELD, "must be UTF-8 text without NUL bytes");
  } else if (t->nenums && !in_enum(t, s, len)) {
    enum_report(w, t);
  } else if (t->format != BUS__F_NONE && !format_valid(t->format, s, len)) {
    report(w, BUS_EFIELD, "must be %s",
           t->format == BUS__F_IP ? "an IP address"
                                  : "a CIDR like 10.0.0.0/16 or fd00::/64");
  }
}

static void
check_int(walk *w, const bus__type *t, const msgpack_object *o) {
  int ok;
  if (t->kind == BUS__K_UINT)
    ok = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 >= t->umin &&
         o->via.u64 <= t->umax;
  else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    ok = o->via.i64 >= t->imin && o->via.i64 <= t->imax;
  else
    ok = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
         o->via.u64 <= INT64_MAX && (int64_t)o->via.u64 >= t->imin &&
         (int64_t)o->via.u64 <= t->imax;
  if (ok)
    return;
  if (t->kind == BUS__K_UINT)
    report(w, BUS_EFIELD, "must be an integer from %llu to %llu",
           (unsigned long long)t->umin, (unsigned long long)t->umax);
  else
    report(w, BUS_EFIELD, "must be an integer from %lld to %lld",
           (long long)t->imin, (long long)t->imax);
}

static int
is_int(const msgpack_object *o) {
  return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
         o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}

/* Numbers are finite: NaN and infinities have no JSON form and compare
 * unequal to themselves, so views and replies could not agree on them. */
static int
is_float(const msgpack_object *o) {
  return ((o->type == MSGPACK_OBJECT_FLOAT32 ||
           o->type == MSGPACK_OBJECT_FLOAT64) &&
          isfinite(o->via.f64)) ||
         is_int(o);
}

/* --------------------------------------------------------- containers */

static int
cmp_field(const void *key, const void *elem) {
  const msgpack_object_str *k = key;
  const bus__field *f = elem;
  size_t n = k->size < f->len ? k->size : f->len;
  int c = n ? memcmp(k->ptr, f->name, n) : 0; /* ptr is NULL for "" */
  if (c)
    return c;
  return k->size < f->len ? -1 : k->size > f->len;
}

static void
check_struct(walk *w, const bus__type *t, const msgpack_object *o) {
  uint64_t seen = 0;
  uint32_t i;
  char name[64];
  for (i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    const bus__field *f;
    size_t mark, idx;
    if (kv->key.type != MSGPACK_OBJECT_STR) {
      report(w, BUS_EFIELD, "has a key that is not a string");
      continue;
    }
    f = bsearch(&kv->key.via.str, t->fields, t->nfields, sizeof *f, cmp_field);
    mark = push_key(w, kv->key.via.str.ptr, kv->key.via.str.size);
    idx = f ? (size_t)(f - t->fields) : 0;
    if (!f)
      report(w, BUS_EFIELD, "unknown field '%s'",
             bus__printable(kv->key.via.str.ptr, kv->key.via.str.size, name,
                            sizeof name));
    else if (seen & (UINT64_C(1) << idx))
      report(w, BUS_EFIELD, "given twice");
    else {
      seen |= UINT64_C(1) << idx;
      check(w, f->type, &kv->val);
    }
    pop(w, mark);
  }
  for (i = 0; i < t->nfields; i++) {
    if (t->fields[i].required && !(seen & (UINT64_C(1) << i))) {
      size_t mark = push_key(w, t->fields[i].name, t->fields[i].len);
      report(w, BUS_EMISSING, "is required");
      pop(w, mark);
    }
  }
}

static int
check_count(walk *w, const bus__type *t, uint32_t n) {
  if (n >= t->min_items && n <= t->max_items)
    return 1;
  report(w, BUS_EFIELD, "must have %u to %u items", (unsigned)t->min_items,
         (unsigned)t->max_items);
  return 0;
}

static void
check_array(walk *w, const bus__type *t, const msgpack_object *o) {
  uint32_t i;
  if (!check_count(w, t, o->via.array.size))
    return;
  for (i = 0; i < o->via.array.size; i++) {
    size_t mark = push_index(w, i);
    check(w, t->elem, &o->via.array.ptr[i]);
    pop(w, mark);
  }
}

static int
is_scalar(const msgpack_object *o) {
  return o->type == MSGPACK_OBJECT_NIL || o->type == MSGPACK_OBJECT_BOOLEAN ||
         is_float(o) ||
         (o->type == MSGPACK_OBJECT_STR && o->via.str.size <= 1024 &&
          utf8_valid((const unsigned char *)o->via.str.ptr, o->via.str.size));
}

static int
dup_key(const msgpack_object *o, uint32_t i) {
  const msgpack_object_str *k = &o->via.map.ptr[i].key.via.str;
  uint32_t j;
  for (j = 0; j < i; j++) {
    const msgpack_object_str *p = &o->via.map.ptr[j].key.via.str;
    if (p->size == k->size &&
        (!k->size || memcmp(p->ptr, k->ptr, k->size) == 0))
      return 1;
  }
  return 0;
}

/* A map of string keys: to t->elem values, or to scalars (values). */
static void
check_map(walk *w, const bus__type *t, const msgpack_object *o) {
  uint32_t i;
  if (!check_count(w, t, o->via.map.size))
    return;
  for (i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    size_t mark;
    if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size == 0 ||
        kv->key.via.str.size > t->max_len ||
        !utf8_valid((const unsigned char *)kv->key.via.str.ptr,
                    kv->key.via.str.size)) {
      report(w, BUS_EFIELD, "keys must be UTF-8 strings of 1 to %u bytes",
             (unsigned)t->max_len);
      continue;
    }
    mark = push_key(w, kv->key.via.str.ptr, kv->key.via.str.size);
    if (dup_key(o, i))
      report(w, BUS_EFIELD, "given twice");
    else if (t->kind == BUS__K_MAP)
      check(w, t->elem, &kv->val);
    else if (!is_scalar(&kv->val))
      report(w, BUS_EFIELD,
             "must be a finite number, a bool, nil or a string of at most 1024 "
             "bytes");
    pop(w, mark);
  }
}

static const char *
kind_text(int kind) {
  switch (kind) {
  case BUS__K_INT:
  case BUS__K_UINT:
    return "an integer";
  case BUS__K_BOOL:
    return "a bool";
  case BUS__K_FLOAT:
    return "a finite number";
  case BUS__K_ARRAY:
    return "an array";
  case BUS__K_STRUCT:
  case BUS__K_MAP:
  case BUS__K_VALUES:
    return "a map";
  default:
    return "a string";
  }
}

static int
type_matches(int kind, const msgpack_object *o) {
  switch (kind) {
  case BUS__K_INT:
  case BUS__K_UINT:
    return is_int(o);
  case BUS__K_BOOL:
    return o->type == MSGPACK_OBJECT_BOOLEAN;
  case BUS__K_FLOAT:
    return is_float(o);
  case BUS__K_ARRAY:
    return o->type == MSGPACK_OBJECT_ARRAY;
  case BUS__K_STRUCT:
  case BUS__K_MAP:
  case BUS__K_VALUES:
    return o->type == MSGPACK_OBJECT_MAP;
  case BUS__K_ANY:
    return 1;
  default:
    return o->type == MSGPACK_OBJECT_STR;
  }
}

static void
check(walk *w, const bus__type *t, const msgpack_object *o) {
  if (!type_matches(t->kind, o)) {
    report(w,
           t->kind == BUS__K_NAME || t->kind == BUS__K_DNAME ? BUS_ENAME
                                                             : BUS_EFIELD,
           "must be %s", kind_text(t->kind));
    return;
  }
  switch (t->kind) {
  case BUS__K_INT:
  case BUS__K_UINT:
    check_int(w, t, o);
    break;
  case BUS__K_STRUCT:
    check_struct(w, t, o);
    break;
  case BUS__K_ARRAY:
    check_array(w, t, o);
    break;
  case BUS__K_MAP:
  case BUS__K_VALUES:
    check_map(w, t, o);
    break;
  case BUS__K_STRING:
  case BUS__K_TOKEN:
  case BUS__K_NAME:
  case BUS__K_DNAME:
    check_string(w, t, o);
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------- public */

int
bus__schema_walk(const bus__type *t, const char *path,
                 const msgpack_object *obj, bus_field_err *errs, int max,
                 int *n) {
  walk w;
  w.errs = errs;
  w.max = errs ? max : 0;
  w.n = 0;
  w.first = 0;
  w.depth = 0;
  if (path && *path)
    push_key(&w, path, strlen(path));
  check(&w, t, obj);
  if (w.n > 1) {
    char first[400];
    snprintf(first, sizeof first, "%s", bus_last_error());
    BUS_ERR(w.first, "%s (and %d more)", first, w.n - 1);
  }
  if (n)
    *n = w.n;
  return w.first;
}

static int
cmp_entry(const void *key, const void *elem) {
  const msgpack_object_str *k = key;
  const char *name = ((const bus__schema_entry *)elem)->name;
  size_t len = strlen(name), n = k->size < len ? k->size : len;
  int c = n ? memcmp(k->ptr, name, n) : 0;
  if (c)
    return c;
  return k->size < len ? -1 : k->size > len;
}

const bus__schema_entry *
bus__schema_event(const char *s, size_t len) {
  msgpack_object_str k;
  k.ptr = s;
  k.size = (uint32_t)len;
  if (len > 64)
    return NULL;
  return bsearch(&k, bus__schema_events, bus__schema_nevents,
                 sizeof *bus__schema_events, cmp_entry);
}

static const bus__schema_entry *
resource(const char *s) {
  msgpack_object_str k;
  size_t len = strnlen(s, 65);
  k.ptr = s;
  k.size = (uint32_t)len;
  if (len > 64)
    return NULL;
  return bsearch(&k, bus__schema_resources, bus__schema_nresources,
                 sizeof *bus__schema_resources, cmp_entry);
}

int
bus_schema_has_type(const char *type) {
  return type && bus__schema_event(type, strnlen(type, 65)) != NULL;
}

int
bus_schema_check(const char *name, const msgpack_object *obj,
                 bus_field_err *errs, int max, int *n) {
  const bus__schema_entry *e;
  const char *prefix = "data";
  if (n)
    *n = 0;
  if (!name || !obj)
    return BUS_ERR(BUS_EINVAL, "bus_schema_check: name and obj are required");
  e = bus__schema_event(name, strnlen(name, 65));
  if (!e) {
    e = resource(name);
    prefix = "";
  }
  if (!e) {
    char buf[72];
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "unknown event type or resource '%s'",
                   bus__printable(name, strnlen(name, 65), buf, sizeof buf));
  }
  return bus__schema_walk(e->type, prefix, obj, errs, max, n);
}
