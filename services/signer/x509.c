/*
 * x509.c - the X.509 side: the CA certificate, issuing from a CSR, the
 * CRL, and the client's key and CSR.
 *
 * A CSR is outside input: it is parsed from a bounded memory buffer,
 * must hold a P-256 key and verify under it, and only its public key is
 * used. Subject, SANs and extensions are built from the request's role
 * and names, which the caller has checked are [a-z0-9-] names, so they
 * can never inject anything into OpenSSL's extension syntax. Serials are
 * 16 random bytes, top bit clear and second bit set, so each is a
 * positive integer of exactly 32 hex digits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "signer-int.h"

#define CSR_MAX (16 * 1024)
#define CA_YEARS 10

char *
signer__x509_pem(X509 *x) {
  BIO *b = BIO_new(BIO_s_mem());
  char *out = NULL, *p;
  if (b && PEM_write_bio_X509(b, x)) {
    long n = BIO_get_mem_data(b, &p);
    if (n > 0 && (out = malloc((size_t)n + 1))) {
      memcpy(out, p, (size_t)n);
      out[n] = 0;
    }
  }
  BIO_free(b);
  return out;
}

int
signer__spki_fp(EVP_PKEY *k, char out[64]) {
  unsigned char *der = NULL, h[crypto_hash_sha256_BYTES];
  int n = i2d_PUBKEY(k, &der);
  if (n <= 0)
    return BUS_EINVAL;
  crypto_hash_sha256(h, der, (unsigned long long)n);
  OPENSSL_free(der);
  memcpy(out, "SHA256:", 7);
  sodium_bin2base64(out + 7, 64 - 7, h, sizeof h,
                    sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
  return 0;
}

static int
add_ext(X509 *x, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
  X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  int ok = e && X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
  return ok ? 0 : BUS_EINVAL;
}

/* 16 random bytes as an ASN.1 INTEGER, and its hex. */
static int
set_serial(X509 *x, char hex[SIGNER_SERIAL_MAX]) {
  uint8_t b[16];
  signer__serial_x509(b, hex);
  BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
  ASN1_INTEGER *ai = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
  int ok = ai && X509_set_serialNumber(x, ai);
  ASN1_INTEGER_free(ai);
  BN_free(bn);
  return ok ? 0 : -ENOMEM;
}

static int
set_times(X509 *x, int64_t nb_ns, int64_t na_ns) {
  time_t nb = (time_t)(nb_ns / 1000000000), na = (time_t)(na_ns / 1000000000);
  return ASN1_TIME_set(X509_getm_notBefore(x), nb) &&
                 ASN1_TIME_set(X509_getm_notAfter(x), na)
             ? 0
             : BUS_EINVAL;
}

int
signer__x509_ca_make(EVP_PKEY **key, X509 **cert) {
  char hex[SIGNER_SERIAL_MAX];
  int rc = -ENOMEM;
  *cert = NULL;
  *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  X509 *x = X509_new();
  X509_NAME *n = X509_NAME_new();
  if (!*key || !x || !n)
    goto out;
  X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
                             (const unsigned char *)"larkbus", -1, -1, 0);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
                             (const unsigned char *)"larkbus CA", -1, -1, 0);
  int64_t now = (int64_t)time(NULL) * 1000000000;
  if (!X509_set_version(x, 2) || set_serial(x, hex) ||
      !X509_set_subject_name(x, n) || !X509_set_issuer_name(x, n) ||
      set_times(x, now - 60000000000LL,
                now + (int64_t)CA_YEARS * 365 * 86400 * 1000000000) ||
      !X509_set_pubkey(x, *key) ||
      add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      add_ext(x, x, NID_subject_key_identifier, "hash") ||
      add_ext(x, x, NID_authority_key_identifier, "keyid:always") ||
      !X509_sign(x, *key, EVP_sha256()))
    goto out;
  *cert = x;
  x = NULL;
  rc = 0;
out:
  X509_NAME_free(n);
  X509_free(x);
  if (rc) {
    EVP_PKEY_free(*key);
    *key = NULL;
  }
  return rc;
}

/* ---------------------------------------------------------------- issuing */

static int
fail(char *err, size_t cap, int rc, const char *msg) {
  snprintf(err, cap, "%s", msg);
  return rc;
}

