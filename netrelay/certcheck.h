/*
 * certcheck.h - verify the OpenSSH user certificates the signer issues,
 * for the relay hub (part of larkrelay).
 *
 * libssh 0.10 accepts a user certificate's signature without checking
 * its CA, principals or validity (docs/design.md section 10), so the hub does
 * it here: a certificate is accepted only when it is an
 * ssh-ed25519-cert-v01@openssh.com user certificate, signed (Ed25519,
 * libsodium) by the platform's SSH CA key, inside its validity window,
 * without critical options, carrying the wanted role, a domain and the
 * principal "domain:<domain>", and not revoked.
 *
 * Role and domain are read as the signer writes them: the extensions
 * role@larkbus and domain@larkbus (data: one string), and the key id
 * "<name> role=<r> domain=<d> ...". Either may be missing, but where
 * both are present they must agree.
 *
 * The wire format (the certificate's fields, the signed byte range) is
 * sshwire's; the signature is verified here with libsodium. Revocation
 * is an sshwire_krl set (revoked.h fills the hub's).
 *
 * Functions return 0 or a negative BUS_E* code: BUS_EMALFORMED for input
 * that does not parse, BUS_EDENIED for a certificate refused, -ENOMEM.
 * Where a reason helps, it is written into why (cap bytes). Nothing here
 * logs, exits or reads a clock; all input may be hostile.
 */
#ifndef LARK_RELAY_CERTCHECK_H
#define LARK_RELAY_CERTCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"
#include "sshwire.h"

#define RELAY_MAX_PRINCIPALS 16
#define RELAY_NAME_MAX 64 /* a signer name: [a-z0-9-], at most 63 */

/* What a certificate says, filled by relay_cert_parse. */
typedef struct relay_cert {
  uint8_t key[32];      /* the certified Ed25519 key */
  uint8_t key_hash[32]; /* SHA-256 of its plain wire blob */
  uint8_t ca_key[32];   /* the key that signed it */
  uint64_t serial;
  uint32_t type;                      /* 1 user, 2 host */
  uint64_t valid_after, valid_before; /* unix seconds */
  char key_id[256];
  char principals[RELAY_MAX_PRINCIPALS][256];
  int nprincipals;
  int ncritical; /* critical options present */
  char role[RELAY_NAME_MAX], domain[RELAY_NAME_MAX], cluster[RELAY_NAME_MAX];
  char name[RELAY_NAME_MAX]; /* the key id's first word */
} relay_cert;

/*
 * Parse "ssh-ed25519 <base64> [comment]" (a ca.pub line) into the
 * 32-byte key; relay_ca_load reads the first such line of a file.
 */
int relay_ca_parse(const char *line, size_t len, uint8_t pk[32]);
int relay_ca_load(const char *path, uint8_t pk[32]);

/*
 * Decode "ssh-ed25519-cert-v01@openssh.com <base64> [comment]" (a
 * -cert.pub file's line) into *blob (malloc'd, *n bytes).
 */
int relay_cert_decode(const char *line, size_t len, uint8_t **blob, size_t *n);

/*
 * Parse a certificate's wire blob and verify its signature against the
 * signing key it names (which says nothing yet about who that key is).
 * BUS_EMALFORMED for anything that is not a well-formed Ed25519
 * certificate, BUS_EDENIED when the signature does not verify.
 */
int relay_cert_parse(const uint8_t *blob, size_t len, relay_cert *out,
                     char *why, size_t cap);

/* Whether c is revoked in r (by serial, key id or key). NULL r: no. */
int relay_cert_revoked(const sshwire_krl *r, const relay_cert *c);

/* ----------------------------------------------------------------- check */

typedef struct relay_check {
  const uint8_t *ca_pk;       /* 32 bytes: the platform's SSH CA key */
  uint64_t now;               /* unix seconds */
  const char *role;           /* e.g. "domain" */
  const sshwire_krl *revoked; /* may be NULL */
} relay_check;

/*
 * Parse and verify blob for the hub (see the top of this file). On 0 *out
 * is the certificate; on BUS_EDENIED or BUS_EMALFORMED why says why
 * ("signed by another CA", "expired", "revoked", ...).
 */
int relay_cert_check(const relay_check *chk, const uint8_t *blob, size_t len,
                     relay_cert *out, char *why, size_t cap);

#endif
