/*
 * revocations.c - the CRL and KRL files under the data directory,
 * written from the committed view after a batch that applied a
 * revocation (apply only raises signer_hook's flag).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "signer-int.h"

typedef struct revs {
  signer_revoked *x;
  uint64_t *s;
  size_t nx, ns, capx, caps;
  int err;
} revs;

static int
grow(void **p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : 64;
  void *q = realloc(*p, c * size);
  if (!q)
    return -ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

static int
rev_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  revs *r = ud;
  msgpack_zone z;
  msgpack_zone_init(&z, 512);
  msgpack_object o;
  char format[8] = "";
  int rc = 0;
  if (klen >= SIGNER_SERIAL_MAX || signer__unpack(val, vlen, &z, &o))
    goto out;
  bus_obj_str(&o, "format", format, sizeof format);
  if (!strcmp(format, "x509")) {
    if ((rc = grow((void **)&r->x, &r->capx, r->nx, sizeof *r->x)))
      goto out;
    signer_revoked *e = &r->x[r->nx++];
    memcpy(e->serial, key, klen);
    e->serial[klen] = 0;
    e->when = bus_obj_int(&o, "ts", 0);
  } else if (!strcmp(format, "ssh")) {
    if ((rc = grow((void **)&r->s, &r->caps, r->ns, sizeof *r->s)))
      goto out;
    char hex[SIGNER_SERIAL_MAX];
    memcpy(hex, key, klen);
    hex[klen] = 0;
    r->s[r->ns++] = strtoull(hex, NULL, 16);
  }
out:
  msgpack_zone_destroy(&z);
  return rc;
}

int
signer_revoked_load(bus_txn *t, signer_revoked **x509, size_t *nx,
                    uint64_t **ssh, size_t *ns) {
  revs r = {0};
  int rc = bus_txn_scan(t, T_REVOKED, NULL, 0, rev_one, &r);
  if (rc) {
    free(r.x);
    free(r.s);
    return rc;
  }
  *x509 = r.x;
  *nx = r.nx;
  *ssh = r.s;
  *ns = r.ns;
  return 0;
}

int
signer_write_revocations(bus_view *v, const signer_ca *ca, const char *dir) {
  signer_revoked *x = NULL;
  uint64_t *s = NULL;
  size_t nx = 0, ns = 0;
  char path[4096];
  bus_view_stats st;
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = signer_revoked_load(t, &x, &nx, &s, &ns);
  bus_txn_end(t);
  if (!rc)
    rc = bus_view_stats_get(v, &st);
  int64_t now = (int64_t)time(NULL);
  snprintf(path, sizeof path, "%s/crl.pem", dir);
  if (!rc)
    rc = signer_crl_write(ca, path, x, nx, st.applied_seq, now);
  snprintf(path, sizeof path, "%s/revoked_keys", dir);
  if (!rc)
    rc = signer_krl_write(path, signer_ca_ssh_pk(ca), s, ns, st.applied_seq,
                          now);
  free(x);
  free(s);
  return rc;
}
