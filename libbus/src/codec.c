/*
 * codec.c - the event envelope in msgpack: encode, decode, ids.
 *
 * Both directions validate: the envelope here (its limits come from
 * schema.yaml through schema_gen.h), the data against the type's schema
 * (schema.c). Decode trusts nothing: bus__mp_scan bounds the bytes before
 * msgpack_unpack allocates, the raw bytes are copied into the caller's
 * zone so every pointer of the result lives exactly as long as that zone,
 * and the type string points at the schema table's own (static) name.
 * Encode allocates nothing per event beyond the sbuffer's growth:
 * pre-packed data is checked in a per-thread scratch zone and copied as
 * is. On any failure the caller's event and buffer are left as they were.
 *
 * `via` is the one optional envelope field: written after data only when
 * set, so every event without one has the bytes it always had (the golden
 * logs' digests rest on that), and read back as "" when absent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "bus-int.h"
#include "schema-int.h"
#include "schema_gen.h"
#include "typed-int.h"

_Static_assert(BUS__SCHEMA_VERSION == BUS_SCHEMA_VERSION,
               "schema.yaml's version differs from bus.h's");

enum {
  F_V,
  F_TYPE,
  F_ID,
  F_TS,
  F_ACTOR,
  F_CAUSE,
  F_PREV,
  F_DATA,
  F_VIA, /* optional: the only field past F_REQUIRED */
  F_COUNT
};
enum { F_REQUIRED = F_VIA };

static const char *const env_names[F_COUNT] = {
    "v", "type", "id", "ts", "actor", "cause", "prev", "data", "via"};

/* -------------------------------------------------------- shared checks */

static int
check_type(const char *s, size_t len, const bus__schema_entry **e) {
  char buf[72];
  if (len < BUS__ENV_TYPE_MIN_LEN || len > BUS__ENV_TYPE_MAX_LEN)
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "type: unknown event type '%s'",
                   bus__printable(s, len, buf, sizeof buf));
  *e = bus__schema_event(s, len);
  if (!*e)
    return BUS_ERR(BUS_EUNKNOWN_TYPE, "type: unknown event type '%s'",
                   bus__printable(s, len, buf, sizeof buf));
  return 0;
}

/* id, actor and cause: tokens (cause may be empty). */
static int
check_tokens(const char *id, size_t idlen, const char *actor, size_t alen,
             const char *cause, size_t clen) {
  if (!bus__token_valid(id, idlen, BUS__ENV_ID_MAX_LEN))
    return BUS_ERR(BUS_EFIELD,
                   "id: must be 1 to %d printable ASCII characters without "
                   "spaces",
                   BUS__ENV_ID_MAX_LEN);
  if (!bus__token_valid(actor, alen, BUS__ENV_ACTOR_MAX_LEN))
    return BUS_ERR(BUS_EFIELD,
                   "actor: must be 1 to %d printable ASCII characters "
                   "without spaces",
                   BUS__ENV_ACTOR_MAX_LEN);
  if (clen && !bus__token_valid(cause, clen, BUS__ENV_CAUSE_MAX_LEN))
    return BUS_ERR(BUS_EFIELD,
                   "cause: must be empty or 1 to %d printable ASCII "
                   "characters without spaces",
                   BUS__ENV_CAUSE_MAX_LEN);
  return 0;
}

/* via, when given: a principal's name. */
static int
check_via(const char *via, size_t len) {
  char buf[BUS_NAME_MAX + 1];
  if (len == 0 || len > BUS_NAME_MAX || memchr(via, 0, len))
    return BUS_ERR(BUS_EFIELD, "via: must be a name of 1 to %d characters",
                   BUS_NAME_MAX);
  memcpy(buf, via, len);
  buf[len] = 0;
  if (!bus_name_valid(buf, BUS_NAME_MAX))
    return BUS_ERR(BUS_EFIELD, "via: must be a name ([a-z0-9-])");
  return 0;
}

static int
has_via(const bus_event *ev) {
  return ev->via && ev->via[0];
}