/* The CSR's key, when the CSR is a P-256 request that verifies. */
static EVP_PKEY *
csr_key(const signer_req *req, char *err, size_t cap) {
  EVP_PKEY *k = NULL;
  char group[32] = "";
  if (!req->csr || !req->csr_len || req->csr_len > CSR_MAX) {
    fail(err, cap, 0, "csr: a PEM certificate request is required");
    return NULL;
  }
  BIO *b = BIO_new_mem_buf(req->csr, (int)req->csr_len);
  X509_REQ *r = b ? PEM_read_bio_X509_REQ(b, NULL, NULL, NULL) : NULL;
  EVP_PKEY *pk = r ? X509_REQ_get0_pubkey(r) : NULL;
  if (!pk)
    fail(err, cap, 0, "csr: not a PEM certificate request");
  else if (!EVP_PKEY_is_a(pk, "EC") ||
           !EVP_PKEY_get_utf8_string_param(pk, OSSL_PKEY_PARAM_GROUP_NAME,
                                           group, sizeof group, NULL) ||
           strcmp(group, "prime256v1"))
    fail(err, cap, 0, "csr: the key must be ECDSA P-256");
  else if (X509_REQ_verify(r, pk) != 1)
    fail(err, cap, 0, "csr: its signature does not verify");
  else if (EVP_PKEY_up_ref(pk))
    k = pk;
  X509_REQ_free(r);
  BIO_free(b);
  ERR_clear_error();
  return k;
}

static int
has(const char *s) {
  return s && *s;
}

/* The private extension: DER UTF8String "role=..;name=..[;..]". */
static int
add_private_ext(X509 *x, const char *value) {
  ASN1_OBJECT *obj = OBJ_txt2obj(SIGNER_OID, 1);
  ASN1_UTF8STRING *u = ASN1_UTF8STRING_new();
  ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
  unsigned char *der = NULL;
  int rc = -ENOMEM, n;
  if (!obj || !u || !os || !ASN1_STRING_set(u, value, (int)strlen(value)))
    goto out;
  if ((n = i2d_ASN1_UTF8STRING(u, &der)) <= 0 ||
      !ASN1_OCTET_STRING_set(os, der, n))
    goto out;
  X509_EXTENSION *e = X509_EXTENSION_create_by_OBJ(NULL, obj, 0, os);
  rc = e && X509_add_ext(x, e, -1) ? 0 : -ENOMEM;
  X509_EXTENSION_free(e);
out:
  OPENSSL_free(der);
  ASN1_OCTET_STRING_free(os);
  ASN1_UTF8STRING_free(u);
  ASN1_OBJECT_free(obj);
  return rc;
}

/* The names a certificate is for, before its URIs: a gateway's loopback
 * addresses and the hosts asked; an agent's or peer's DNS name; none for
 * a person (admin, user). Each entry ends in a comma. */
static size_t
san_hosts(const signer_req *r, char *san, size_t cap) {
  size_t s = 0;
  if (!strcmp(r->role, "gateway")) {
    s += (size_t)snprintf(san, cap, "IP:127.0.0.1,IP:::1,DNS:localhost,");
    for (int i = 0; i < r->nhosts && s < cap; i++)
      if (strcmp(r->hosts[i], "127.0.0.1") && strcmp(r->hosts[i], "::1") &&
          strcmp(r->hosts[i], "localhost"))
        s += (size_t)snprintf(san + s, cap - s, "%s:%s,",
                              signer_host_is_ip(r->hosts[i]) ? "IP" : "DNS",
                              r->hosts[i]);
  } else if (strcmp(r->role, "admin") && strcmp(r->role, "user")) {
    s += (size_t)snprintf(san, cap, "DNS:%s,", r->name);
  }
  return s;
}

/* Metadata "k=v" pairs joined by sep, and the SANs. */
static void
metadata(const signer_req *r, signer_cert *c, char *meta, size_t mcap,
         char *san, size_t scap) {
  const char *keys[] = {"role", "name", "domain", "cluster", "agent"};
  const char *vals[] = {r->role, r->name, r->domain, r->cluster, r->agent};
  size_t m = 0, s = san_hosts(r, san, scap);
  c->nprincipals = 0;
  for (int i = 0; i < 5; i++) {
    if (!has(vals[i]))
      continue;
    m += (size_t)snprintf(meta + m, mcap - m, "%s%s=%s", m ? ";" : "", keys[i],
                          vals[i]);
    s += (size_t)snprintf(san + s, scap - s, "URI:urn:larkbus:%s:%s,", keys[i],
                          vals[i]);
    snprintf(c->principals[c->nprincipals++], sizeof c->principals[0],
             "urn:larkbus:%s:%s", keys[i], vals[i]);
  }
  if (s)
    san[s - 1] = 0;
}

