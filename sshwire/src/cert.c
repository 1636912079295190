/*
 * cert.c - ssh-ed25519-cert-v01@openssh.com certificates
 * (PROTOCOL.certkeys): the blob parsed into its fields, and written from
 * a spec up to the signature, which the caller makes.
 *
 * The layout: string type, string nonce, string key, uint64 serial,
 * uint32 type, string key id, string principals (packed strings),
 * uint64 valid after, uint64 valid before, string critical options,
 * string extensions (packed (name, data) pairs, names sorted), string
 * reserved, string signature key, string signature. The signature covers
 * every byte before its own length.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sshwire.h"

/* -------------------------------------------------------------- reading */

static sshwire_bytes
get_bytes(sshwire_rd *r) {
  sshwire_bytes b;
  b.p = sshwire_get_str(r, &b.n);
  return b;
}

int
sshwire_cert_next_principal(sshwire_rd *it, sshwire_bytes *out) {
  if (it->err || !it->len)
    return 0;
  *out = get_bytes(it);
  return !it->err;
}

int
sshwire_cert_next_option(sshwire_rd *it, sshwire_bytes *name,
                         sshwire_bytes *data) {
  if (it->err || !it->len)
    return 0;
  *name = get_bytes(it);
  *data = get_bytes(it);
  return !it->err;
}

/* Compare two names as strcmp would compare them as C strings. */
static int
name_cmp(sshwire_bytes a, sshwire_bytes b) {
  int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);
  return c ? c : (a.n > b.n) - (a.n < b.n);
}

/* Whole pairs, names without NULs in strictly increasing order. */
static int
options_ok(sshwire_bytes opts) {
  sshwire_rd it = sshwire_rd_of(opts.p, opts.n);
  sshwire_bytes name, data, prev = {NULL, 0};
  while (sshwire_cert_next_option(&it, &name, &data)) {
    if (memchr(name.p, 0, name.n) || (prev.p && name_cmp(prev, name) >= 0))
      return 0;
    prev = name;
  }
  return !it.err;
}

static int
principals_ok(sshwire_bytes list) {
  sshwire_rd it = sshwire_rd_of(list.p, list.n);
  sshwire_bytes p;
  while (sshwire_cert_next_principal(&it, &p))
    ;
  return !it.err;
}

/* The signature: string { string "ssh-ed25519", string sig[64] }, last. */
static int
read_signature(sshwire_rd *r, sshwire_cert *c) {
  sshwire_rd s = sshwire_get_sub(r);
  size_t n;
  if (r->err || r->len || !sshwire_get_str_is(&s, SSHWIRE_ED25519))
    return -EBADMSG;
  const uint8_t *sig = sshwire_get_str(&s, &n);
  if (!sig || n != SSHWIRE_SIG_LEN || s.len)
    return -EBADMSG;
  memcpy(c->signature, sig, SSHWIRE_SIG_LEN);
  return 0;
}

int
sshwire_cert_parse(const uint8_t *blob, size_t n, sshwire_cert *c) {
  sshwire_rd r = sshwire_rd_of(blob, n);
  size_t kl;
  memset(c, 0, sizeof *c);
  if (!sshwire_get_str_is(&r, SSHWIRE_ED25519_CERT))
    return -EBADMSG;
  c->nonce = get_bytes(&r);
  const uint8_t *key = sshwire_get_str(&r, &kl);
  if (!key || kl != 32)
    return -EBADMSG;
  memcpy(c->key, key, 32);
  c->serial = sshwire_get_u64(&r);
  c->type = sshwire_get_u32(&r);
  c->key_id = get_bytes(&r);
  c->principals = get_bytes(&r);
  c->valid_after = sshwire_get_u64(&r);
  c->valid_before = sshwire_get_u64(&r);
  c->critical = get_bytes(&r);
  c->extensions = get_bytes(&r);
  c->reserved = get_bytes(&r);
  sshwire_bytes ca = get_bytes(&r);
  if (r.err || sshwire_ed25519_parse(ca.p, ca.n, c->ca_key) ||
      !principals_ok(c->principals) || !options_ok(c->critical) ||
      !options_ok(c->extensions))
    return -EBADMSG;
  c->signed_len = n - r.len;
  return read_signature(&r, c);
}

/* -------------------------------------------------------------- writing */

static int
opt_cmp(const void *a, const void *b) {
  return strcmp((*(const sshwire_opt *const *)a)->name,
                (*(const sshwire_opt *const *)b)->name);
}

/* Options sorted by name, each name once; data empty or one string. */
static int
put_options(sshwire_buf *b, const sshwire_opt *o, size_t n) {
  const sshwire_opt *order[SSHWIRE_OPT_MAX];
  sshwire_buf e = {0};
  if (n > SSHWIRE_OPT_MAX)
    return -EINVAL;
  for (size_t i = 0; i < n; i++)
    order[i] = &o[i];
  if (n)
    qsort(order, n, sizeof order[0], opt_cmp);
  for (size_t i = 0; i < n; i++) {
    if (i && !strcmp(order[i - 1]->name, order[i]->name))
      return -EINVAL;
    sshwire_put_cstr(&e, order[i]->name);
    if (!order[i]->value) {
      sshwire_put_str(&e, "", 0);
      continue;
    }
    sshwire_put_u32(&e, (uint32_t)(4 + strlen(order[i]->value)));
    sshwire_put_cstr(&e, order[i]->value);
  }
  sshwire_put_buf(b, &e);
  sshwire_buf_free(&e);
  return 0;
}

static void
put_principals(sshwire_buf *b, const char *const *p, size_t n) {
  sshwire_buf l = {0};
  for (size_t i = 0; i < n; i++)
    sshwire_put_cstr(&l, p[i]);
  sshwire_put_buf(b, &l);
  sshwire_buf_free(&l);
}

int
sshwire_cert_write_body(sshwire_buf *b, const sshwire_cert_spec *s) {
  sshwire_buf ca = {0};
  int rc;
  sshwire_put_cstr(b, SSHWIRE_ED25519_CERT);
  sshwire_put_str(b, s->nonce, s->nonce_len);
  sshwire_put_str(b, s->key, 32);
  sshwire_put_u64(b, s->serial);
  sshwire_put_u32(b, s->type);
  sshwire_put_cstr(b, s->key_id ? s->key_id : "");
  put_principals(b, s->principals, s->nprincipals);
  sshwire_put_u64(b, s->valid_after);
  sshwire_put_u64(b, s->valid_before);
  if ((rc = put_options(b, s->critical, s->ncritical)) ||
      (rc = put_options(b, s->extensions, s->nextensions)))
    return rc;
  sshwire_put_str(b, "", 0); /* reserved */
  sshwire_put_ed25519(&ca, s->ca_key);
  sshwire_put_buf(b, &ca);
  sshwire_buf_free(&ca);
  return b->err ? -ENOMEM : 0;
}

void
sshwire_cert_write_signature(sshwire_buf *b,
                             const uint8_t sig[SSHWIRE_SIG_LEN]) {
  sshwire_buf s = {0};
  sshwire_put_cstr(&s, SSHWIRE_ED25519);
  sshwire_put_str(&s, sig, SSHWIRE_SIG_LEN);
  sshwire_put_buf(b, &s);
  sshwire_buf_free(&s);
}
