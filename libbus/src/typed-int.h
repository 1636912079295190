/*
 * typed-int.h - what the generated event types (bus_types.c, written by
 * schemagen into the build tree) call in libbus: a descriptor per type,
 * and the fill and pack helpers for the field types every event shares
 * (typed_fill.c). The generated code fills only data the schema tables
 * have already passed, so the fill helpers check nothing but memory.
 */
#ifndef LARK_TYPED_INT_H
#define LARK_TYPED_INT_H

#include <string.h>

#include <msgpack.h>

#include "bus.h"

/* One event type: its struct's size, and its generated fill and write. */
typedef struct bus__tdesc {
  size_t size;
  int (*fill)(msgpack_zone *z, const msgpack_object *o, void *out);
  int (*write)(msgpack_packer *pk, const void *d);
} bus__tdesc;

/* Generated: indexed by bus_type; [0] (BUS_T_UNKNOWN) is empty. */
extern const bus__tdesc bus__tdescs[BUS_T__COUNT];
extern const char *const bus__type_names[BUS_T__COUNT];

/* ------------------------------------------------------------ unpacking */

/* 1 when the key k is the n bytes of name. */
static inline int
bus__key(const msgpack_object_str *k, const char *name, uint32_t n) {
  return k->size == n && memcmp(k->ptr, name, n) == 0;
}

static inline bus_str
bus__str(const msgpack_object *o) {
  bus_str s = {o->via.str.ptr, o->via.str.size};
  return s;
}

/* An int the schema passed: negative, or positive within int64. */
static inline int64_t
bus__i64(const msgpack_object *o) {
  return o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? o->via.i64
                                                    : (int64_t)o->via.u64;
}

/* A float the schema passed: a float, or an integer. */
double bus__f64(const msgpack_object *o);

/* n items of size bytes from z; NULL for n == 0 or out of memory. */
void *bus__alloc(msgpack_zone *z, uint32_t n, size_t size);

/* Each returns 0, or -1 when out of memory. */
int bus__fill_strs(msgpack_zone *z, const msgpack_object *o, bus_str_list *out);
int bus__fill_u64s(msgpack_zone *z, const msgpack_object *o, bus_u64_list *out);
int bus__fill_i64s(msgpack_zone *z, const msgpack_object *o, bus_i64_list *out);
int bus__fill_str_map(msgpack_zone *z, const msgpack_object *o,
                      bus_str_map *out);
int bus__fill_u64_map(msgpack_zone *z, const msgpack_object *o,
                      bus_u64_map *out);
int bus__fill_values(msgpack_zone *z, const msgpack_object *o, bus_values *out);
int bus__fill_raw(msgpack_zone *z, const msgpack_object *o, bus_raw *out);

/* -------------------------------------------------------------- packing */

/* Each returns 0, or non-zero when the packer's write failed. */
int bus__pack_key(msgpack_packer *pk, const char *name, uint32_t n);
int bus__pack_bstr(msgpack_packer *pk, bus_str s);
int bus__pack_bool(msgpack_packer *pk, bool b);
int bus__pack_strs(msgpack_packer *pk, const bus_str_list *l);
int bus__pack_u64s(msgpack_packer *pk, const bus_u64_list *l);
int bus__pack_i64s(msgpack_packer *pk, const bus_i64_list *l);
int bus__pack_str_map(msgpack_packer *pk, const bus_str_map *m);
int bus__pack_u64_map(msgpack_packer *pk, const bus_u64_map *m);
int bus__pack_values(msgpack_packer *pk, const bus_values *m);
int bus__pack_raw(msgpack_packer *pk, const bus_raw *r);

/* For codec.c: ev->typed packed as an event's data, and those bytes
 * checked against ev->t's schema. */
int bus__typed_write(msgpack_packer *pk, const bus_event *ev);
int bus__typed_fill(bus_event *ev, msgpack_zone *zone);
int bus__typed_check(const bus_event *ev, const char *mp, size_t len);

/* ------------------------------------------------------------- subjects */

/*
 * pattern ("lark.ev.job.<job>") with its n placeholders replaced by
 * args[i], each a name of at most max[i] characters, into out. 0;
 * BUS_ENAME naming the placeholder when an argument is not such a name;
 * BUS_EINVAL when out is too small. out holds "" on error.
 */
int bus__subj(char *out, size_t cap, const char *pattern,
              const char *const *args, const uint16_t *max, int n);

#endif
