/*
 * ssh.c - the signer's OpenSSH side: what its user certificates carry,
 * its KRL file, and the key formats under the signer's names (with
 * BUS_* codes). The bytes are sshwire's; the signing (libsodium's
 * Ed25519) and the random nonce are made here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "signer.h"
#include "sshwire.h"

#define EXT_MAX 16 /* extensions of a certificate, ours and permit-* */

/* ------------------------------------------------------------ key formats */

int
signer_ssh_pub_parse(const char *line, size_t len, uint8_t pk[32]) {
  int rc = sshwire_ed25519_pub_parse(line, len, pk);
  return rc == -ENOMEM ? rc : rc ? BUS_EFIELD : 0;
}

int
signer_ssh_pub_format(const uint8_t pk[32], const char *comment, char *out,
                      size_t cap) {
  int rc = sshwire_ed25519_pub_format(pk, comment, out, cap);
  return rc == -ERANGE ? BUS_ETOO_BIG : rc;
}

void
signer_ssh_fingerprint(const uint8_t pk[32], char out[64]) {
  sshwire_ed25519_fingerprint(pk, out);
}

int
signer_ssh_private_format(const uint8_t pk[32], const uint8_t sk[64],
                          const char *comment, char **out, size_t *len) {
  return sshwire_ed25519_private_format(pk, sk, comment, out, len);
}

int
signer_ssh_private_parse(const char *text, size_t len, uint8_t pk[32],
                         uint8_t sk[64]) {
  int rc = sshwire_ed25519_private_parse(text, len, pk, sk);
  return rc == -ENOMEM ? rc : rc ? BUS_EFIELD : 0;
}

/* ----------------------------------------------------------- certificates */

/* Our extensions <k>@larkbus (data: a string holding the value) and the
 * two permit-* flags (no data); sshwire sorts them as sshd requires. */
static int
extensions(const signer_ssh_cert_spec *s, char names[EXT_MAX][64],
           sshwire_opt *o) {
  int n = 0;
  if (s->next < 0 || s->next > EXT_MAX - 2)
    return -1;
  for (int i = 0; i < s->next; i++) {
    snprintf(names[n], sizeof names[n], "%s@larkbus", s->ext_keys[i]);
    o[n] = (sshwire_opt){names[n], s->ext_vals[i] ? s->ext_vals[i] : ""};
    n++;
  }
  o[n++] = (sshwire_opt){"permit-port-forwarding", NULL};
  o[n++] = (sshwire_opt){"permit-pty", NULL};
  return n;
}

int
signer_ssh_cert_make(const uint8_t ca_pk[32], const uint8_t ca_sk[64],
                     const signer_ssh_cert_spec *s, char **out) {
  char names[EXT_MAX][64];
  sshwire_opt ext[EXT_MAX];
  uint8_t nonce[32], sig[crypto_sign_BYTES];
  sshwire_buf b = {0};
  *out = NULL;
  int next = extensions(s, names, ext);
  if (next < 0 || s->nprincipals < 0)
    return BUS_EFIELD;
  randombytes_buf(nonce, sizeof nonce);
  sshwire_cert_spec w = {.nonce = nonce,
                         .nonce_len = sizeof nonce,
                         .key = s->pk,
                         .serial = s->serial,
                         .type = SSHWIRE_CERT_USER,
                         .key_id = s->key_id,
                         .principals = s->principals,
                         .nprincipals = (size_t)s->nprincipals,
                         .valid_after = s->valid_after,
                         .valid_before = s->valid_before,
                         .extensions = ext,
                         .nextensions = (size_t)next,
                         .ca_key = ca_pk};
  int rc = sshwire_cert_write_body(&b, &w);
  if (!rc) {
    crypto_sign_detached(sig, NULL, b.p, b.len, ca_sk);
    sshwire_cert_write_signature(&b, sig);
    if (b.err || !(*out = sshwire_line_encode(SSHWIRE_ED25519_CERT, b.p, b.len,
                                              s->comment)))
      rc = -ENOMEM;
  }
  sshwire_buf_free(&b);
  return rc == -EINVAL ? BUS_EFIELD : rc;
}

/* ------------------------------------------------------------------- KRL */

int
signer_krl_write(const char *path, const uint8_t ca_pk[32],
                 const uint64_t *serials, size_t n, uint64_t version,
                 int64_t now_s) {
  sshwire_krl *k;
  sshwire_buf b = {0};
  sshwire_krl_head head = {version, (uint64_t)now_s, "larkbus signer"};
  int rc = sshwire_krl_new(&k);
  for (size_t i = 0; !rc && i < n; i++)
    if (serials[i]) /* 0 is no certificate's serial */
      rc = sshwire_krl_add_serials(k, serials[i], serials[i]);
  if (!rc)
    rc = sshwire_krl_write(k, ca_pk, &head, &b);
  if (!rc)
    rc = bus_file_write(path, b.p, b.len, 0644);
  sshwire_buf_free(&b);
  sshwire_krl_free(k);
  return rc;
}
