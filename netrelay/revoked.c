/*
 * revoked.c - the hub's revoked set, from cert.revoked events and from a
 * KRL file; the set and the KRL format are sshwire's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "revoked.h"

#define KRL_MAX_FILE (64u << 20)

/* ev's serial into buf; -1 when it has none that fits. */
static int
serial_of(const bus_event *ev, char *buf, size_t cap) {
  const bus_ev_cert_revoked *d = bus_as_cert_revoked(ev);
  bus_ev_cert_revoked own;
  msgpack_zone z;
  msgpack_zone_init(&z, 256); /* for an event decoded without its types */
  int bad = !d && bus_cert_revoked_unpack(&ev->data, &z, &own);
  if (!bad && !d)
    d = &own;
  bad = bad || d->serial.len >= cap;
  if (!bad)
    bus_str_copy(d->serial, buf, cap);
  msgpack_zone_destroy(&z);
  return bad ? -1 : 0;
}

int
relay_revoked_apply(sshwire_krl *r, const bus_event *ev) {
  char serial[80];
  if (!ev->type || strcmp(ev->type, "cert.revoked"))
    return 0;
  if (serial_of(ev, serial, sizeof serial))
    return BUS_EFIELD;
  size_t n = strlen(serial);
  if (n != 16)
    return n == 32 ? 0 : BUS_EFIELD; /* X.509 serials are 32 digits */
  if (strspn(serial, "0123456789abcdefABCDEF") != n)
    return BUS_EFIELD;
  uint64_t s = strtoull(serial, NULL, 16);
  return sshwire_krl_add_serials(r, s, s);
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
                        sshwire_krl **out, char *why, size_t cap) {
  uint8_t *data;
  size_t len;
  *out = NULL;
  int rc = read_all(path, &data, &len);
  if (rc) {
    if (why && cap)
      snprintf(why, cap, "KRL: %s", bus_strerror(rc));
    return rc;
  }
  sshwire_krl *r = NULL;
  if (!(rc = sshwire_krl_new(&r)) && len)
    rc = sshwire_krl_parse(r, ca_pk, data, len, NULL, why, cap);
  free(data);
  if (rc) {
    sshwire_krl_free(r);
    return rc == -EBADMSG ? BUS_EMALFORMED : rc == -ENOTSUP ? BUS_EFIELD : rc;
  }
  *out = r;
  return 0;
}
