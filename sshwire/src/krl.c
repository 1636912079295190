/*
 * krl.c - OpenSSH key revocation lists (PROTOCOL.krl) and the set they
 * describe: serial ranges, key ids and key hashes.
 *
 * The reader refuses a section it does not understand rather than skip
 * it, because a skipped section could hide a revocation. The writer
 * sorts and joins the serial ranges, so the same set always makes the
 * same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sshwire.h"

#define KRL_MAGIC 0x5353484b524c0a00ULL /* "SSHKRL\n\0" */
#define KRL_FORMAT 1
#define KRL_BITMAP_MAX (1u << 20) /* bytes of one serial bitmap */

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

struct sshwire_krl {
  range *r;
  size_t nr, capr;
  char **ids;
  size_t nids, capids;
  uint8_t (*keys)[32];
  size_t nkeys, capkeys;
};

/* ------------------------------------------------------------- the set */

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
sshwire_krl_new(sshwire_krl **out) {
  *out = calloc(1, sizeof **out);
  return *out ? 0 : -ENOMEM;
}

void
sshwire_krl_free(sshwire_krl *k) {
  if (!k)
    return;
  for (size_t i = 0; i < k->nids; i++)
    free(k->ids[i]);
  free(k->ids);
  free(k->r);
  free(k->keys);
  free(k);
}

int
sshwire_krl_add_serials(sshwire_krl *k, uint64_t lo, uint64_t hi) {
  if (lo > hi)
    return -EINVAL;
  if (k->nr && k->r[k->nr - 1].hi != UINT64_MAX &&
      k->r[k->nr - 1].hi + 1 == lo) {
    k->r[k->nr - 1].hi = hi; /* a bitmap's runs arrive in order */
    return 0;
  }
  if (grow((void **)&k->r, &k->capr, k->nr, sizeof *k->r))
    return -ENOMEM;
  k->r[k->nr++] = (range){lo, hi};
  return 0;
}

int
sshwire_krl_add_key_id(sshwire_krl *k, const void *id, size_t n) {
  if (memchr(id, 0, n))
    return -EINVAL;
  if (grow((void **)&k->ids, &k->capids, k->nids, sizeof *k->ids))
    return -ENOMEM;
  char *s = malloc(n + 1);
  if (!s)
    return -ENOMEM;
  memcpy(s, id, n);
  s[n] = 0;
  k->ids[k->nids++] = s;
  return 0;
}

int
sshwire_krl_add_key_hash(sshwire_krl *k, const uint8_t hash[32]) {
  if (grow((void **)&k->keys, &k->capkeys, k->nkeys, sizeof *k->keys))
    return -ENOMEM;
  memcpy(k->keys[k->nkeys++], hash, 32);
  return 0;
}

int
sshwire_krl_has_serial(const sshwire_krl *k, uint64_t serial) {
  for (size_t i = 0; k && i < k->nr; i++)
    if (serial >= k->r[i].lo && serial <= k->r[i].hi)
      return 1;
  return 0;
}

int
sshwire_krl_has_key_id(const sshwire_krl *k, const char *id) {
  for (size_t i = 0; k && i < k->nids; i++)
    if (!strcmp(k->ids[i], id))
      return 1;
  return 0;
}

int
sshwire_krl_has_key_hash(const sshwire_krl *k, const uint8_t hash[32]) {
  for (size_t i = 0; k && i < k->nkeys; i++)
    if (!memcmp(k->keys[i], hash, 32))
      return 1;
  return 0;
}

/* ------------------------------------------------------------ reading */

static int
krl_fail(char *why, size_t cap, int rc, const char *msg) {
  if (why && cap)
    snprintf(why, cap, "KRL: %s", msg);
  return rc;
}

/* A bitmap (mpint, big-endian) of serials offset + bit. */
static int
read_bitmap(sshwire_krl *k, sshwire_rd *r) {
  uint64_t off = sshwire_get_u64(r);
  size_t n;
  const uint8_t *b = sshwire_get_str(r, &n);
  if (!b || r->len || n > KRL_BITMAP_MAX)
    return -EBADMSG;
  for (size_t bit = 0; bit < n * 8; bit++)
    if (b[n - 1 - bit / 8] >> (bit % 8) & 1) {
      if (off + bit < off)
        return -EBADMSG;
      if (sshwire_krl_add_serials(k, off + bit, off + bit))
        return -ENOMEM;
    }
  return 0;
}