static int
check_data(const bus__schema_entry *e, const msgpack_object *data) {
  if (data->type != MSGPACK_OBJECT_MAP)
    return BUS_ERR(BUS_EFIELD, "data: must be a map");
  return bus__schema_walk(e->type, "data", data, NULL, 0, NULL);
}

/* Unpack and check pre-packed data in the thread's scratch zone. */
static int
check_data_mp(const bus__schema_entry *e, const void *mp, size_t len) {
  msgpack_zone *z;
  msgpack_object obj;
  size_t off = 0;
  int rc;
  if (len > BUS_MAX_PAYLOAD)
    return BUS_ERR(BUS_ETOO_BIG, "data: %zu bytes, more than %d", len,
                   BUS_MAX_PAYLOAD);
  if (len == 0 || (rc = bus__mp_scan(mp, len)) < 0) {
    char why[160];
    snprintf(why, sizeof why, "%s", len ? bus_last_error() : "empty");
    return BUS_ERR(BUS_EFIELD, "data: not one msgpack value (%s)", why);
  }
  if (!(z = bus__scratch_zone()))
    return BUS_ERR(-ENOMEM, "data: out of memory");
  if (msgpack_unpack(mp, len, &off, z, &obj) != MSGPACK_UNPACK_SUCCESS)
    return BUS_ERR(-ENOMEM, "data: out of memory while unpacking");
  return check_data(e, &obj);
}

/* --------------------------------------------------------------- encode */

/* Data packed from ev->typed: neither data_mp nor data given. */
static int
typed_data(const bus_event *ev) {
  return !ev->data_mp && ev->data.type == MSGPACK_OBJECT_NIL && ev->typed;
}

static int
encode_check(const bus_event *ev, const char *type,
             const bus__schema_entry **e) {
  int rc;
  if (!type)
    return BUS_ERR(BUS_EMISSING, "type: is required");
  if (!ev->id)
    return BUS_ERR(BUS_EMISSING, "id: is required");
  if (!ev->actor)
    return BUS_ERR(BUS_EMISSING, "actor: is required");
  if ((rc = check_type(type, strnlen(type, 65), e)) < 0)
    return rc;
  if (typed_data(ev) && ev->t != (bus_type)(*e - bus__schema_events + 1))
    return BUS_ERR(BUS_EINVAL, "type: %s, but typed data of %s", (*e)->name,
                   bus_type_name(ev->t) ? bus_type_name(ev->t) : "no type");
  rc = check_tokens(ev->id, strnlen(ev->id, 65), ev->actor,
                    strnlen(ev->actor, 129), ev->cause ? ev->cause : "",
                    ev->cause ? strnlen(ev->cause, 129) : 0);
  if (rc < 0)
    return rc;
  if (has_via(ev) && (rc = check_via(ev->via, strnlen(ev->via, 65))) < 0)
    return rc;
  if (ev->data_mp)
    return check_data_mp(*e, ev->data_mp, ev->data_mp_len);
  if (typed_data(ev))
    return 0; /* checked once packed */
  if (ev->data.type == MSGPACK_OBJECT_NIL) {
    msgpack_object empty = {MSGPACK_OBJECT_MAP, {.map = {0, NULL}}};
    return check_data(*e, &empty);
  }
  return check_data(*e, &ev->data);
}

static int
pack_key(msgpack_packer *pk, int f) {
  return bus_pack_str(pk, env_names[f]);
}

