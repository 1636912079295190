/*
 * key.c - Ed25519 public keys on the wire: the key blob, its SHA-256
 * hash and fingerprint, and the one-line .pub form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sshwire.h"

void
sshwire_put_ed25519(sshwire_buf *b, const uint8_t pk[32]) {
  sshwire_put_cstr(b, SSHWIRE_ED25519);
  sshwire_put_str(b, pk, 32);
}

int
sshwire_ed25519_parse(const uint8_t *blob, size_t n, uint8_t pk[32]) {
  sshwire_rd r = sshwire_rd_of(blob, n);
  size_t kl;
  if (!sshwire_get_str_is(&r, SSHWIRE_ED25519))
    return -EBADMSG;
  const uint8_t *k = sshwire_get_str(&r, &kl);
  if (!k || kl != 32 || r.len)
    return -EBADMSG;
  memcpy(pk, k, 32);
  return 0;
}

/* The blob in a fixed array: 4 + 11 type, 4 + 32 key. */
static void
blob_of(const uint8_t pk[32], uint8_t out[SSHWIRE_ED25519_BLOB_LEN]) {
  static const uint8_t head[] = {0,   0,   0,   11,  's', 's', 'h',
                                 '-', 'e', 'd', '2', '5', '5', '1',
                                 '9', 0,   0,   0,   32};
  memcpy(out, head, sizeof head);
  memcpy(out + sizeof head, pk, 32);
}

void
sshwire_ed25519_hash(const uint8_t pk[32], uint8_t out[32]) {
  uint8_t blob[SSHWIRE_ED25519_BLOB_LEN];
  blob_of(pk, blob);
  crypto_hash_sha256(out, blob, sizeof blob);
}

void
sshwire_ed25519_fingerprint(const uint8_t pk[32], char out[SSHWIRE_FP_MAX]) {
  uint8_t h[32];
  sshwire_ed25519_hash(pk, h);
  memcpy(out, "SHA256:", 7);
  sodium_bin2base64(out + 7, SSHWIRE_FP_MAX - 7, h, sizeof h,
                    sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

int
sshwire_ed25519_pub_parse(const char *line, size_t len, uint8_t pk[32]) {
  uint8_t *blob;
  size_t n;
  int rc = sshwire_line_decode(SSHWIRE_ED25519, line, len, &blob, &n);
  if (rc)
    return rc;
  rc = sshwire_ed25519_parse(blob, n, pk);
  free(blob);
  return rc;
}

int
sshwire_ed25519_pub_format(const uint8_t pk[32], const char *comment, char *out,
                           size_t cap) {
  uint8_t blob[SSHWIRE_ED25519_BLOB_LEN];
  blob_of(pk, blob);
  char *s = sshwire_line_encode(SSHWIRE_ED25519, blob, sizeof blob, comment);
  if (!s)
    return -ENOMEM;
  int n = snprintf(out, cap, "%s", s);
  free(s);
  return n < 0 || (size_t)n >= cap ? -ERANGE : 0;
}
