/*
 * records.c - lark-ipam's rows: fixed-layout records of domains, pods and
 * Jobs read and written whole, the address keys, the allocator's walk
 * over a domain's taken addresses, and keys collected under a prefix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

void
ipam_copy(char *dst, size_t cap, const void *s, size_t n) {
  bus_str_copy((bus_str){s, (uint32_t)n}, dst, cap);
}

size_t
ipam_addr_key(const char *domain, uint64_t off, unsigned char *key) {
  size_t n = strnlen(domain, IPAM_NAME_SZ - 1);
  memcpy(key, domain, n);
  key[n] = '/';
  bus_put_be64(key + n + 1, off);
  return n + 9;
}

int
ipam__rec_get(bus_txn *t, const char *table, const char *name, void *r,
              size_t sz) {
  const void *v;
  size_t len;
  int rc = bus_txn_get(t, table, name, strlen(name), &v, &len);
  if (rc)
    return rc;
  if (len != sz || ((const uint8_t *)v)[0] != IPAM_LAYOUT)
    return bus_error(BUS_ECORRUPT, "%s %s: unknown layout", table, name);
  memcpy(r, v, sz);
  return 0;
}

const char *
ipam__subject_id(const char *subject) {
  const char *p = strlen(subject) > 8 ? strchr(subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

/* One walk for both: records (rec set) or the tails of a domain's keys. */
typedef struct walk {
  const char *d;
  void *rec;
  size_t sz;
  ipam_tail_fn tail_fn;
  ipam_rec_fn rec_fn;
  void *ud;
} walk;

static int
walk_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  walk *w = ud;
  size_t plen = w->rec ? 0 : strlen(w->d) + 1;
  char tail[IPAM_DNAME_SZ];
  if (w->rec) {
    if (vl != w->sz)
      return 0;
    memcpy(w->rec, v, vl);
    return w->rec_fn(w->rec, w->ud);
  }
  if (kl <= plen)
    return 0;
  ipam_copy(tail, sizeof tail, (const char *)k + plen, kl - plen);
  return w->tail_fn(tail, w->ud);
}

int
ipam__scan_domain(bus_txn *t, const char *table, const char *d, ipam_tail_fn fn,
                  void *ud) {
  char prefix[IPAM_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s/", d);
  walk w = {.d = d, .tail_fn = fn, .ud = ud};
  return bus_txn_scan(t, table, prefix, strlen(prefix), walk_cb, &w);
}

int
ipam__scan_recs(bus_txn *t, const char *table, void *rec, size_t sz,
                ipam_rec_fn fn, void *ud) {
  walk w = {.rec = rec, .sz = sz, .rec_fn = fn, .ud = ud};
  return bus_txn_scan(t, table, NULL, 0, walk_cb, &w);
}

typedef struct overlap_walk {
  const ipam_cidr *c;
  const char *except;
} overlap_walk;

static int
overlaps(void *rec, void *ud) {
  const dom_rec *d = rec;
  const overlap_walk *w = ud;
  return (!w->except || strcmp(d->name, w->except)) &&
         ipam_cidr_overlap(&d->c, w->c);
}

int
ipam__overlapping(bus_txn *t, const ipam_cidr *c, const char *except,
                  dom_rec *other) {
  overlap_walk w = {c, except};
  return ipam__scan_recs(t, "domains", other, sizeof *other, overlaps, &w);
}

uint64_t
ipam_dom_free(const dom_rec *d) {
  uint64_t n = ipam_cidr_usable(&d->c);
  return n > d->used ? n - d->used : 0;
}

static int
next_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  const void **out = ud;
  size_t plen = strlen(out[1]);
  if (kl != plen + 9 || memcmp(k, out[1], plen))
    return 2;
  out[0] = k;
  return 1;
}

int
ipam_view_next(void *ud, uint64_t from, uint64_t *taken) {
  ipam_lookup *l = ud;
  unsigned char key[IPAM_NAME_SZ + 9];
  char prefix[IPAM_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s/", l->domain);
  size_t klen = from ? ipam_addr_key(l->domain, from - 1, key) : strlen(prefix);
  if (!from)
    memcpy(key, prefix, klen);
  const void *out[2] = {NULL, prefix};
  int rc = bus_txn_scan_after(l->t, "addrs", key, klen, next_cb, out);
  if (rc < 0)
    return rc;
  if (rc != 1)
    return 0;
  *taken = bus_get_be64((const unsigned char *)out[0] + strlen(prefix));
  return 1;
}

static int
collect(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  keys *ks = ud;
  if (ks->n == ks->cap) {
    size_t cap = ks->cap ? ks->cap * 2 : 64;
    char **nv = realloc(ks->v, cap * sizeof *nv);
    size_t *nl = nv ? realloc(ks->len, cap * sizeof *nl) : NULL;
    if (nv)
      ks->v = nv;
    if (!nl)
      return bus_error(BUS_ESTORE, "out of memory");
    ks->len = nl;
    ks->cap = cap;
  }
  if (!(ks->v[ks->n] = malloc(kl + 1)))
    return bus_error(BUS_ESTORE, "out of memory");
  memcpy(ks->v[ks->n], k, kl);
  ks->v[ks->n][kl] = 0;
  ks->len[ks->n++] = kl;
  return 0;
}

void
ipam__keys_free(keys *ks) {
  for (size_t i = 0; i < ks->n; i++)
    free(ks->v[i]);
  free(ks->v);
  free(ks->len);
  memset(ks, 0, sizeof *ks);
}

int
ipam__keys_under(bus_txn *t, const char *table, const char *prefix, keys *ks) {
  memset(ks, 0, sizeof *ks);
  int rc = bus_txn_scan(t, table, prefix, strlen(prefix), collect, ks);
  if (rc)
    ipam__keys_free(ks);
  return rc;
}
