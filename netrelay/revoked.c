/*
 * revoked.c - the set of revoked SSH certificates: serial ranges, key
 * ids and key hashes, filled from an OpenSSH KRL or cert.revoked events.
 *
 * A set only grows; an update is a new set swapped in by the owner, so
 * readers never see one half-built. Lookups are linear: the platform
 * revokes few certificates, and a check runs once per session or
 * channel. The KRL reader refuses a section it does not understand
 * rather than skip it, because a skipped section could hide a
 * revocation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "certcheck.h"
#include "relay-int.h"

#define KRL_MAGIC 0x5353484b524c0a00ULL
#define KRL_MAX_FILE (64u << 20)

enum {
  KRL_CERTIFICATES = 1,
  KRL_EXPLICIT_KEY = 2,
  KRL_FINGERPRINT_SHA1 = 3,
  KRL_SIGNATURE = 4,
  KRL_FINGERPRINT_SHA256 = 5,
  KRL_SERIAL_LIST = 0x20,
  KRL_SERIAL_RANGE = 0x21,
  KRL_SERIAL_BITMAP = 0x22,
  KRL_KEY_ID = 0x23,
};

typedef struct range {
  uint64_t lo, hi;
} range;

struct relay_revoked {
  range *r;
  size_t nr, capr;
  char **ids;
  size_t nids, capids;
  uint8_t (*keys)[32];
  size_t nkeys, capkeys;
};

/* Grow an array of n elements of size sz to hold one more. */
static int
grow(void **p, size_t *cap, size_t n, size_t sz) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? *cap * 2 : 16;
  void *q = realloc(*p, c * sz);
  if (!q)
    return -ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

int
relay_revoked_new(relay_revoked **out) {
  *out = calloc(1, sizeof **out);
  return *out ? 0 : -ENOMEM;
}

void
relay_revoked_free(relay_revoked *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nids; i++)
    free(r->ids[i]);
  free(r->ids);
  free(r->r);
  free(r->keys);
  free(r);
}

int
relay_revoked_add_range(relay_revoked *r, uint64_t lo, uint64_t hi) {
  if (lo > hi)
    return BUS_EINVAL;
  if (r->nr && r->r[r->nr - 1].hi != UINT64_MAX &&
      r->r[r->nr - 1].hi + 1 == lo) {
    r->r[r->nr - 1].hi = hi; /* a bitmap's runs arrive in order */
    return 0;
  }
  if (grow((void **)&r->r, &r->capr, r->nr, sizeof *r->r))
    return -ENOMEM;
  r->r[r->nr++] = (range){lo, hi};
  return 0;
}

static int
add_id(relay_revoked *r, const uint8_t *s, size_t n) {
  if (grow((void **)&r->ids, &r->capids, r->nids, sizeof *r->ids))
    return -ENOMEM;
  char *id = malloc(n + 1);
  if (!id)
    return -ENOMEM;
  memcpy(id, s, n);
  id[n] = 0;
  r->ids[r->nids++] = id;
  return 0;
}

static int
add_key_hash(relay_revoked *r, const uint8_t h[32]) {
  if (grow((void **)&r->keys, &r->capkeys, r->nkeys, sizeof *r->keys))
    return -ENOMEM;
  memcpy(r->keys[r->nkeys++], h, 32);
  return 0;
}

int
relay_revoked_has_serial(const relay_revoked *r, uint64_t serial) {
  for (size_t i = 0; r && i < r->nr; i++)
    if (serial >= r->r[i].lo && serial <= r->r[i].hi)
      return 1;
  return 0;
}

int
relay_revoked_has(const relay_revoked *r, const relay_cert *c) {
  if (!r)
    return 0;
  if (c->serial && relay_revoked_has_serial(r, c->serial))
    return 1;
  for (size_t i = 0; i < r->nids; i++)
    if (!strcmp(r->ids[i], c->key_id))
      return 1;
  for (size_t i = 0; i < r->nkeys; i++)
    if (!memcmp(r->keys[i], c->key_hash, 32))
      return 1;
  return 0;
}