static int
pack_event(msgpack_packer *pk, const bus_event *ev, const char *type,
           size_t *data_at) {
  int bad = msgpack_pack_map(pk, has_via(ev) ? F_COUNT : F_REQUIRED);
  bad |= pack_key(pk, F_V) || msgpack_pack_uint32(pk, BUS_SCHEMA_VERSION);
  bad |= pack_key(pk, F_TYPE) || bus_pack_str(pk, type);
  bad |= pack_key(pk, F_ID) || bus_pack_str(pk, ev->id);
  bad |= pack_key(pk, F_TS) || msgpack_pack_int64(pk, ev->ts);
  bad |= pack_key(pk, F_ACTOR) || bus_pack_str(pk, ev->actor);
  bad |= pack_key(pk, F_CAUSE) || bus_pack_str(pk, ev->cause ? ev->cause : "");
  bad |= pack_key(pk, F_PREV) || msgpack_pack_uint64(pk, ev->prev);
  bad |= pack_key(pk, F_DATA);
  *data_at = ((msgpack_sbuffer *)pk->data)->size;
  if (typed_data(ev))
    bad |= bus__typed_write(pk, ev);
  else if (ev->data_mp)
    bad |= msgpack_sbuffer_write(pk->data, ev->data_mp, ev->data_mp_len);
  else if (ev->data.type == MSGPACK_OBJECT_NIL)
    bad |= msgpack_pack_map(pk, 0);
  else
    bad |= msgpack_pack_object(pk, ev->data);
  if (has_via(ev))
    bad |= pack_key(pk, F_VIA) || bus_pack_str(pk, ev->via);
  return bad;
}

int
bus_event_encode(const bus_event *ev, msgpack_sbuffer *out) {
  const bus__schema_entry *e;
  msgpack_packer pk;
  size_t start, data_at = 0;
  int rc;
  if (!ev || !out)
    return BUS_ERR(BUS_EINVAL, "bus_event_encode: ev and out are required");
  rc = encode_check(ev, ev->type ? ev->type : bus_type_name(ev->t), &e);
  if (rc < 0)
    return rc;
  start = out->size;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  if (pack_event(&pk, ev, e->name, &data_at)) {
    out->size = start;
    return BUS_ERR(-ENOMEM, "out of memory encoding %s", e->name);
  }
  if (typed_data(ev) &&
      (rc = bus__typed_check(ev, out->data + data_at, out->size - data_at))) {
    out->size = start;
    return rc;
  }
  if (out->size - start > BUS_MAX_PAYLOAD) {
    size_t n = out->size - start;
    out->size = start;
    return BUS_ERR(BUS_ETOO_BIG, "%s event is %zu bytes, more than %d", e->name,
                   n, BUS_MAX_PAYLOAD);
  }
  return 0;
}

/* --------------------------------------------------------------- decode */

static int
env_index(const msgpack_object *k) {
  int i;
  if (k->type != MSGPACK_OBJECT_STR)
    return -1;
  for (i = 0; i < F_COUNT; i++)
    if (k->via.str.size == strlen(env_names[i]) &&
        memcmp(k->via.str.ptr, env_names[i], k->via.str.size) == 0)
      return i;
  return -1;
}

/* Sort the envelope's values into f[]; refuse unknown and repeated keys
 * (after checking v, so a newer event says so rather than "unknown"). */
static int
env_collect(const msgpack_object *map, const msgpack_object *f[F_COUNT]) {
  const msgpack_object *bad = NULL;
  char buf[40];
  uint32_t i;
  for (i = 0; i < map->via.map.size; i++) {
    const msgpack_object_kv *kv = &map->via.map.ptr[i];
    int k = env_index(&kv->key);
    if (k < 0 || f[k])
      bad = bad ? bad : &kv->key;
    else
      f[k] = &kv->val;
  }
  if (f[F_V] && f[F_V]->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
      f[F_V]->via.u64 > BUS_SCHEMA_VERSION)
    return BUS_ERR(BUS_EVERSION, "v: schema version %llu is newer than %d",
                   (unsigned long long)f[F_V]->via.u64, BUS_SCHEMA_VERSION);
  if (bad && bad->type != MSGPACK_OBJECT_STR)
    return BUS_ERR(BUS_EMALFORMED, "envelope has a key that is not a string");
  if (bad)
    return BUS_ERR(
        BUS_EMALFORMED, "envelope field '%s' is unknown or repeated",
        bus__printable(bad->via.str.ptr, bad->via.str.size, buf, sizeof buf));
  for (i = 0; i < F_REQUIRED; i++)
    if (!f[i])
      return BUS_ERR(BUS_EMISSING, "%s: is required", env_names[i]);
  return 0;
}

