/*
 * serial.c - certificate serials: random, and named in lower-case hex
 * (16 digits for SSH, 32 for X.509) everywhere the platform shows them.
 */
#include <sodium.h>

#include "signer-int.h"

void
signer__serial_hex(const uint8_t *b, size_t n, char *out) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = hex[b[i] >> 4];
    out[2 * i + 1] = hex[b[i] & 15];
  }
  out[2 * n] = 0;
}

uint64_t
signer__serial_ssh(char hex[SIGNER_SERIAL_MAX]) {
  uint8_t b[8];
  do
    randombytes_buf(b, sizeof b);
  while (!(b[0] & 0x7f)); /* never 0, never above INT64_MAX */
  b[0] &= 0x7f;
  signer__serial_hex(b, sizeof b, hex);
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof b; i++)
    v = v << 8 | b[i];
  return v;
}

void
signer__serial_x509(uint8_t b[16], char hex[SIGNER_SERIAL_MAX]) {
  randombytes_buf(b, 16);
  b[0] = (uint8_t)((b[0] & 0x7f) | 0x40);
  signer__serial_hex(b, 16, hex);
}
