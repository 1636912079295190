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
} revs;

static int
rev_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  revs *r = ud;
  char format[8] = "", serial[SIGNER_SERIAL_MAX];
  int64_t when = 0;
  if (klen >= SIGNER_SERIAL_MAX ||
      signer__row_get(val, vlen, "format", format, sizeof format, NULL))
    return 0;
  memcpy(serial, key, klen);
  serial[klen] = 0;
  if (!strcmp(format, "x509")) {
    if (bus_grow(&r->x, r->nx, &r->capx, sizeof *r->x, 64))
      return -ENOMEM;
    signer_revoked *e = &r->x[r->nx++];
    memcpy(e->serial, serial, klen + 1);
    signer__row_get(val, vlen, "ts", NULL, 0, &when);
    e->when = when;
  } else if (!strcmp(format, "ssh")) {
    if (bus_grow(&r->s, r->ns, &r->caps, sizeof *r->s, 64))
      return -ENOMEM;
    r->s[r->ns++] = strtoull(serial, NULL, 16);
  }
  return 0;
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