static int
env_types(const msgpack_object *f[F_COUNT]) {
  static const struct {
    int field;
    msgpack_object_type type;
  } want[] = {{F_V, MSGPACK_OBJECT_POSITIVE_INTEGER},
              {F_TYPE, MSGPACK_OBJECT_STR},
              {F_ID, MSGPACK_OBJECT_STR},
              {F_ACTOR, MSGPACK_OBJECT_STR},
              {F_CAUSE, MSGPACK_OBJECT_STR},
              {F_PREV, MSGPACK_OBJECT_POSITIVE_INTEGER},
              {F_DATA, MSGPACK_OBJECT_MAP}};
  size_t i;
  for (i = 0; i < sizeof want / sizeof want[0]; i++)
    if (f[want[i].field]->type != want[i].type)
      return BUS_ERR(BUS_EMALFORMED, "%s: has the wrong msgpack type",
                     env_names[want[i].field]);
  if (f[F_VIA] && f[F_VIA]->type != MSGPACK_OBJECT_STR)
    return BUS_ERR(BUS_EMALFORMED, "via: has the wrong msgpack type");
  if (f[F_V]->via.u64 == 0)
    return BUS_ERR(BUS_EMALFORMED, "v: must be at least 1");
  if (f[F_TS]->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ||
      (f[F_TS]->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
       f[F_TS]->via.u64 <= INT64_MAX))
    return 0;
  return BUS_ERR(BUS_EMALFORMED, "ts: must be a 64-bit signed integer");
}

static const char *
zone_str(msgpack_zone *zone, const msgpack_object *o) {
  char *s;
  if (o->via.str.size == 0)
    return "";
  s = msgpack_zone_malloc_no_align(zone, o->via.str.size + 1);
  if (!s)
    return NULL;
  memcpy(s, o->via.str.ptr, o->via.str.size);
  s[o->via.str.size] = 0;
  return s;
}

static int
env_fill(const msgpack_object *f[F_COUNT], bus_event *ev, msgpack_zone *zone) {
  const bus__schema_entry *e;
  const msgpack_object_str *id = &f[F_ID]->via.str, *a = &f[F_ACTOR]->via.str,
                           *c = &f[F_CAUSE]->via.str, *t = &f[F_TYPE]->via.str;
  int rc;
  if ((rc = env_types(f)) < 0 || (rc = check_type(t->ptr, t->size, &e)) < 0)
    return rc;
  rc = check_tokens(id->ptr, id->size, a->ptr, a->size, c->ptr, c->size);
  if (rc == 0 && f[F_VIA])
    rc = check_via(f[F_VIA]->via.str.ptr, f[F_VIA]->via.str.size);
  if (rc < 0 || (rc = check_data(e, f[F_DATA])) < 0)
    return rc;
  ev->v = (uint32_t)f[F_V]->via.u64;
  ev->type = e->name;
  ev->ts = f[F_TS]->via.i64;
  ev->prev = f[F_PREV]->via.u64;
  ev->data = *f[F_DATA];
  ev->data_mp = NULL;
  ev->data_mp_len = 0;
  ev->t = (bus_type)(e - bus__schema_events + 1);
  ev->typed = NULL;
  ev->id = zone_str(zone, f[F_ID]);
  ev->actor = zone_str(zone, f[F_ACTOR]);
  ev->cause = zone_str(zone, f[F_CAUSE]);
  ev->via = f[F_VIA] ? zone_str(zone, f[F_VIA]) : "";
  if (!ev->id || !ev->actor || !ev->cause || !ev->via)
    return BUS_ERR(-ENOMEM, "out of memory decoding an event");
  return 0;
}