/* Extended key usage: people are clients only, a gateway serves HTTPS
 * and dials as a client, agents and peers are both. */
static const char *
role_eku(const char *role) {
  if (!strcmp(role, "admin") || !strcmp(role, "user"))
    return "clientAuth";
  if (!strcmp(role, "gateway"))
    return "serverAuth,clientAuth";
  return "clientAuth,serverAuth";
}

/* GnuTLS (libtasn1) cannot decode an OID arc wider than a long, so a
 * certificate carrying the private extension's 2.25.<UUID> OID does not
 * parse there at all: lark-gateway's HTTPS (libmicrohttpd on GnuTLS)
 * would fail the handshake of every user. The roles it meets (user, its
 * clients; gateway, itself) carry role and name in OU, CN and the SAN
 * URIs only. */
static int
private_ext_for(const char *role) {
  return strcmp(role, "user") && strcmp(role, "gateway");
}

static int
build_name(X509 *x, const signer_req *r, signer_cert *c) {
  X509_NAME *n = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
                             (const unsigned char *)"larkbus", -1, -1, 0);
  X509_NAME_add_entry_by_txt(n, "OU", MBSTRING_ASC,
                             (const unsigned char *)r->role, -1, -1, 0);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
                             (const unsigned char *)r->name, -1, -1, 0);
  snprintf(c->subject, sizeof c->subject, "O=larkbus, OU=%s, CN=%s", r->role,
           r->name);
  return 0;
}

static int
build(X509 *x, const signer_ca *ca, const signer_req *r, EVP_PKEY *k,
      signer_cert *c) {
  char meta[512], san[SIGNER_MAX_HOSTS * (SIGNER_HOST_MAX + 8) + 1024];
  const char *eku = role_eku(r->role);
  metadata(r, c, meta, sizeof meta, san, sizeof san);
  if (!X509_set_version(x, 2) || set_serial(x, c->serial) ||
      !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
      build_name(x, r, c) || set_times(x, r->not_before, r->not_after) ||
      !X509_set_pubkey(x, k) ||
      add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
      add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") ||
      add_ext(x, ca->cert, NID_ext_key_usage, eku) ||
      add_ext(x, ca->cert, NID_subject_key_identifier, "hash") ||
      add_ext(x, ca->cert, NID_authority_key_identifier, "keyid") ||
      add_ext(x, ca->cert, NID_subject_alt_name, san) ||
      (private_ext_for(r->role) && add_private_ext(x, meta)) ||
      !X509_sign(x, ca->key, EVP_sha256()))
    return -ENOMEM;
  return 0;
}

int
signer__x509_issue(const signer_ca *ca, const signer_req *req, signer_cert *out,
                   char *err, size_t cap) {
  EVP_PKEY *k = csr_key(req, err, cap);
  if (!k)
    return BUS_EFIELD;
  X509 *x = X509_new();
  int rc = x ? build(x, ca, req, k, out) : -ENOMEM;
  if (!rc && signer__spki_fp(k, out->fingerprint))
    rc = -ENOMEM;
  if (!rc && !(out->text = signer__x509_pem(x)))
    rc = -ENOMEM;
  if (rc)
    fail(err, cap, rc, "could not build the certificate");
  out->format = SIGNER_X509;
  out->not_before = req->not_before / 1000000000 * 1000000000;
  out->not_after = req->not_after / 1000000000 * 1000000000;
  X509_free(x);
  EVP_PKEY_free(k);
  ERR_clear_error();
  return rc;
}

/* -------------------------------------------------------------------- CRL */

static int
crl_add(X509_CRL *crl, const signer_revoked *r) {
  BIGNUM *bn = NULL;
  if (!BN_hex2bn(&bn, r->serial))
    return BUS_EINVAL;
  ASN1_INTEGER *ai = BN_to_ASN1_INTEGER(bn, NULL);
  ASN1_TIME *t = ASN1_TIME_set(NULL, (time_t)(r->when / 1000000000));
  X509_REVOKED *rv = X509_REVOKED_new();
  int ok = ai && t && rv && X509_REVOKED_set_serialNumber(rv, ai) &&
           X509_REVOKED_set_revocationDate(rv, t) &&
           X509_CRL_add0_revoked(crl, rv);
  if (!ok)
    X509_REVOKED_free(rv);
  ASN1_INTEGER_free(ai);
  ASN1_TIME_free(t);
  BN_free(bn);
  return ok ? 0 : -ENOMEM;
}

