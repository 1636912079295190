/*
 * relay-int.h - what larkrelay's files share and nobody else sees.
 */
#ifndef LARK_RELAY_INT_H
#define LARK_RELAY_INT_H

#include <stddef.h>
#include <stdint.h>

/* A bounded reader over SSH wire data; err sticks once set. */
typedef struct relay__cur {
  const uint8_t *p;
  size_t len;
  int err;
} relay__cur;

uint32_t relay__u32(relay__cur *c);
uint64_t relay__u64(relay__cur *c);
/* A length-prefixed string: its bytes (n of them) or NULL. */
const uint8_t *relay__str(relay__cur *c, size_t *n);
int relay__str_is(relay__cur *c, const char *want);
/* An "ssh-ed25519" public key blob into pk; BUS_EMALFORMED otherwise. */
int relay__ed_blob(const uint8_t *blob, size_t n, uint8_t pk[32]);
/* SHA-256 of an Ed25519 key's plain wire blob (what KRLs name). */
void relay__key_hash(const uint8_t pk[32], uint8_t out[32]);

#endif
