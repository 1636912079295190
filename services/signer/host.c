/*
 * host.c - what a gateway certificate's host may be: an IPv4 or IPv6
 * address (an IP SAN) or a DNS name (a DNS SAN). issue.c checks a
 * request's hosts with these before anything reaches OpenSSL, and x509.c
 * picks the SAN type with them; this file calls neither.
 */
#include <arpa/inet.h>
#include <string.h>

#include "signer-int.h"

/* A DNS name: labels of [a-z0-9-], 1 to 63, not starting or ending with
 * '-', joined by single dots, at most 253 in all. */
int
signer__host_is_dns(const char *s) {
  size_t n = strlen(s), label = 0;
  if (!n || n > SIGNER_HOST_MAX)
    return 0;
  for (size_t i = 0; i <= n; i++) {
    char ch = s[i];
    if (ch == '.' || !ch) {
      if (!label || s[i - 1] == '-' || s[i - label] == '-')
        return 0;
      label = 0;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
               ch == '-') {
      if (++label > 63)
        return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

int
signer_host_is_ip(const char *s) {
  unsigned char a[16];
  return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}