static int
read_cert_sub(sshwire_krl *k, uint8_t type, sshwire_rd *r) {
  size_t n;
  const uint8_t *s;
  int rc = 0;
  switch (type) {
  case KRL_SERIAL_LIST:
    while (!rc && r->len >= 8) {
      uint64_t v = sshwire_get_u64(r);
      rc = sshwire_krl_add_serials(k, v, v);
    }
    return rc ? rc : r->len ? -EBADMSG : 0;
  case KRL_SERIAL_RANGE: {
    uint64_t lo = sshwire_get_u64(r), hi = sshwire_get_u64(r);
    return r->err || r->len || lo > hi ? -EBADMSG
                                       : sshwire_krl_add_serials(k, lo, hi);
  }
  case KRL_SERIAL_BITMAP:
    return read_bitmap(k, r);
  case KRL_KEY_ID:
    while (!rc && r->len && (s = sshwire_get_str(r, &n)))
      rc = memchr(s, 0, n) ? -EBADMSG : sshwire_krl_add_key_id(k, s, n);
    return rc ? rc : r->err ? -EBADMSG : 0;
  default:
    return -EBADMSG;
  }
}

/* A certificates section: its CA key, then typed subsections. Sections
 * for another CA are skipped; an empty CA key means any CA. */
static int
read_certs(sshwire_krl *k, const uint8_t ca_pk[32], sshwire_rd *r) {
  size_t n, cn;
  uint8_t pk[32];
  const uint8_t *ca = sshwire_get_str(r, &cn);
  sshwire_get_str(r, &n); /* reserved */
  if (r->err)
    return -EBADMSG;
  if (cn && (sshwire_ed25519_parse(ca, cn, pk) || memcmp(pk, ca_pk, 32)))
    return 0; /* another CA, perhaps of another key type */
  while (r->len) {
    uint8_t type = sshwire_get_u8(r);
    sshwire_rd sub = sshwire_get_sub(r);
    int rc = sub.err ? -EBADMSG : read_cert_sub(k, type, &sub);
    if (rc)
      return rc;
  }
  return 0;
}

static int
read_keys(sshwire_krl *k, sshwire_rd *r, int hashed) {
  size_t n;
  const uint8_t *s;
  uint8_t pk[32], h[32];
  while (r->len && (s = sshwire_get_str(r, &n))) {
    if (hashed && n != 32)
      return -EBADMSG;
    if (hashed)
      memcpy(h, s, 32);
    else if (sshwire_ed25519_parse(s, n, pk) == 0)
      sshwire_ed25519_hash(pk, h);
    else
      continue; /* another key type: none of ours */
    if (sshwire_krl_add_key_hash(k, h))
      return -ENOMEM;
  }
  return r->err ? -EBADMSG : 0;
}

static int
read_section(sshwire_krl *k, const uint8_t ca_pk[32], uint8_t type,
             sshwire_rd *r, char *why, size_t cap) {
  switch (type) {
  case KRL_CERTIFICATES:
    return read_certs(k, ca_pk, r);
  case KRL_EXPLICIT_KEY:
    return read_keys(k, r, 0);
  case KRL_FINGERPRINT_SHA256:
    return read_keys(k, r, 1);
  case KRL_FINGERPRINT_SHA1:
    return krl_fail(why, cap, -ENOTSUP, "SHA-1 sections are not supported");
  case KRL_SIGNATURE:
    return krl_fail(why, cap, -ENOTSUP, "signed KRLs are not supported");
  default:
    return krl_fail(why, cap, -EBADMSG, "unknown section");
  }
}

static void
read_head(sshwire_rd *r, sshwire_krl_head *head) {
  size_t n;
  head->version = sshwire_get_u64(r);
  head->generated = sshwire_get_u64(r);
  sshwire_get_u64(r);     /* flags */
  sshwire_get_str(r, &n); /* reserved */
  const uint8_t *c = sshwire_get_str(r, &n);
  if (n >= sizeof head->comment)
    n = sizeof head->comment - 1;
  if (c)
    memcpy(head->comment, c, n);
  head->comment[c ? n : 0] = 0;
}

