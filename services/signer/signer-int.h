/*
 * signer-int.h - what the signer's files share and nobody else sees.
 */
#ifndef LARK_SIGNER_INT_H
#define LARK_SIGNER_INT_H

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "signer.h"

struct signer_ca {
  EVP_PKEY *key;   /* X.509 CA key (P-256); OpenSSL clears it on free */
  X509 *cert;      /* the self-signed CA certificate */
  char *pem;       /* its PEM */
  uint8_t *ssh_sk; /* sodium_malloc'd, 64 bytes */
  uint8_t ssh_pk[32];
  char ssh_pub[160];
  char x509_fp[64], ssh_fp[64];
};

/* X.509 half of the CA: make a key and self-signed certificate. */
int signer__x509_ca_make(EVP_PKEY **key, X509 **cert);
/* "SHA256:<base64>" of a public key's SubjectPublicKeyInfo. */
int signer__spki_fp(EVP_PKEY *k, char out[64]);
/* Issue an X.509 certificate for req (role format X.509). */
int signer__x509_issue(const signer_ca *ca, const signer_req *req,
                       signer_cert *out, char *err, size_t cap);
/* PEM of an object into a malloc'd string. */
char *signer__x509_pem(X509 *x);

/* host.c: 1 when s is a DNS name: labels of [a-z0-9-], 1 to 63, not
 * starting or ending with '-', joined by single dots, at most
 * SIGNER_HOST_MAX in all (signer_host_is_ip is the address half). */
int signer__host_is_dns(const char *s);

/* serial.c: n bytes as 2n lower-case hex digits and a NUL. */
void signer__serial_hex(const uint8_t *b, size_t n, char *out);
/* A random SSH serial (never 0, never above INT64_MAX) and its 16 hex
 * digits. */
uint64_t signer__serial_ssh(char hex[SIGNER_SERIAL_MAX]);
/* 16 random bytes for an X.509 serial (top bits 01: positive, never
 * shorter than 16 bytes) and their 32 hex digits. */
void signer__serial_x509(uint8_t b[16], char hex[SIGNER_SERIAL_MAX]);

/* The view's tables (records.c and the files that read them). */
#define T_CERTS "certs"
#define T_REVOKED "revoked"
#define T_CA "ca"
#define T_REQ "requests"

/* The row of an event: its data d plus {seq, ts, actor}. */
void signer__pack_record(msgpack_packer *pk, const bus_event *ev,
                         const msgpack_object *d);
/* The serial a cert event is about (its subject's last token), which
 * must equal its data's serial (field). */
int signer__serial_of(const bus_event *ev, bus_str field, char *serial,
                      size_t cap);
int signer__put_record(bus_txn *t, const char *table, const char *key,
                       const bus_event *ev);
/* One stored row decoded into z. */
int signer__unpack(const void *val, size_t len, msgpack_zone *z,
                   msgpack_object *o);
/* One field of a stored row: a string into buf (cap bytes, "" when
 * absent) or an integer into num (0 when absent); either may be NULL.
 * BUS_ECORRUPT when the row is not a map. */
int signer__row_get(const void *val, size_t len, const char *key, char *buf,
                    size_t cap, int64_t *num);

#endif
