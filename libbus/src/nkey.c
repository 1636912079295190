/*
 * nkey.c - NATS user nkeys (Ed25519) with libsodium.
 *
 * A seed is base32 (RFC 4648 alphabet, no padding) of
 *   [0x90 | (0xa0 >> 5), (0xa0 & 31) << 3, 32-byte Ed25519 seed, crc16 LE]
 * which reads "SU..." (58 chars); a public key is base32 of
 *   [0xa0, 32-byte public key, crc16 LE]
 * which reads "U..." (56 chars). crc16 is CRC-16/XMODEM, as nats does.
 * Every buffer that held seed bytes is wiped with sodium_memzero before
 * it goes out of scope, on error paths too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "bus-int.h"

#define PREFIX_SEED (18 << 3)
#define PREFIX_USER (20 << 3)
#define SEED_RAW 36
#define PUB_RAW 35

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static uint16_t
crc16(const uint8_t *p, size_t n) {
  uint16_t crc = 0;
  for (size_t i = 0; i < n; i++) {
    crc ^= (uint16_t)(p[i] << 8);
    for (int b = 0; b < 8; b++)
      crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                           : (uint16_t)(crc << 1);
  }
  return crc;
}

/* Encode n bytes into out (which holds ceil(n*8/5)+1 chars). */
static void
b32_encode(const uint8_t *in, size_t n, char *out) {
  unsigned buf = 0;
  int bits = 0;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    buf = (buf << 8) | in[i];
    bits += 8;
    while (bits >= 5) {
      out[o++] = b32[(buf >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0)
    out[o++] = b32[(buf << (5 - bits)) & 31];
  out[o] = 0;
  buf = 0;
}

/* Decode exactly cap bytes from s; -1 on a bad character or length. */
static int
b32_decode(const char *s, uint8_t *out, size_t cap) {
  unsigned buf = 0;
  int bits = 0;
  size_t o = 0;
  for (; *s; s++) {
    const char *p = strchr(b32, *s);
    if (!p || !*s)
      return -1;
    buf = (buf << 5) | (unsigned)(p - b32);
    bits += 5;
    if (bits >= 8) {
      if (o == cap)
        return -1;
      out[o++] = (uint8_t)(buf >> (bits - 8));
      bits -= 8;
    }
  }
  buf = 0;
  return o == cap ? 0 : -1;
}

static void
encode_pub(const uint8_t pk[32], char pub[BUS_NKEY_PUB_LEN + 1]) {
  uint8_t raw[PUB_RAW];
  raw[0] = PREFIX_USER;
  memcpy(raw + 1, pk, 32);
  uint16_t crc = crc16(raw, 33);
  raw[33] = (uint8_t)(crc & 0xff);
  raw[34] = (uint8_t)(crc >> 8);
  b32_encode(raw, sizeof raw, pub);
}

static int
sodium_ready(void) {
  if (sodium_init() < 0)
    return BUS_ERR(BUS_EBROKER, "libsodium failed to initialise");
  return 0;
}

/* The 32 seed bytes of a "SU..." seed, checked; wiped by the caller. */
static int
decode_seed(const char *seed, uint8_t out[32]) {
  uint8_t raw[SEED_RAW];
  int rc = 0;
  if (!seed || strlen(seed) != BUS_NKEY_SEED_LEN ||
      b32_decode(seed, raw, sizeof raw) < 0) {
    rc = BUS_ERR(BUS_EINVAL, "not an nkey seed");
    goto out;
  }
  uint16_t crc = (uint16_t)(raw[34] | (raw[35] << 8));
  if (crc16(raw, 34) != crc) {
    rc = BUS_ERR(BUS_EINVAL, "nkey seed checksum mismatch");
    goto out;
  }
  if ((raw[0] & 0xf8) != PREFIX_SEED ||
      (((raw[0] & 7) << 5) | (raw[1] >> 3)) != PREFIX_USER) {
    rc = BUS_ERR(BUS_EINVAL, "nkey seed is not a user seed (SU...)");
    goto out;
  }
  memcpy(out, raw + 2, 32);
out:
  sodium_memzero(raw, sizeof raw);
  return rc;
}

int
bus_nkey_public(const char *seed, char pub[BUS_NKEY_PUB_LEN + 1]) {
  uint8_t s[32], pk[32], sk[64];
  int rc = sodium_ready();
  if (rc == 0)
    rc = decode_seed(seed, s);
  if (rc == 0) {
    crypto_sign_seed_keypair(pk, sk, s);
    encode_pub(pk, pub);
  }
  sodium_memzero(s, sizeof s);
  sodium_memzero(sk, sizeof sk);
  return rc;
}

int
bus_nkey_create(char seed[BUS_NKEY_SEED_LEN + 1],
                char pub[BUS_NKEY_PUB_LEN + 1]) {
  uint8_t raw[SEED_RAW], pk[32], sk[64];
  int rc = sodium_ready();
  if (rc < 0)
    return rc;
  raw[0] = PREFIX_SEED | (PREFIX_USER >> 5);
  raw[1] = (PREFIX_USER & 31) << 3;
  randombytes_buf(raw + 2, 32);
  uint16_t crc = crc16(raw, 34);
  raw[34] = (uint8_t)(crc & 0xff);
  raw[35] = (uint8_t)(crc >> 8);
  b32_encode(raw, sizeof raw, seed);
  crypto_sign_seed_keypair(pk, sk, raw + 2);
  encode_pub(pk, pub);
  sodium_memzero(raw, sizeof raw);
  sodium_memzero(sk, sizeof sk);
  return 0;
}

/*
 * The file is the block nats tools write, which nats.c's seed reader
 * accepts; it is created 0600 (O_EXCL on a temporary name, then renamed)
 * so the seed is never readable by others, not even briefly.
 */
int
bus_nkey_write(const char *path, const char *seed) {
  char pub[BUS_NKEY_PUB_LEN + 1], body[256];
  int rc = bus_nkey_public(seed, pub);
  if (rc < 0)
    return rc;
  int n = snprintf(body, sizeof body,
                   "-----BEGIN USER NKEY SEED-----\n%s\n"
                   "------END USER NKEY SEED------\n",
                   seed);
  rc = bus_file_write(path, body, (size_t)n, 0600);
  sodium_memzero(body, sizeof body);
  return rc;
}

int
bus__creds_seed(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]) {
  char line[256];
  int found = 0;
  FILE *f = fopen(path, "re");
  if (!f) {
    int e = errno ? errno : EIO;
    return BUS_ERR(-e, "cannot read creds %s: %s", path, strerror(e));
  }
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n \t")] = 0;
    found = strncmp(line, "SU", 2) == 0 && strlen(line) == BUS_NKEY_SEED_LEN;
  }
  fclose(f);
  if (found)
    memcpy(seed, line, BUS_NKEY_SEED_LEN + 1);
  sodium_memzero(line, sizeof line);
  return found ? 0 : BUS_ERR(BUS_EAUTH, "no nkey seed (SU...) in %s", path);
}

int
bus__nkey_sign(const char *path, const char *nonce, unsigned char sig[64]) {
  char text[BUS_NKEY_SEED_LEN + 1];
  uint8_t seed[32], pk[32], sk[64];
  int rc = sodium_ready();
  if (rc == 0)
    rc = bus__creds_seed(path, text);
  if (rc == 0)
    rc = decode_seed(text, seed);
  if (rc == 0) {
    crypto_sign_seed_keypair(pk, sk, seed);
    crypto_sign_detached(sig, NULL, (const unsigned char *)nonce, strlen(nonce),
                         sk);
  }
  sodium_memzero(text, sizeof text);
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(sk, sizeof sk);
  return rc;
}