int
bus_event_decode(const void *buf, size_t len, bus_event *ev,
                 msgpack_zone *zone) {
  const msgpack_object *f[F_COUNT] = {0};
  msgpack_object root;
  bus_event tmp;
  size_t off = 0;
  char *copy;
  int rc;
  if (!ev || !zone || (!buf && len))
    return BUS_ERR(BUS_EINVAL, "bus_event_decode: ev and zone are required");
  if (len > BUS_MAX_PAYLOAD)
    return BUS_ERR(BUS_ETOO_BIG, "event is %zu bytes, more than %d", len,
                   BUS_MAX_PAYLOAD);
  if (len == 0)
    return BUS_ERR(BUS_EMALFORMED, "empty message");
  if ((rc = bus__mp_scan(buf, len)) < 0)
    return rc;
  if (!(copy = msgpack_zone_malloc_no_align(zone, len)))
    return BUS_ERR(-ENOMEM, "out of memory decoding an event");
  memcpy(copy, buf, len);
  if (msgpack_unpack(copy, len, &off, zone, &root) != MSGPACK_UNPACK_SUCCESS)
    return BUS_ERR(-ENOMEM, "out of memory unpacking an event");
  if (root.type != MSGPACK_OBJECT_MAP)
    return BUS_ERR(BUS_EMALFORMED, "an event must be a msgpack map");
  if ((rc = env_collect(&root, f)) < 0)
    return rc;
  tmp = *ev;
  if ((rc = env_fill(f, &tmp, zone)) < 0)
    return rc;
  *ev = tmp;
  return 0;
}

/* ------------------------------------------------------------------ ids */

int
bus_event_kind(const char *type, char *kind, size_t cap) {
  const char *dot = type ? strchr(type, '.') : NULL;
  size_t n = dot ? (size_t)(dot - type) : 0;
  if (kind && cap)
    kind[0] = 0;
  if (!dot || n == 0)
    return BUS_ERR(BUS_EINVAL, "event type '%s' is not <kind>.<verb>",
                   type ? type : "(null)");
  if (!kind || n >= cap)
    return BUS_ERR(BUS_EINVAL, "kind of '%s' does not fit in %zu bytes", type,
                   cap);
  memcpy(kind, type, n);
  kind[n] = 0;
  return 0;
}

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;

static int sodium_status;

static void
sodium_start(void) {
  /* sodium_init fails only when no entropy source exists at all; then
   * randombytes_buf aborts, which no caller could recover from anyway. */
  sodium_status = sodium_init();
}

void
bus_event_new_id(char out[33]) {
  unsigned char raw[16];
  pthread_once(&sodium_once, sodium_start);
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(out, 33, raw, sizeof raw);
}

/*
 * BLAKE2b-128 over a domain tag, the cause, a NUL (ids hold none) and the
 * index in little-endian: stable across hosts and versions of this code.
 */
void
bus_event_derive_id(const char *cause, unsigned index, char out[33]) {
  static const char tag[] = "larkbus derived id v1";
  crypto_generichash_state st;
  unsigned char raw[16], idx[4], nul = 0;
  if (!cause)
    cause = "";
  idx[0] = (unsigned char)index;
  idx[1] = (unsigned char)(index >> 8);
  idx[2] = (unsigned char)(index >> 16);
  idx[3] = (unsigned char)(index >> 24);
  pthread_once(&sodium_once, sodium_start);
  crypto_generichash_init(&st, NULL, 0, sizeof raw);
  crypto_generichash_update(&st, (const unsigned char *)tag, sizeof tag);
  crypto_generichash_update(&st, (const unsigned char *)cause, strlen(cause));
  crypto_generichash_update(&st, &nul, 1);
  crypto_generichash_update(&st, idx, sizeof idx);
  crypto_generichash_final(&st, raw, sizeof raw);
  sodium_bin2hex(out, 33, raw, sizeof raw);
}

int
bus_event_decode_typed(const void *buf, size_t len, bus_event *ev,
                       msgpack_zone *zone) {
  if (!ev || !zone)
    return BUS_ERR(BUS_EINVAL, "bus_event_decode_typed: ev and zone needed");
  bus_event tmp = *ev;
  int rc = bus_event_decode(buf, len, &tmp, zone);
  if (rc >= 0)
    rc = bus__typed_fill(&tmp, zone);
  if (rc < 0)
    return rc;
  *ev = tmp;
  return 0;
}