int
sshwire_krl_parse(sshwire_krl *k, const uint8_t ca_pk[32], const uint8_t *krl,
                  size_t len, sshwire_krl_head *head, char *why, size_t cap) {
  sshwire_rd r = sshwire_rd_of(krl, len);
  sshwire_krl_head h;
  if (sshwire_get_u64(&r) != KRL_MAGIC || sshwire_get_u32(&r) != KRL_FORMAT)
    return krl_fail(why, cap, -EBADMSG, "not a version 1 KRL");
  read_head(&r, head ? head : &h);
  while (!r.err && r.len) {
    uint8_t type = sshwire_get_u8(&r);
    sshwire_rd sub = sshwire_get_sub(&r);
    int rc = sub.err ? -EBADMSG : read_section(k, ca_pk, type, &sub, why, cap);
    if (rc == -EBADMSG)
      return krl_fail(why, cap, rc, "malformed section");
    if (rc)
      return rc;
  }
  return r.err ? krl_fail(why, cap, -EBADMSG, "truncated") : 0;
}

/* ------------------------------------------------------------ writing */

static int
range_cmp(const void *a, const void *b) {
  const range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* k's ranges sorted, overlapping and adjacent ones joined; *n of them in
 * a malloc'd array (NULL when none, or -ENOMEM). */
static int
joined_ranges(const sshwire_krl *k, range **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!k->nr)
    return 0;
  range *r = malloc(k->nr * sizeof *r);
  if (!r)
    return -ENOMEM;
  memcpy(r, k->r, k->nr * sizeof *r);
  qsort(r, k->nr, sizeof *r, range_cmp);
  size_t m = 0;
  for (size_t i = 1; i < k->nr; i++) {
    if (r[m].hi == UINT64_MAX || r[i].lo <= r[m].hi + 1) {
      if (r[i].hi > r[m].hi)
        r[m].hi = r[i].hi;
    } else {
      r[++m] = r[i];
    }
  }
  *out = r;
  *n = m + 1;
  return 0;
}

/* One typed subsection or section: byte type, string body. */
static void
put_typed(sshwire_buf *b, uint8_t type, const sshwire_buf *body) {
  sshwire_put_u8(b, type);
  sshwire_put_buf(b, body);
}

/* The certificates section's subsections: single serials in a list,
 * runs as ranges, then key ids. */
static void
put_cert_subs(sshwire_buf *sec, const range *r, size_t nr,
              const sshwire_krl *k) {
  sshwire_buf list = {0}, ranges = {0}, ids = {0};
  for (size_t i = 0; i < nr; i++) {
    if (r[i].lo == r[i].hi) {
      sshwire_put_u64(&list, r[i].lo);
      continue;
    }
    sshwire_put_u64(&ranges, r[i].lo);
    sshwire_put_u64(&ranges, r[i].hi);
    put_typed(sec, KRL_SERIAL_RANGE, &ranges);
    ranges.len = 0;
  }
  if (list.len)
    put_typed(sec, KRL_SERIAL_LIST, &list);
  for (size_t i = 0; i < k->nids; i++)
    sshwire_put_cstr(&ids, k->ids[i]);
  if (ids.len)
    put_typed(sec, KRL_KEY_ID, &ids);
  sec->err |= list.err | ranges.err | ids.err;
  sshwire_buf_free(&list);
  sshwire_buf_free(&ranges);
  sshwire_buf_free(&ids);
}

static void
put_head(sshwire_buf *b, const sshwire_krl_head *head) {
  sshwire_put_u64(b, KRL_MAGIC);
  sshwire_put_u32(b, KRL_FORMAT);
  sshwire_put_u64(b, head ? head->version : 0);
  sshwire_put_u64(b, head ? head->generated : 0);
  sshwire_put_u64(b, 0);     /* flags */
  sshwire_put_str(b, "", 0); /* reserved */
  sshwire_put_cstr(b, head ? head->comment : "");
}

int
sshwire_krl_write(const sshwire_krl *k, const uint8_t ca_pk[32],
                  const sshwire_krl_head *head, sshwire_buf *b) {
  sshwire_buf sec = {0}, ca = {0};
  range *r;
  size_t nr;
  if (joined_ranges(k, &r, &nr))
    return -ENOMEM;
  put_head(b, head);
  if (nr || k->nids) {
    sshwire_put_ed25519(&ca, ca_pk);
    sshwire_put_buf(&sec, &ca);
    sshwire_put_str(&sec, "", 0); /* reserved */
    put_cert_subs(&sec, r, nr, k);
    put_typed(b, KRL_CERTIFICATES, &sec);
  }
  if (k->nkeys) {
    sec.len = 0;
    for (size_t i = 0; i < k->nkeys; i++)
      sshwire_put_str(&sec, k->keys[i], 32);
    put_typed(b, KRL_FINGERPRINT_SHA256, &sec);
  }
  free(r);
  sshwire_buf_free(&sec);
  sshwire_buf_free(&ca);
  return b->err ? -ENOMEM : 0;
}
