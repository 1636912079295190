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

/* 16 random hex digits (SSH, u64) or 32 (X.509, top bit clear). */
void signer__serial_hex(const uint8_t *b, size_t n, char *out);

#endif