int
relay_revoked_apply(relay_revoked *r, const bus_event *ev) {
  char serial[80];
  if (!ev->type || strcmp(ev->type, "cert.revoked"))
    return 0;
  if (!bus_obj_str(&ev->data, "serial", serial, sizeof serial))
    return BUS_EFIELD;
  size_t n = strlen(serial);
  if (n != 16)
    return n == 32 ? 0 : BUS_EFIELD; /* X.509 serials are 32 digits */
  if (strspn(serial, "0123456789abcdefABCDEF") != n)
    return BUS_EFIELD;
  uint64_t s = strtoull(serial, NULL, 16);
  return relay_revoked_add_range(r, s, s);
}

/* ------------------------------------------------------------------ KRL */

static int
krl_fail(char *why, size_t cap, int rc, const char *msg) {
  if (why && cap)
    snprintf(why, cap, "KRL: %s", msg);
  return rc;
}

/* A bitmap (mpint, big-endian) of serials offset + bit. */
static int
krl_bitmap(relay_revoked *r, relay__cur *c) {
  uint64_t off = relay__u64(c);
  size_t n;
  const uint8_t *b = relay__str(c, &n);
  if (!b || c->len || n > (1u << 20))
    return BUS_EMALFORMED;
  for (size_t bit = 0; bit < n * 8; bit++)
    if (b[n - 1 - bit / 8] >> (bit % 8) & 1) {
      if (off + bit < off)
        return BUS_EMALFORMED;
      if (relay_revoked_add_range(r, off + bit, off + bit))
        return -ENOMEM;
    }
  return 0;
}

static int
krl_cert_sub(relay_revoked *r, uint8_t type, relay__cur *c) {
  size_t n;
  const uint8_t *s;
  int rc = 0;
  switch (type) {
  case KRL_SERIAL_LIST:
    while (!rc && c->len >= 8) {
      uint64_t v = relay__u64(c);
      rc = relay_revoked_add_range(r, v, v);
    }
    return rc ? rc : c->len ? BUS_EMALFORMED : 0;
  case KRL_SERIAL_RANGE: {
    uint64_t lo = relay__u64(c), hi = relay__u64(c);
    return c->err || c->len || lo > hi ? BUS_EMALFORMED
                                       : relay_revoked_add_range(r, lo, hi);
  }
  case KRL_SERIAL_BITMAP:
    return krl_bitmap(r, c);
  case KRL_KEY_ID:
    while (!rc && c->len && (s = relay__str(c, &n)))
      rc = memchr(s, 0, n) ? BUS_EMALFORMED : add_id(r, s, n);
    return rc ? rc : c->err ? BUS_EMALFORMED : 0;
  default:
    return BUS_EMALFORMED;
  }
}

/* A certificates section: its CA key, then typed subsections. Sections
 * for another CA are skipped; an empty CA key means any CA. */
static int
krl_certs(relay_revoked *r, const uint8_t ca_pk[32], relay__cur *c) {
  size_t n, cn;
  uint8_t pk[32];
  const uint8_t *ca = relay__str(c, &cn);
  relay__str(c, &n); /* reserved */
  if (c->err)
    return BUS_EMALFORMED;
  if (cn && (relay__ed_blob(ca, cn, pk) || memcmp(pk, ca_pk, 32)))
    return 0; /* another CA, perhaps of another key type */
  while (c->len) {
    uint8_t type = *c->p;
    c->p++;
    c->len--;
    const uint8_t *d = relay__str(c, &n);
    relay__cur sc = {d, n, 0};
    int rc = d ? krl_cert_sub(r, type, &sc) : BUS_EMALFORMED;
    if (rc)
      return rc;
  }
  return 0;
}

