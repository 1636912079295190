/*
 * msgpack_util.c - msgpack helpers: the structural pre-scan of untrusted
 * bytes, a per-thread scratch zone, name and token checks, and the public
 * bus_obj_* lookups.
 *
 * msgpack_unpack trusts the counts it reads: a five-byte array header that
 * claims 2^32 elements makes it ask its zone for ~100 GB before reading
 * one of them. bus__mp_scan walks the bytes first, without allocating,
 * and refuses any count or length larger than the bytes left, and nesting
 * deeper than BUS__MP_MAX_DEPTH (below msgpack-c's own stack of 32). After
 * it passes, the unpacker allocates at most a small multiple of len.
 */
#include <pthread.h>
#include <string.h>

#include "bus-int.h"
#include "schema-int.h"

static uint64_t
be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  size_t i;
  for (i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

/*
 * Classify the header at p: *fixed is the bytes after the header byte that
 * the value itself occupies when known; *lenbytes the size of a length or
 * count field that follows; *what is 0 for a scalar, 1 for bytes (str, bin,
 * ext), 2 for an array, 3 for a map. Returns 0, or -1 for the unused 0xc1.
 */
static int
classify(uint8_t b, size_t *fixed, size_t *lenbytes, int *what,
         uint64_t *count) {
  static const uint8_t fixext[] = {2, 3, 5, 9, 17};
  *fixed = 0, *lenbytes = 0, *what = 0, *count = 0;
  if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3 && b != 0xc1))
    return 0;
  if (b >= 0x80 && b <= 0x8f)
    return *what = 3, *count = b & 0x0f, 0;
  if (b >= 0x90 && b <= 0x9f)
    return *what = 2, *count = b & 0x0f, 0;
  if (b >= 0xa0 && b <= 0xbf)
    return *what = 1, *count = b & 0x1f, 0;
  switch (b) {
  case 0xc4:
  case 0xd9:
    return *what = 1, *lenbytes = 1, 0;
  case 0xc5:
  case 0xda:
    return *what = 1, *lenbytes = 2, 0;
  case 0xc6:
  case 0xdb:
    return *what = 1, *lenbytes = 4, 0;
  case 0xc7:
    return *what = 1, *lenbytes = 1, *fixed = 1, 0;
  case 0xc8:
    return *what = 1, *lenbytes = 2, *fixed = 1, 0;
  case 0xc9:
    return *what = 1, *lenbytes = 4, *fixed = 1, 0;
  case 0xca:
  case 0xce:
  case 0xd2:
    return *fixed = 4, 0;
  case 0xcb:
  case 0xcf:
  case 0xd3:
    return *fixed = 8, 0;
  case 0xcc:
  case 0xd0:
    return *fixed = 1, 0;
  case 0xcd:
  case 0xd1:
    return *fixed = 2, 0;
  case 0xd4:
  case 0xd5:
  case 0xd6:
  case 0xd7:
  case 0xd8:
    return *fixed = fixext[b - 0xd4], 0;
  case 0xdc:
    return *what = 2, *lenbytes = 2, 0;
  case 0xdd:
    return *what = 2, *lenbytes = 4, 0;
  case 0xde:
    return *what = 3, *lenbytes = 2, 0;
  case 0xdf:
    return *what = 3, *lenbytes = 4, 0;
  default:
    return -1;
  }
}

/* Skip one value's own bytes at *pos; containers report their item count
 * (a map's is pairs * 2) in *items. */
static int
scan_one(const uint8_t *p, size_t len, size_t *pos, uint64_t *items) {
  size_t fixed, lenbytes, left;
  int what;
  uint64_t count;
  if (classify(p[*pos], &fixed, &lenbytes, &what, &count) < 0)
    return BUS_ERR(BUS_EMALFORMED, "invalid msgpack byte 0xc1 at %zu", *pos);
  (*pos)++;
  left = len - *pos;
  if (lenbytes > left)
    return BUS_ERR(BUS_EMALFORMED, "truncated msgpack at %zu", *pos);
  if (lenbytes)
    count = be(p + *pos, lenbytes);
  *pos += lenbytes;
  left -= lenbytes;
  *items = 0;
  if (what == 2 || what == 3) {
    *items = what == 3 ? count * 2 : count;
    if (*items > left)
      return BUS_ERR(BUS_EMALFORMED,
                     "msgpack count %llu exceeds the bytes left",
                     (unsigned long long)count);
    return 0;
  }
  if (what == 1)
    fixed += count;
  if (fixed > left)
    return BUS_ERR(BUS_EMALFORMED, "truncated msgpack at %zu", *pos);
  *pos += fixed;
  return 0;
}

