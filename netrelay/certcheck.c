/*
 * certcheck.c - the hub's checks of OpenSSH Ed25519 user certificates:
 * parsed by sshwire, the signature verified here (libsodium) over
 * exactly the bytes the CA signed, then the platform's rules.
 *
 * Strings copied out of a certificate are checked for length and for
 * embedded NULs first, so a copied field is always a C string of the
 * bytes the CA signed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "certcheck.h"

/* sshwire's -EBADMSG as ours. */
static int
wire_rc(int rc) {
  return rc == -EBADMSG ? BUS_EMALFORMED : rc;
}

int
relay_ca_parse(const char *line, size_t len, uint8_t pk[32]) {
  return wire_rc(sshwire_ed25519_pub_parse(line, len, pk));
}

int
relay_ca_load(const char *path, uint8_t pk[32]) {
  char line[4096];
  FILE *f = fopen(path, "r");
  if (!f)
    return -errno;
  int rc = BUS_EMALFORMED;
  while (rc && fgets(line, sizeof line, f))
    if (line[0] != '#' && line[0] != '\n')
      rc = relay_ca_parse(line, strlen(line), pk);
  fclose(f);
  return rc;
}

int
relay_cert_decode(const char *line, size_t len, uint8_t **blob, size_t *n) {
  return wire_rc(sshwire_line_decode(SSHWIRE_ED25519_CERT, line, len, blob, n));
}

/* -------------------------------------------------------------- parsing */

static int
fail(char *why, size_t cap, int rc, const char *msg) {
  if (why && cap)
    snprintf(why, cap, "%s", msg);
  return rc;
}

/* Bytes into out as a C string: refused when too long or holding a NUL. */
static int
copy_bytes(sshwire_bytes b, char *out, size_t cap) {
  if (b.n >= cap || memchr(b.p, 0, b.n))
    return -1;
  memcpy(out, b.p, b.n);
  out[b.n] = 0;
  return 0;
}

static int
copy_principals(const sshwire_cert *w, relay_cert *out) {
  sshwire_rd it = sshwire_rd_of(w->principals.p, w->principals.n);
  sshwire_bytes p;
  while (sshwire_cert_next_principal(&it, &p))
    if (out->nprincipals == RELAY_MAX_PRINCIPALS ||
        copy_bytes(p, out->principals[out->nprincipals++],
                   sizeof out->principals[0]))
      return -1;
  return 0;
}

/* Our extension data is one string holding the value. */
static int
ext_value(sshwire_bytes d, char *out, size_t cap) {
  sshwire_rd r = sshwire_rd_of(d.p, d.n);
  return sshwire_get_cstr(&r, out, cap) || r.len ? -1 : 0;
}

/* Critical options are only counted (the hub refuses any); of the
 * extensions ours are read. */
static int
copy_options(const sshwire_cert *w, relay_cert *out) {
  sshwire_rd it = sshwire_rd_of(w->critical.p, w->critical.n);
  sshwire_bytes name, d;
  char nm[256];
  while (sshwire_cert_next_option(&it, &name, &d))
    out->ncritical++;
  it = sshwire_rd_of(w->extensions.p, w->extensions.n);
  while (sshwire_cert_next_option(&it, &name, &d)) {
    if (copy_bytes(name, nm, sizeof nm))
      return -1;
    char *dst = !strcmp(nm, "role@larkbus")      ? out->role
                : !strcmp(nm, "domain@larkbus")  ? out->domain
                : !strcmp(nm, "cluster@larkbus") ? out->cluster
                                                 : NULL;
    if (dst && ext_value(d, dst, RELAY_NAME_MAX))
      return -1;
  }
  return 0;
}

int
relay_cert_parse(const uint8_t *blob, size_t len, relay_cert *out, char *why,
                 size_t cap) {
  sshwire_cert w;
  memset(out, 0, sizeof *out);
  if (!blob)
    return fail(why, cap, BUS_EMALFORMED, "no certificate");
  if (sshwire_cert_parse(blob, len, &w) ||
      copy_bytes(w.key_id, out->key_id, sizeof out->key_id) ||
      copy_principals(&w, out) || copy_options(&w, out))
    return fail(why, cap, BUS_EMALFORMED, "not an Ed25519 certificate");
  memcpy(out->key, w.key, 32);
  memcpy(out->ca_key, w.ca_key, 32);
  out->serial = w.serial;
  out->type = w.type;
  out->valid_after = w.valid_after;
  out->valid_before = w.valid_before;
  if (crypto_sign_verify_detached(w.signature, blob, w.signed_len, w.ca_key))
    return fail(why, cap, BUS_EDENIED, "certificate signature does not verify");
  sshwire_ed25519_hash(out->key, out->key_hash);
  return 0;
}