static int
krl_keys(relay_revoked *r, relay__cur *c, int hashed) {
  size_t n;
  const uint8_t *s;
  uint8_t pk[32], h[32];
  while (c->len && (s = relay__str(c, &n))) {
    if (hashed && n != 32)
      return BUS_EMALFORMED;
    if (hashed)
      memcpy(h, s, 32);
    else if (relay__ed_blob(s, n, pk) == 0)
      relay__key_hash(pk, h);
    else
      continue; /* another key type: cannot be one of our certificates */
    if (add_key_hash(r, h))
      return -ENOMEM;
  }
  return c->err ? BUS_EMALFORMED : 0;
}

static int
krl_section(relay_revoked *r, const uint8_t ca_pk[32], uint8_t type,
            relay__cur *c, char *why, size_t cap) {
  switch (type) {
  case KRL_CERTIFICATES:
    return krl_certs(r, ca_pk, c);
  case KRL_EXPLICIT_KEY:
    return krl_keys(r, c, 0);
  case KRL_FINGERPRINT_SHA256:
    return krl_keys(r, c, 1);
  case KRL_FINGERPRINT_SHA1:
    return krl_fail(why, cap, BUS_EFIELD, "SHA-1 sections are not supported");
  case KRL_SIGNATURE:
    return krl_fail(why, cap, BUS_EFIELD, "signed KRLs are not supported");
  default:
    return krl_fail(why, cap, BUS_EMALFORMED, "unknown section");
  }
}

int
relay_revoked_load_krl(relay_revoked *r, const uint8_t ca_pk[32],
                       const uint8_t *krl, size_t len, char *why, size_t cap) {
  relay__cur c = {krl, len, 0};
  size_t n;
  if (relay__u64(&c) != KRL_MAGIC || relay__u32(&c) != 1)
    return krl_fail(why, cap, BUS_EMALFORMED, "not a version 1 KRL");
  relay__u64(&c); /* krl version */
  relay__u64(&c); /* generated */
  relay__u64(&c); /* flags */
  relay__str(&c, &n);
  relay__str(&c, &n); /* reserved, comment */
  while (!c.err && c.len) {
    uint8_t type = *c.p;
    c.p++;
    c.len--;
    const uint8_t *d = relay__str(&c, &n);
    relay__cur sc = {d, n, 0};
    int rc = d ? krl_section(r, ca_pk, type, &sc, why, cap) : BUS_EMALFORMED;
    if (rc == BUS_EMALFORMED)
      return krl_fail(why, cap, rc, "malformed section");
    if (rc)
      return rc;
  }
  return c.err ? krl_fail(why, cap, BUS_EMALFORMED, "truncated") : 0;
}

static int
read_all(const char *path, uint8_t **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  *out = NULL;
  *len = 0;
  if (!f)
    return -errno;
  int rc = fstat(fileno(f), &st) ? -errno : 0;
  if (!rc && (st.st_size < 0 || (uint64_t)st.st_size > KRL_MAX_FILE))
    rc = BUS_ETOO_BIG;
  size_t sz = rc ? 0 : (size_t)st.st_size;
  if (!rc && !(*out = malloc(sz ? sz : 1)))
    rc = -ENOMEM;
  if (!rc && fread(*out, 1, sz, f) != sz)
    rc = -EIO;
  fclose(f);
  if (rc) {
    free(*out);
    *out = NULL;
  } else {
    *len = sz;
  }
  return rc;
}

int
relay_revoked_load_file(const char *path, const uint8_t ca_pk[32],
                        relay_revoked **out, char *why, size_t cap) {
  uint8_t *data;
  size_t len;
  *out = NULL;
  int rc = read_all(path, &data, &len);
  if (rc)
    return krl_fail(why, cap, rc, bus_strerror(rc));
  relay_revoked *r = NULL;
  if (!(rc = relay_revoked_new(&r)) && len)
    rc = relay_revoked_load_krl(r, ca_pk, data, len, why, cap);
  free(data);
  if (rc)
    relay_revoked_free(r);
  else
    *out = r;
  return rc;
}
