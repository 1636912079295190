/*
 * certcheck.c - OpenSSH Ed25519 user certificates (PROTOCOL.certkeys)
 * parsed and verified for the hub; the revoked set and KRL reading
 * (PROTOCOL.krl) live in revoked.c.
 *
 * Every read goes through a bounded cursor whose error flag sticks: once
 * a length runs past the end, every later read returns nothing, and the
 * parser refuses at the end. Strings copied out are checked for length
 * and for embedded NULs first, so a copied field is always a C string of
 * the bytes the CA signed. The signature is checked over exactly the
 * bytes before it, and nothing may follow it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "certcheck.h"
#include "relay-int.h"

#define ED_TYPE "ssh-ed25519"
#define CERT_TYPE "ssh-ed25519-cert-v01@openssh.com"

uint32_t
relay__u32(relay__cur *c) {
  if (c->err || c->len < 4) {
    c->err = 1;
    return 0;
  }
  uint32_t v = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 |
               (uint32_t)c->p[2] << 8 | c->p[3];
  c->p += 4;
  c->len -= 4;
  return v;
}

uint64_t
relay__u64(relay__cur *c) {
  uint64_t hi = relay__u32(c);
  return hi << 32 | relay__u32(c);
}

const uint8_t *
relay__str(relay__cur *c, size_t *n) {
  size_t l = relay__u32(c);
  *n = 0;
  if (c->err || l > c->len) {
    c->err = 1;
    return NULL;
  }
  const uint8_t *s = c->p;
  c->p += l;
  c->len -= l;
  *n = l;
  return s;
}

int
relay__str_is(relay__cur *c, const char *want) {
  size_t n;
  const uint8_t *s = relay__str(c, &n);
  return s && n == strlen(want) && !memcmp(s, want, n);
}

/* A string field into out as a C string: refused when too long or when
 * it holds a NUL. */
static int
copy_cstr(relay__cur *c, char *out, size_t cap) {
  size_t n;
  const uint8_t *s = relay__str(c, &n);
  if (!s || n >= cap || memchr(s, 0, n)) {
    c->err = 1;
    return -1;
  }
  memcpy(out, s, n);
  out[n] = 0;
  return 0;
}

int
relay__ed_blob(const uint8_t *blob, size_t n, uint8_t pk[32]) {
  relay__cur c = {blob, n, 0};
  size_t kl;
  if (!relay__str_is(&c, ED_TYPE))
    return BUS_EMALFORMED;
  const uint8_t *k = relay__str(&c, &kl);
  if (!k || kl != 32 || c.len)
    return BUS_EMALFORMED;
  memcpy(pk, k, 32);
  return 0;
}

void
relay__key_hash(const uint8_t pk[32], uint8_t out[32]) {
  uint8_t blob[4 + 11 + 4 + 32] = {0, 0, 0, 11};
  memcpy(blob + 4, ED_TYPE, 11);
  blob[18] = 32;
  memcpy(blob + 19, pk, 32);
  crypto_hash_sha256(out, blob, sizeof blob);
}

/* "<type> <base64> [comment]": the base64 part decoded into *blob. */
static int
decode_line(const char *type, const char *line, size_t len, uint8_t **blob,
            size_t *n) {
  size_t tl = strlen(type), i, j;
  *blob = NULL;
  *n = 0;
  if (!line || len <= tl || memcmp(line, type, tl) || line[tl] != ' ')
    return BUS_EMALFORMED;
  for (i = tl; i < len && line[i] == ' ';)
    i++;
  for (j = i; j < len && line[j] != ' ' && line[j] != '\n' && line[j] != '\r';)
    j++;
  if (j == i || j - i > 65536)
    return BUS_EMALFORMED;
  uint8_t *b = malloc((j - i) / 4 * 3 + 3);
  if (!b)
    return -ENOMEM;
  if (sodium_base642bin(b, (j - i) / 4 * 3 + 3, line + i, j - i, NULL, n, NULL,
                        sodium_base64_VARIANT_ORIGINAL)) {
    free(b);
    return BUS_EMALFORMED;
  }
  *blob = b;
  return 0;
}

int
relay_ca_parse(const char *line, size_t len, uint8_t pk[32]) {
  uint8_t *blob;
  size_t n;
  int rc = decode_line(ED_TYPE, line, len, &blob, &n);
  if (rc)
    return rc;
  rc = relay__ed_blob(blob, n, pk);
  free(blob);
  return rc;
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
  return decode_line(CERT_TYPE, line, len, blob, n);
}

/* -------------------------------------------------------------- parsing */

static int
fail(char *why, size_t cap, int rc, const char *msg) {
  if (why && cap)
    snprintf(why, cap, "%s", msg);
  return rc;
}

