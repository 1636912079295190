/*
 * typed.c - events decoded once into their generated types, packed from
 * them, and applied from a table indexed by type (bus.h "typed events").
 *
 * The schema tables do the checking, with the paths they always report;
 * the generated fill then copies pointers and numbers out of the checked
 * object, so nothing is checked twice. A pack is checked after the bytes
 * are written (the same walk over the same tables), so what a typed
 * struct packs is exactly what a decoder accepts.
 */
#include <errno.h>

#include "bus-int.h"
#include "schema-int.h"
#include "typed-int.h"

_Static_assert(BUS_T_UNKNOWN == 0, "BUS_T_UNKNOWN must be 0");

const char *
bus_type_name(bus_type t) {
  if ((int)t <= BUS_T_UNKNOWN || t >= BUS_T__COUNT)
    return NULL;
  return bus__type_names[t];
}

bus_type
bus_type_of(const char *name) {
  const bus__schema_entry *e;
  if (!name)
    return BUS_T_UNKNOWN;
  e = bus__schema_event(name, strnlen(name, 65));
  return e ? (bus_type)(e - bus__schema_events + 1) : BUS_T_UNKNOWN;
}

size_t
bus_type_size(bus_type t) {
  return bus_type_name(t) ? bus__tdescs[t].size : 0;
}

/* The schema's entry for t; the generated enum follows its order. */
static const bus__type *
schema_of(bus_type t) {
  return bus__schema_events[t - 1].type;
}

int
bus_data_unpack(bus_type t, const msgpack_object *data, msgpack_zone *zone,
                void *out) {
  int rc;
  if (!bus_type_name(t))
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "no event type %d", (int)t);
  if (!data || !zone || !out)
    return BUS_ERR(BUS_EINVAL, "bus_data_unpack: data, zone and out needed");
  if (data->type != MSGPACK_OBJECT_MAP)
    return BUS_ERR(BUS_EFIELD, "data: must be a map");
  if ((rc = bus__schema_walk(schema_of(t), "data", data, NULL, 0, NULL)) < 0)
    return rc;
  memset(out, 0, bus__tdescs[t].size);
  if (bus__tdescs[t].fill(zone, data, out))
    return BUS_ERR(-ENOMEM, "out of memory unpacking %s", bus__type_names[t]);
  return 0;
}

/* Check the one msgpack map at mp against t's schema. */
static int
check_packed(bus_type t, const char *mp, size_t len) {
  msgpack_zone *z = bus__scratch_zone();
  msgpack_object obj;
  size_t off = 0;
  if (len > BUS_MAX_PAYLOAD)
    return BUS_ERR(BUS_ETOO_BIG, "data: %zu bytes, more than %d", len,
                   BUS_MAX_PAYLOAD);
  if (!z || msgpack_unpack(mp, len, &off, z, &obj) != MSGPACK_UNPACK_SUCCESS)
    return BUS_ERR(-ENOMEM, "data: out of memory while checking");
  return bus__schema_walk(schema_of(t), "data", &obj, NULL, 0, NULL);
}

int
bus_data_pack(bus_type t, const void *data, msgpack_sbuffer *out) {
  msgpack_packer pk;
  size_t start;
  int rc;
  if (!bus_type_name(t))
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "no event type %d", (int)t);
  if (!data || !out)
    return BUS_ERR(BUS_EINVAL, "bus_data_pack: data and out are required");
  start = out->size;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  if (bus__tdescs[t].write(&pk, data)) {
    out->size = start;
    return BUS_ERR(-ENOMEM, "out of memory packing %s", bus__type_names[t]);
  }
  rc = check_packed(t, out->data + start, out->size - start);
  if (rc < 0)
    out->size = start;
  return rc;
}

int
bus_event_typed(const bus_event *ev, msgpack_zone *zone, const void **out) {
  void *d;
  int rc;
  if (!ev || !out)
    return BUS_ERR(BUS_EINVAL, "bus_event_typed: ev and out are required");
  *out = NULL;
  if (ev->typed) {
    *out = ev->typed;
    return 0;
  }
  if (!bus_type_name(ev->t))
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "event of no known type");
  if (!zone)
    return BUS_ERR(BUS_EINVAL, "bus_event_typed: a zone is required");
  if (!(d = msgpack_zone_malloc(zone, bus__tdescs[ev->t].size)))
    return BUS_ERR(-ENOMEM, "out of memory unpacking %s", ev->type);
  if ((rc = bus_data_unpack(ev->t, &ev->data, zone, d)) < 0)
    return rc;
  *out = d;
  return 0;
}

/* ev->typed from ev->data, which decode has checked against the schema
 * (codec.c's bus_event_decode_typed): a fill that walks nothing again. */
int
bus__typed_fill(bus_event *ev, msgpack_zone *zone) {
  void *p = msgpack_zone_malloc(zone, bus__tdescs[ev->t].size);
  if (!p)
    return BUS_ERR(-ENOMEM, "out of memory unpacking %s", ev->type);
  memset(p, 0, bus__tdescs[ev->t].size);
  if (bus__tdescs[ev->t].fill(zone, &ev->data, p))
    return BUS_ERR(-ENOMEM, "out of memory unpacking %s", ev->type);
  ev->typed = p;
  return 0;
}

/* Pack ev->typed as the data of an event being encoded (codec.c). */
int
bus__typed_write(msgpack_packer *pk, const bus_event *ev) {
  return bus__tdescs[ev->t].write(pk, ev->typed);
}

int
bus__typed_check(const bus_event *ev, const char *mp, size_t len) {
  return check_packed(ev->t, mp, len);
}

int
bus_apply_dispatch(const bus_apply_table *tab, bus_txn *t, const bus_event *ev,
                   void *ud) {
  bus_apply_fn fn;
  msgpack_zone z;
  const void *d = NULL;
  int rc;
  if (!tab || !ev)
    return BUS_ERR(BUS_EINVAL, "bus_apply_dispatch: tab and ev are required");
  fn = bus_type_name(ev->t) ? tab->on[ev->t] : NULL;
  if (!fn)
    fn = tab->other;
  if (!fn)
    return 0;
  if (ev->typed || !bus_type_name(ev->t))
    return fn(t, ev, ev->typed, ud);
  if (!msgpack_zone_init(&z, 1024))
    return BUS_ERR(-ENOMEM, "out of memory dispatching %s", ev->type);
  rc = bus_event_typed(ev, &z, &d);
  if (rc == 0)
    rc = fn(t, ev, d, ud);
  msgpack_zone_destroy(&z);
  return rc;
}