int
bus__mp_scan(const void *buf, size_t len) {
  const uint8_t *p = buf;
  uint64_t need[BUS__MP_MAX_DEPTH + 1];
  size_t pos = 0;
  int d = 0, rc;
  need[0] = 1;
  while (d >= 0) {
    uint64_t items = 0;
    if (need[d] == 0) {
      d--;
      continue;
    }
    need[d]--;
    if (pos >= len)
      return BUS_ERR(BUS_EMALFORMED, "truncated msgpack at %zu", pos);
    if ((rc = scan_one(p, len, &pos, &items)) < 0)
      return rc;
    if (items == 0)
      continue;
    if (d == BUS__MP_MAX_DEPTH)
      return BUS_ERR(BUS_EMALFORMED, "msgpack nested deeper than %d",
                     BUS__MP_MAX_DEPTH);
    need[++d] = items;
  }
  if (pos != len)
    return BUS_ERR(BUS_EMALFORMED, "%zu trailing bytes after the event",
                   len - pos);
  return 0;
}

/* ----------------------------------------------------------- scratch */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void
scratch_free(void *z) {
  msgpack_zone_free(z);
}

static void
scratch_init(void) {
  scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

msgpack_zone *
bus__scratch_zone(void) {
  msgpack_zone *z;
  pthread_once(&scratch_once, scratch_init);
  if (!scratch_ok)
    return NULL;
  z = pthread_getspecific(scratch_key);
  if (z) {
    msgpack_zone_clear(z);
    return z;
  }
  z = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
  if (z && pthread_setspecific(scratch_key, z) != 0) {
    msgpack_zone_free(z);
    z = NULL;
  }
  return z;
}

/* ------------------------------------------------------------- names */

int
bus__name_valid(const char *s, size_t len, size_t max) {
  size_t i;
  if (!s || len == 0 || len > max || s[0] == '-' || s[len - 1] == '-')
    return 0;
  for (i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return 0;
  }
  return 1;
}

int
bus_name_valid(const char *s, size_t max) {
  return s && bus__name_valid(s, strnlen(s, max + 1), max);
}

int
bus__token_valid(const char *s, size_t len, size_t max) {
  size_t i;
  if (!s || len == 0 || len > max)
    return 0;
  for (i = 0; i < len; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
      return 0;
  return 1;
}

const char *
bus__printable(const char *s, size_t len, char *buf, size_t cap) {
  size_t i, n = len < cap - 1 ? len : cap - 1;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  buf[n] = 0;
  if (len > n && n >= 3)
    memcpy(buf + n - 3, "...", 3);
  return buf;
}

/* ----------------------------------------------------------- bus_obj */

const msgpack_object *
bus_obj_get(const msgpack_object *obj, const char *key) {
  size_t klen, i;
  if (!obj || !key || obj->type != MSGPACK_OBJECT_MAP)
    return NULL;
  klen = strlen(key);
  for (i = 0; i < obj->via.map.size; i++) {
    const msgpack_object *k = &obj->via.map.ptr[i].key;
    if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == klen &&
        (klen == 0 || memcmp(k->via.str.ptr, key, klen) == 0))
      return &obj->via.map.ptr[i].val;
  }
  return NULL;
}

const char *
bus_obj_str(const msgpack_object *obj, const char *key, char *buf, size_t cap) {
  const msgpack_object *v = bus_obj_get(obj, key);
  size_t n;
  if (!v || v->type != MSGPACK_OBJECT_STR || !buf || cap == 0)
    return NULL;
  n = v->via.str.size < cap - 1 ? v->via.str.size : cap - 1;
  if (n)
    memcpy(buf, v->via.str.ptr, n);
  buf[n] = 0;
  return buf;
}

int64_t
bus_obj_int(const msgpack_object *obj, const char *key, int64_t def) {
  const msgpack_object *v = bus_obj_get(obj, key);
  if (!v)
    return def;
  if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    return v->via.i64;
  if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX)
    return (int64_t)v->via.u64;
  return def;
}
