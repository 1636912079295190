/*
 * http_tls.c - HTTPS's identity: the server's certificate and key, and
 * each request's client certificate (GnuTLS, through libmicrohttpd).
 *
 * libmicrohttpd asks every client for a certificate signed by --client-ca
 * (MHD_OPTION_HTTPS_MEM_TRUST) but lets the handshake finish without one,
 * so /healthz answers anyone; every other route checks here: the chain
 * verifies against the CA and is within its validity (GnuTLS's verify),
 * the leaf is the signer's role `user` (OU=user, services/signer/x509.c),
 * its CN a valid user name, and its serial not revoked by the events the
 * view has applied. The serial is named as cert.issued names it: 32
 * lower-case hex digits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "http.h"

static char *
read_all(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  gw_buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (gw_buf_add(&b, chunk, n) || b.len > (1u << 20))
      break;
  int bad = ferror(f) || !b.p || b.len > (1u << 20);
  fclose(f);
  if (bad) {
    gw_buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* The CERTIFICATE blocks of pem alone (`larkctl cert ca` prints the SSH
 * CA's key after the X.509 one, which GnuTLS would refuse): a new
 * string, NULL when there is none. */
static char *
certs_only(const char *pem) {
  static const char begin[] = "-----BEGIN CERTIFICATE-----";
  static const char end[] = "-----END CERTIFICATE-----";
  gw_buf b = {0};
  for (const char *p = strstr(pem, begin), *e; p; p = strstr(e, begin)) {
    if (!(e = strstr(p, end)))
      break;
    e += sizeof end - 1;
    if (gw_buf_add(&b, p, (size_t)(e - p)) || gw_buf_add(&b, "\n", 1)) {
      gw_buf_free(&b);
      return NULL;
    }
  }
  return b.p;
}

int
gw_tls_load(gw_http *h) {
  const char *paths[] = {h->cfg.tls_cert, h->cfg.tls_key, h->cfg.client_ca};
  char **outs[] = {&h->cert_pem, &h->key_pem, &h->ca_pem};
  for (int i = 0; i < 3; i++) {
    if (!paths[i])
      return bus_error(BUS_EINVAL,
                       "--https needs --tls-cert, --tls-key and --client-ca");
    if (!(*outs[i] = read_all(paths[i])))
      return bus_error(BUS_EINVAL, "%s: cannot read it", paths[i]);
  }
  char *ca = certs_only(h->ca_pem);
  free(h->ca_pem);
  h->ca_pem = ca;
  return ca ? 0
            : bus_error(BUS_EINVAL, "%s: holds no PEM certificate",
                        h->cfg.client_ca);
}

void
gw_tls_free(gw_http *h) {
  free(h->cert_pem);
  if (h->key_pem)
    memset(h->key_pem, 0, strlen(h->key_pem));
  free(h->key_pem);
  free(h->ca_pem);
  h->cert_pem = h->key_pem = h->ca_pem = NULL;
}

static int
dn_part(gnutls_x509_crt_t crt, const char *oid, char *out, size_t cap) {
  size_t n = cap;
  return gnutls_x509_crt_get_dn_by_oid(crt, oid, 0, 0, out, &n) ? -1 : 0;
}

static void
serial_hex(gnutls_x509_crt_t crt, char *out, size_t cap) {
  unsigned char b[40];
  size_t n = sizeof b, i = 0;
  out[0] = 0;
  if (gnutls_x509_crt_get_serial(crt, b, &n) || cap < 2 * n + 1)
    return;
  while (i + 1 < n && b[i] == 0) /* DER's leading zero */
    i++;
  size_t pad = n - i < 16 ? 2 * (16 - (n - i)) : 0, o = 0;
  memset(out, '0', pad);
  for (o = pad; i < n; i++, o += 2)
    snprintf(out + o, 3, "%02x", b[i]);
  out[o] = 0;
}

/* The leaf's role, user and serial, once its chain verified. */
static unsigned
leaf(gw_req *r, const gnutls_datum_t *der, char *why, size_t cap) {
  gnutls_x509_crt_t crt;
  char ou[64] = "", cn[GW_USER_MAX + 1] = "";
  unsigned st = MHD_HTTP_UNAUTHORIZED;
  if (gnutls_x509_crt_init(&crt))
    return st;
  if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER))
    snprintf(why, cap, "the client certificate does not parse");
  else if (dn_part(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, ou,
                   sizeof ou) ||
           strcmp(ou, "user"))
    snprintf(why, cap, "the client certificate's role is \"%s\", not user", ou);
  else if (dn_part(crt, GNUTLS_OID_X520_COMMON_NAME, cn, sizeof cn) ||
           !bus_name_valid(cn, GW_USER_MAX))
    snprintf(why, cap, "the client certificate names no valid user");
  else {
    serial_hex(crt, r->serial, sizeof r->serial);
    snprintf(r->user, sizeof r->user, "%s", cn);
    if (gw_cert_revoked(r->h->view, r->serial))
      snprintf(why, cap, "certificate %s of %s is revoked", r->serial, cn);
    else
      st = 0;
  }
  gnutls_x509_crt_deinit(crt);
  return st;
}

unsigned
gw_tls_user(gw_req *r, char *why, size_t cap) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
  unsigned n = 0, status = 0;
  const gnutls_datum_t *peers = s ? gnutls_certificate_get_peers(s, &n) : NULL;
  snprintf(why, cap, "no client certificate");
  if (!peers || !n)
    return MHD_HTTP_UNAUTHORIZED;
  if (gnutls_certificate_verify_peers2(s, &status) || status) {
    gnutls_datum_t txt = {0};
    gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt,
                                                 0);
    snprintf(why, cap, "client certificate: %s",
             txt.data ? (const char *)txt.data : "does not verify");
    gnutls_free(txt.data);
    return MHD_HTTP_UNAUTHORIZED;
  }
  return leaf(r, &peers[0], why, cap);
}

int
gw_req_revoked(gw_req *r) {
  return r->auth == GW_AUTH_CERT && gw_cert_revoked(r->h->view, r->serial);
}