int
relay_cert_revoked(const sshwire_krl *r, const relay_cert *c) {
  if (!r)
    return 0;
  return (c->serial && sshwire_krl_has_serial(r, c->serial)) ||
         sshwire_krl_has_key_id(r, c->key_id) ||
         sshwire_krl_has_key_hash(r, c->key_hash);
}

/* ------------------------------------------------------------- checking */

/* A signer name: [a-z0-9-], 1..63. */
static int
valid_name(const char *s) {
  size_t n = strlen(s);
  if (!n || n >= RELAY_NAME_MAX)
    return 0;
  return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/*
 * The key id "<name> k=v ...": the name, and role and domain, which
 * must agree with the extensions where both are present.
 */
static int
read_key_id(relay_cert *c, char *why, size_t cap) {
  char id[sizeof c->key_id], *save = NULL;
  memcpy(id, c->key_id, sizeof id);
  char *w = strtok_r(id, " ", &save);
  if (w && !strchr(w, '=') && strlen(w) < sizeof c->name)
    memcpy(c->name, w, strlen(w) + 1);
  for (; w; w = strtok_r(NULL, " ", &save)) {
    char *dst = !strncmp(w, "role=", 5)     ? c->role
                : !strncmp(w, "domain=", 7) ? c->domain
                                            : NULL;
    if (!dst)
      continue;
    const char *v = strchr(w, '=') + 1;
    if (strlen(v) >= RELAY_NAME_MAX || (*dst && strcmp(dst, v)))
      return fail(why, cap, BUS_EDENIED, "key id and extensions disagree");
    memcpy(dst, v, strlen(v) + 1);
  }
  return 0;
}

static int
has_principal(const relay_cert *c, const char *p) {
  for (int i = 0; i < c->nprincipals; i++)
    if (!strcmp(c->principals[i], p))
      return 1;
  return 0;
}

static int
check_identity(const relay_check *chk, relay_cert *c, char *why, size_t cap) {
  char want[RELAY_NAME_MAX + 8];
  int rc = read_key_id(c, why, cap);
  if (rc)
    return rc;
  if (!c->role[0] || !chk->role || strcmp(c->role, chk->role))
    return fail(why, cap, BUS_EDENIED,
                "certificate role is not the one "
                "required");
  if (!valid_name(c->domain))
    return fail(why, cap, BUS_EDENIED, "certificate names no valid domain");
  snprintf(want, sizeof want, "domain:%s", c->domain);
  if (!has_principal(c, want))
    return fail(why, cap, BUS_EDENIED,
                "certificate lacks the principal "
                "domain:<domain>");
  return 0;
}

int
relay_cert_check(const relay_check *chk, const uint8_t *blob, size_t len,
                 relay_cert *out, char *why, size_t cap) {
  int rc = relay_cert_parse(blob, len, out, why, cap);
  if (rc)
    return rc;
  if (!chk->ca_pk || sodium_memcmp(out->ca_key, chk->ca_pk, 32))
    return fail(why, cap, BUS_EDENIED, "signed by another CA");
  if (out->type != 1)
    return fail(why, cap, BUS_EDENIED, "not a user certificate");
  if (chk->now < out->valid_after)
    return fail(why, cap, BUS_EDENIED, "certificate not yet valid");
  if (chk->now >= out->valid_before)
    return fail(why, cap, BUS_EDENIED, "certificate expired");
  if (out->ncritical)
    return fail(why, cap, BUS_EDENIED, "certificate has critical options");
  if ((rc = check_identity(chk, out, why, cap)))
    return rc;
  if (relay_cert_revoked(chk->revoked, out))
    return fail(why, cap, BUS_EDENIED, "certificate revoked");
  return 0;
}
