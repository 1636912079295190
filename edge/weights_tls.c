/*
 * weights_tls.c - TLS between nodes for weights: TLS 1.3 only, both ends
 * proving themselves with a certificate of the platform's CA (the
 * signer's, role agent: SAN URI urn:larkbus:role:agent, CN the node's
 * name). The contexts are made once from --tls-dir (ca.pem, cert.pem,
 * key.pem) and shared by the server's and the fetchers' threads (an
 * SSL_CTX is safe to share once made). Also the plain socket's part
 * that the server and the fetcher share: host:port split, and the I/O
 * timeouts so a silent peer cannot hold a thread. Any thread; calls no
 * other weights file.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "weights_int.h"

enum { IO_TIMEOUT_S = 30 };

#define SUITES                                                                 \
  "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

static int
tls_fail(const char *what) {
  char e[256] = "";
  unsigned long code = ERR_get_error();
  if (code)
    ERR_error_string_n(code, e, sizeof e);
  ERR_clear_error();
  return bus_error(BUS_EINVAL, "%s%s%s", what, *e ? ": " : "", e);
}

SSL_CTX *
wt_tls_ctx(const char *dir, int server) {
  char ca[4200], cert[4200], key[4200];
  snprintf(ca, sizeof ca, "%.4000s/ca.pem", dir);
  snprintf(cert, sizeof cert, "%.4000s/cert.pem", dir);
  snprintf(key, sizeof key, "%.4000s/key.pem", dir);
  SSL_CTX *c = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  int rc = 0;
  if (!c)
    rc = tls_fail("cannot make a TLS context");
  else if (!SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION))
    rc = tls_fail("TLS 1.3");
  else if (!SSL_CTX_set_ciphersuites(c, SUITES)) /* AES-128 first: the */
    rc = tls_fail("TLS 1.3 suites"); /* bytes cost less CPU on each end */
  else if (SSL_CTX_load_verify_locations(c, ca, NULL) != 1)
    rc = tls_fail(ca);
  else if (SSL_CTX_use_certificate_chain_file(c, cert) != 1)
    rc = tls_fail(cert);
  else if (SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1 ||
           SSL_CTX_check_private_key(c) != 1)
    rc = tls_fail(key);
  if (rc) {
    SSL_CTX_free(c);
    return NULL;
  }
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     NULL);
  SSL_CTX_set_mode(c, SSL_MODE_AUTO_RETRY);
  if (server)
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  return c;
}

/* The value of the SAN URI urn:larkbus:<key>:<value> of x into out ("" when
 * none); whether there was one. */
static int
san_uri(X509 *x, const char *key, char *out, size_t cap) {
  char prefix[64];
  int found = 0;
  snprintf(prefix, sizeof prefix, "urn:larkbus:%s:", key);
  size_t pn = strlen(prefix);
  GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
  out[0] = 0;
  for (int i = 0; !found && names && i < sk_GENERAL_NAME_num(names); i++) {
    GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
    if (g->type != GEN_URI)
      continue;
    const char *s =
        (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
    int n = ASN1_STRING_length(g->d.uniformResourceIdentifier);
    if (n > (int)pn && (size_t)n - pn < cap && !strncmp(s, prefix, pn) &&
        !memchr(s, 0, (size_t)n)) {
      memcpy(out, s + pn, (size_t)n - pn);
      out[n - pn] = 0;
      found = 1;
    }
  }
  GENERAL_NAMES_free(names);
  return found;
}

int
wt_tls_peer(SSL *ssl, char *node, size_t cap, char *cluster, size_t ccap) {
  char role[64];
  X509 *x = SSL_get1_peer_certificate(ssl);
  int rc = 0;
  node[0] = 0;
  if (!x)
    return bus_error(BUS_EAUTH, "no certificate");
  if (SSL_get_verify_result(ssl) != X509_V_OK)
    rc = bus_error(BUS_EAUTH, "its certificate does not verify: %s",
                   X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
  else if (!san_uri(x, "role", role, sizeof role) || strcmp(role, "agent"))
    rc = bus_error(BUS_EAUTH, "its certificate is not a node's (role %s)",
                   *role ? role : "none");
  else if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
                                     node, (int)cap) <= 0 ||
           !bus_name_valid(node, BUS_NAME_MAX))
    rc = bus_error(BUS_EAUTH, "its certificate names no node");
  if (cluster)
    san_uri(x, "cluster", cluster, ccap);
  X509_free(x);
  return rc;
}

const char *
wt_tls_error(void) {
  static __thread char e[256];
  unsigned long code = ERR_get_error();
  e[0] = 0;
  if (code)
    ERR_error_string_n(code, e, sizeof e);
  ERR_clear_error();
  return *e ? e : "the connection closed";
}

int
wt_tls_line(SSL *ssl, char *buf, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    char ch;
    if (SSL_read(ssl, &ch, 1) != 1)
      return bus_error(BUS_ECONN, "%s", wt_tls_error());
    if (ch == '\n') {
      buf[n] = 0;
      return 0;
    }
    buf[n++] = ch;
  }
  return bus_error(BUS_EINVAL, "a line longer than %zu bytes", cap - 1);
}

int
wt_tls_write(SSL *ssl, const void *p, size_t n) {
  while (n) {
    int chunk = n > (1u << 30) ? 1 << 30 : (int)n, w = SSL_write(ssl, p, chunk);
    if (w <= 0)
      return bus_error(BUS_ECONN, "%s", wt_tls_error());
    p = (const char *)p + w;
    n -= (size_t)w;
  }
  return 0;
}

/* ------------------------------------------------------------ sockets */

int
wt_addr_split(const char *addr, char *host, size_t hcap, char *port,
              size_t pcap) {
  const char *colon = strrchr(addr, ':');
  const char *h = addr, *hend = colon;
  if (!colon || !colon[1])
    return bus_error(BUS_EINVAL, "%s: not host:port", addr);
  if (*addr == '[') {
    h = addr + 1;
    if (colon == addr || colon[-1] != ']')
      return bus_error(BUS_EINVAL, "%s: not [v6]:port", addr);
    hend = colon - 1;
  }
  if ((size_t)(hend - h) >= hcap || strlen(colon + 1) >= pcap)
    return bus_error(BUS_EINVAL, "%s: too long", addr);
  memcpy(host, h, (size_t)(hend - h));
  host[hend - h] = 0;
  snprintf(port, pcap, "%s", colon + 1);
  return 0;
}

void
wt_sock_timeouts(int fd) {
  struct timeval tv = {IO_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}