static int
parse_principals(relay__cur *c, relay_cert *out) {
  size_t n;
  const uint8_t *p = relay__str(c, &n);
  relay__cur pc = {p, n, 0};
  while (p && pc.len && !pc.err) {
    if (out->nprincipals == RELAY_MAX_PRINCIPALS)
      return -1;
    copy_cstr(&pc, out->principals[out->nprincipals++],
              sizeof out->principals[0]);
  }
  return c->err || pc.err ? -1 : 0;
}

/* Our extension data is one string holding the value. */
static int
ext_value(const uint8_t *d, size_t n, char *out, size_t cap) {
  relay__cur c = {d, n, 0};
  copy_cstr(&c, out, cap);
  return c.err || c.len ? -1 : 0;
}

/*
 * Options and extensions: (name, data) pairs, names in strictly
 * increasing order as OpenSSH requires. Critical options are only
 * counted (the hub refuses any); of the extensions ours are read.
 */
static int
parse_options(relay__cur *c, relay_cert *out, int critical) {
  size_t n, nl, dl;
  const uint8_t *p = relay__str(c, &n);
  relay__cur oc = {p, n, 0};
  char prev[256] = "", name[256];
  while (p && oc.len && !oc.err) {
    const uint8_t *nm = relay__str(&oc, &nl);
    const uint8_t *d = relay__str(&oc, &dl);
    if (!nm || !d || nl >= sizeof name || memchr(nm, 0, nl))
      return -1;
    memcpy(name, nm, nl);
    name[nl] = 0;
    if (prev[0] && strcmp(prev, name) >= 0)
      return -1;
    memcpy(prev, name, nl + 1);
    if (critical)
      out->ncritical++;
    else if (!strcmp(name, "role@larkbus"))
      oc.err |= ext_value(d, dl, out->role, sizeof out->role);
    else if (!strcmp(name, "domain@larkbus"))
      oc.err |= ext_value(d, dl, out->domain, sizeof out->domain);
    else if (!strcmp(name, "cluster@larkbus"))
      oc.err |= ext_value(d, dl, out->cluster, sizeof out->cluster);
  }
  return c->err || oc.err ? -1 : 0;
}

static int
parse_body(relay__cur *c, relay_cert *out) {
  size_t n;
  const uint8_t *s;
  if (!relay__str_is(c, CERT_TYPE))
    return -1;
  relay__str(c, &n); /* nonce */
  s = relay__str(c, &n);
  if (!s || n != 32)
    return -1;
  memcpy(out->key, s, 32);
  out->serial = relay__u64(c);
  out->type = relay__u32(c);
  if (copy_cstr(c, out->key_id, sizeof out->key_id) || parse_principals(c, out))
    return -1;
  out->valid_after = relay__u64(c);
  out->valid_before = relay__u64(c);
  if (parse_options(c, out, 1) || parse_options(c, out, 0))
    return -1;
  relay__str(c, &n); /* reserved */
  s = relay__str(c, &n);
  if (!s || relay__ed_blob(s, n, out->ca_key))
    return -1;
  return c->err ? -1 : 0;
}

static int
verify_sig(relay__cur *c, const uint8_t *body, size_t blen,
           const uint8_t pk[32]) {
  size_t n, sl;
  const uint8_t *s = relay__str(c, &n);
  relay__cur sc = {s, n, 0};
  if (!s || c->len || !relay__str_is(&sc, ED_TYPE))
    return BUS_EMALFORMED;
  const uint8_t *sig = relay__str(&sc, &sl);
  if (!sig || sl != crypto_sign_BYTES || sc.len)
    return BUS_EMALFORMED;
  return crypto_sign_verify_detached(sig, body, blen, pk) ? BUS_EDENIED : 0;
}

int
relay_cert_parse(const uint8_t *blob, size_t len, relay_cert *out, char *why,
                 size_t cap) {
  memset(out, 0, sizeof *out);
  if (!blob)
    return fail(why, cap, BUS_EMALFORMED, "no certificate");
  relay__cur c = {blob, len, 0};
  if (parse_body(&c, out))
    return fail(why, cap, BUS_EMALFORMED, "not an Ed25519 certificate");
  int rc = verify_sig(&c, blob, len - c.len, out->ca_key);
  if (rc == BUS_EMALFORMED)
    return fail(why, cap, rc, "malformed certificate signature");
  if (rc)
    return fail(why, cap, rc, "certificate signature does not verify");
  relay__key_hash(out->key, out->key_hash);
  return 0;
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
  if (relay_revoked_has(chk->revoked, out))
    return fail(why, cap, BUS_EDENIED, "certificate revoked");
  return 0;
}
