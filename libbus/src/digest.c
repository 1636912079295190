/*
 * digest.c - SHA-256 over a view's tables, for `replay --verify`.
 *
 * The digest covers every table of the definition plus _versions, visited
 * in table-name order and, within a table, in key order; _meta (counters,
 * which differ between a live view and a replay), _outbox and _effects
 * (decisions, off in replay) are left out. Each entry is hashed as
 *   u32be(len(table)) table u32be(len(key)) key u32be(len(val)) val
 * so no two different contents can hash the same input stream. One read
 * transaction gives the tables and the applied sequence together.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "view-int.h"

static void
put_len(EVP_MD_CTX *ctx, size_t n) {
  unsigned char b[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                        (unsigned char)(n >> 8), (unsigned char)n};
  EVP_DigestUpdate(ctx, b, 4);
}

typedef struct digest_ctx {
  EVP_MD_CTX *md;
  const char *table;
} digest_ctx;

static int
hash_entry(const void *key, size_t klen, const void *val, size_t vlen,
           void *ud) {
  digest_ctx *d = ud;
  size_t tl = strlen(d->table);
  put_len(d->md, tl);
  EVP_DigestUpdate(d->md, d->table, tl);
  put_len(d->md, klen);
  EVP_DigestUpdate(d->md, key, klen);
  put_len(d->md, vlen);
  EVP_DigestUpdate(d->md, val, vlen);
  return 0;
}

static int
cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of the tables the digest covers, sorted. */
static int
digest_tables(bus_view *v, const char **names) {
  int n = 0;
  for (int i = 0; i < v->ntables; i++) {
    const char *name = v->tables[i].name;
    if (strcmp(name, BUS__T_META) && strcmp(name, BUS__T_OUTBOX) &&
        strcmp(name, BUS__T_EFFECTS))
      names[n++] = name;
  }
  qsort(names, (size_t)n, sizeof *names, cmp_names);
  return n;
}

int
bus_view_digest(bus_view *v, uint8_t out[32], uint64_t *seq) {
  const char *names[BUS__VIEW_MAX_TABLES];
  int n = digest_tables(v, names);
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  digest_ctx d = {EVP_MD_CTX_new(), NULL};
  if (!d.md || !EVP_DigestInit_ex(d.md, EVP_sha256(), NULL)) {
    rc = BUS_ERR(BUS_ESTORE, "sha-256 unavailable");
    goto out;
  }
  for (int i = 0; i < n && !rc; i++) {
    d.table = names[i];
    rc = bus_txn_scan(t, names[i], NULL, 0, hash_entry, &d);
  }
  unsigned int len = 32;
  if (!rc && !EVP_DigestFinal_ex(d.md, out, &len))
    rc = BUS_ERR(BUS_ESTORE, "sha-256 final");
  if (!rc && seq)
    *seq = t->c.applied_seq;
out:
  EVP_MD_CTX_free(d.md);
  bus_txn_end(t);
  return rc;
}

void
bus_digest_hex(const uint8_t d[32], char out[65]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = 0;
}