static int
crl_number(X509_CRL *crl, uint64_t number) {
  ASN1_INTEGER *n = ASN1_INTEGER_new();
  int ok = n && ASN1_INTEGER_set_uint64(n, number) &&
           X509_CRL_add1_ext_i2d(crl, NID_crl_number, n, 0, 0);
  ASN1_INTEGER_free(n);
  return ok ? 0 : -ENOMEM;
}

static int
crl_save(X509_CRL *crl, const char *path) {
  BIO *b = BIO_new(BIO_s_mem());
  char *p;
  int rc = -ENOMEM;
  if (b && PEM_write_bio_X509_CRL(b, crl)) {
    long n = BIO_get_mem_data(b, &p);
    rc = bus_file_write(path, p, (size_t)n, 0644);
  }
  BIO_free(b);
  return rc;
}

int
signer_crl_write(const signer_ca *ca, const char *path,
                 const signer_revoked *revoked, size_t n, uint64_t number,
                 int64_t now_s) {
  X509_CRL *crl = X509_CRL_new();
  ASN1_TIME *last = ASN1_TIME_set(NULL, (time_t)now_s);
  ASN1_TIME *next = ASN1_TIME_set(NULL, (time_t)(now_s + 7 * 86400));
  int rc = -ENOMEM;
  if (!crl || !last || !next || !X509_CRL_set_version(crl, 1) ||
      !X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca->cert)) ||
      !X509_CRL_set1_lastUpdate(crl, last) ||
      !X509_CRL_set1_nextUpdate(crl, next))
    goto out;
  for (size_t i = 0; i < n; i++)
    if ((rc = crl_add(crl, &revoked[i])))
      goto out;
  X509_CRL_sort(crl);
  if ((rc = crl_number(crl, number)))
    goto out;
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, ca->cert, NULL, NULL, crl, 0);
  X509_EXTENSION *e =
      X509V3_EXT_conf_nid(NULL, &ctx, NID_authority_key_identifier, "keyid");
  int ok = e && X509_CRL_add_ext(crl, e, -1);
  X509_EXTENSION_free(e);
  rc = ok && X509_CRL_sign(crl, ca->key, EVP_sha256()) ? crl_save(crl, path)
                                                       : -ENOMEM;
out:
  ASN1_TIME_free(last);
  ASN1_TIME_free(next);
  X509_CRL_free(crl);
  ERR_clear_error();
  return rc;
}

/* ------------------------------------------------------------ client side */

static char *
bio_take(BIO *b, size_t *len, int secret) {
  char *p, *out = NULL;
  long n = BIO_get_mem_data(b, &p);
  if (n <= 0)
    return NULL;
  out = secret ? sodium_malloc((size_t)n + 1) : malloc((size_t)n + 1);
  if (out) {
    memcpy(out, p, (size_t)n);
    out[n] = 0;
    if (len)
      *len = (size_t)n;
  }
  if (secret)
    OPENSSL_cleanse(p, (size_t)n);
  return out;
}

int
signer_x509_request(const char *name, char **key_pem, size_t *key_len,
                    char **csr_pem) {
  int rc = -ENOMEM;
  *key_pem = *csr_pem = NULL;
  EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  X509_REQ *r = X509_REQ_new();
  BIO *kb = BIO_new(BIO_s_secmem()), *cb = BIO_new(BIO_s_mem());
  if (!k || !r || !kb || !cb)
    goto out;
  X509_NAME *n = X509_REQ_get_subject_name(r);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8,
                             (const unsigned char *)name, -1, -1, 0);
  if (!X509_REQ_set_pubkey(r, k) || !X509_REQ_sign(r, k, EVP_sha256()) ||
      !PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL) ||
      !PEM_write_bio_X509_REQ(cb, r))
    goto out;
  *key_pem = bio_take(kb, key_len, 1);
  *csr_pem = bio_take(cb, NULL, 0);
  if (*key_pem && *csr_pem)
    rc = 0;
out:
  if (rc) {
    sodium_free(*key_pem);
    free(*csr_pem);
    *key_pem = *csr_pem = NULL;
  }
  BIO_free(kb);
  BIO_free(cb);
  X509_REQ_free(r);
  EVP_PKEY_free(k);
  return rc;
}
