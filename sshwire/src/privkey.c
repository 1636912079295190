/*
 * privkey.c - unencrypted OpenSSH private key files (PROTOCOL.key) for
 * one Ed25519 key, written and read. Every buffer that holds the secret
 * is wiped: writers are marked secret, decoded bytes live in sodium
 * memory.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "sshwire.h"

#define PRIV_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----\n"
#define PRIV_END "-----END OPENSSH PRIVATE KEY-----\n"
#define PRIV_END_LINE "-----END OPENSSH PRIVATE KEY-----"
#define PRIV_MAGIC "openssh-key-v1" /* written with its NUL */
#define WRAP 70

/* The private section: check integers, the key, comment, padding to 8. */
static void
put_private_section(sshwire_buf *s, const uint8_t pk[32], const uint8_t sk[64],
                    const char *comment) {
  uint32_t check = randombytes_random();
  sshwire_put_u32(s, check);
  sshwire_put_u32(s, check);
  sshwire_put_ed25519(s, pk);
  sshwire_put_str(s, sk, 64);
  sshwire_put_cstr(s, comment ? comment : "");
  for (uint8_t pad = 1; s->len % 8; pad++)
    sshwire_put_u8(s, pad);
}

/* Base64 in lines of 70 between the armour lines, into sodium memory. */
static int
armour(const sshwire_buf *b, char **out, size_t *len) {
  size_t cap =
      sodium_base64_encoded_len(b->len, sodium_base64_VARIANT_ORIGINAL);
  size_t total = strlen(PRIV_BEGIN) + strlen(PRIV_END) + cap + cap / WRAP + 2;
  char *b64 = sodium_malloc(cap), *o = sodium_malloc(total);
  if (!b64 || !o) {
    sodium_free(b64);
    sodium_free(o);
    return -ENOMEM;
  }
  sodium_bin2base64(b64, cap, b->p, b->len, sodium_base64_VARIANT_ORIGINAL);
  size_t n = strlen(b64), at = (size_t)snprintf(o, total, PRIV_BEGIN);
  for (size_t i = 0; i < n; i += WRAP) {
    size_t l = n - i < WRAP ? n - i : WRAP;
    memcpy(o + at, b64 + i, l);
    at += l;
    o[at++] = '\n';
  }
  at += (size_t)snprintf(o + at, total - at, PRIV_END);
  sodium_free(b64);
  *out = o;
  *len = at;
  return 0;
}

int
sshwire_ed25519_private_format(const uint8_t pk[32], const uint8_t sk[64],
                               const char *comment, char **out, size_t *len) {
  sshwire_buf b = {.secret = 1}, sec = {.secret = 1}, pub = {0};
  int rc = -ENOMEM;
  *out = NULL;
  sshwire_put(&b, PRIV_MAGIC, sizeof PRIV_MAGIC);
  sshwire_put_cstr(&b, "none"); /* cipher */
  sshwire_put_cstr(&b, "none"); /* kdf */
  sshwire_put_str(&b, "", 0);   /* kdf options */
  sshwire_put_u32(&b, 1);       /* keys */
  sshwire_put_ed25519(&pub, pk);
  sshwire_put_buf(&b, &pub);
  put_private_section(&sec, pk, sk, comment);
  sshwire_put_buf(&b, &sec);
  if (!b.err)
    rc = armour(&b, out, len);
  sshwire_buf_free(&b);
  sshwire_buf_free(&sec);
  sshwire_buf_free(&pub);
  return rc;
}

/* The decoded file: header, one public key, the private section. */
static int
read_key(sshwire_rd *r, uint8_t pk[32], uint8_t sk[64]) {
  size_t n, kl;
  if (r->len < sizeof PRIV_MAGIC || memcmp(r->p, PRIV_MAGIC, sizeof PRIV_MAGIC))
    return -EBADMSG;
  r->p += sizeof PRIV_MAGIC;
  r->len -= sizeof PRIV_MAGIC;
  if (!sshwire_get_str_is(r, "none") || !sshwire_get_str_is(r, "none") ||
      !sshwire_get_str(r, &n) || sshwire_get_u32(r) != 1 ||
      !sshwire_get_str(r, &n))
    return -EBADMSG;
  sshwire_rd s = sshwire_get_sub(r);
  if (s.err || sshwire_get_u32(&s) != sshwire_get_u32(&s) ||
      !sshwire_get_str_is(&s, SSHWIRE_ED25519))
    return -EBADMSG;
  const uint8_t *p = sshwire_get_str(&s, &n);
  const uint8_t *k = sshwire_get_str(&s, &kl);
  if (s.err || n != 32 || kl != 64 || memcmp(p, k + 32, 32))
    return -EBADMSG;
  memcpy(pk, p, 32);
  memcpy(sk, k, 64);
  return 0;
}

int
sshwire_ed25519_private_parse(const char *text, size_t len, uint8_t pk[32],
                              uint8_t sk[64]) {
  size_t bl = strlen(PRIV_BEGIN), el = strlen(PRIV_END), raw_len = 0;
  if (!text || len < bl + el || memcmp(text, PRIV_BEGIN, bl))
    return -EBADMSG;
  const char *end =
      memmem(text + bl, len - bl, PRIV_END_LINE, strlen(PRIV_END_LINE));
  if (!end)
    return -EBADMSG;
  size_t b64len = (size_t)(end - (text + bl));
  uint8_t *raw = sodium_malloc(b64len + 1);
  if (!raw)
    return -ENOMEM;
  int rc = -EBADMSG;
  if (!sodium_base642bin(raw, b64len + 1, text + bl, b64len, "\r\n", &raw_len,
                         NULL, sodium_base64_VARIANT_ORIGINAL)) {
    sshwire_rd r = sshwire_rd_of(raw, raw_len);
    rc = read_key(&r, pk, sk);
  }
  sodium_free(raw);
  return rc;
}
