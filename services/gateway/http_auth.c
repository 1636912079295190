/*
 * http_auth.c - who a request is: the login token (plain HTTP on
 * loopback) or the client certificate (HTTPS), and writes a cross-site
 * page could have made refused.
 *
 * The token comes as `Authorization: Bearer T`, `?token=T` or the cookie
 * lark_token (set when a page loads with one of the first two) and is
 * compared in constant time; its actor is --token-user. Over HTTPS the
 * client certificate is the only way in (http_tls.c). A browser sends
 * the cookie with any request to the gateway, a forged one from another
 * site too, so a write authenticated by the cookie must carry the header
 * X-Lark-Request: 1 (which no cross-site form can set, and no cross-site
 * script without the gateway's CORS consent, which it never gives) and,
 * when the browser names an Origin, the gateway's own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "http.h"

/* Equal in time that depends only on the lengths compared, never on
 * where the first difference is. */
static int
token_equal(const gw_http *h, const char *given) {
  if (!h->token_len || !given)
    return 0;
  size_t n = strnlen(given, GW_TOKEN_MAX + 1);
  unsigned char diff = n != h->token_len;
  for (size_t i = 0; i < h->token_len; i++)
    diff |= (unsigned char)(h->token[i] ^ (i < n ? given[i] : 0));
  return diff == 0;
}

/* The value of cookie name in a Cookie header, into out. */
static const char *
cookie(gw_req *r, const char *name, char *out, size_t cap) {
  const char *v = MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name);
  if (!v)
    return NULL;
  snprintf(out, cap, "%s", v);
  return out;
}

static unsigned
by_token(gw_req *r) {
  const char *auth = gw_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
  char c[GW_TOKEN_MAX + 2];
  if (auth && !strncasecmp(auth, "Bearer ", 7))
    r->auth = token_equal(r->h, auth + 7) ? GW_AUTH_BEARER : GW_AUTH_NONE;
  else if (gw_arg(r, "token"))
    r->auth =
        token_equal(r->h, gw_arg(r, "token")) ? GW_AUTH_QUERY : GW_AUTH_NONE;
  else if (cookie(r, "lark_token", c, sizeof c))
    r->auth = token_equal(r->h, c) ? GW_AUTH_COOKIE : GW_AUTH_NONE;
  if (r->auth == GW_AUTH_NONE)
    return MHD_HTTP_UNAUTHORIZED;
  snprintf(r->user, sizeof r->user, "%s", r->h->cfg.token_user);
  return 0;
}

unsigned
gw_authenticate(gw_req *r) {
  if (!r->tls)
    return by_token(r);
  char why[256];
  unsigned st = gw_tls_user(r, why, sizeof why);
  if (st)
    SVC_LOG(r->h->s, SVC_INFO, "-", 0, "%s %s refused: %s", r->method, r->url,
            why);
  else
    r->auth = GW_AUTH_CERT;
  return st;
}

unsigned
gw_csrf_check(gw_req *r) {
  if (r->auth != GW_AUTH_COOKIE)
    return 0;
  const char *x = gw_header(r, "X-Lark-Request");
  if (!x || strcmp(x, "1"))
    return MHD_HTTP_FORBIDDEN;
  const char *origin = gw_header(r, "Origin");
  const char *host = gw_header(r, MHD_HTTP_HEADER_HOST);
  if (!origin)
    return 0;
  char own[512];
  snprintf(own, sizeof own, "%s://%s", r->tls ? "https" : "http",
           host ? host : "");
  return host && !strcmp(origin, own) ? 0 : MHD_HTTP_FORBIDDEN;
}

int
gw_token_load(gw_http *h) {
  const char *path = h->cfg.token_file;
  struct stat st;
  FILE *f = fopen(path, "r");
  if (!f)
    return bus_error(-errno, "%s: %s", path, strerror(errno));
  if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077)) {
    fclose(f);
    return bus_error(BUS_EDENIED,
                     "%s: group or others may read it (chmod 600 it)", path);
  }
  char line[GW_TOKEN_MAX + 2] = "";
  char *ok = fgets(line, sizeof line, f);
  fclose(f);
  line[strcspn(line, "\r\n")] = 0;
  size_t n = strlen(line);
  if (!ok || n < 16 || n > GW_TOKEN_MAX)
    return bus_error(BUS_EINVAL,
                     "%s: its first line must be a token of 16 to %d "
                     "characters",
                     path, GW_TOKEN_MAX);
  for (size_t i = 0; i < n; i++)
    if (line[i] <= ' ' || line[i] == ';' || line[i] == ',' || line[i] > '~')
      return bus_error(BUS_EINVAL,
                       "%s: the token holds a character a cookie cannot", path);
  memcpy(h->token, line, n + 1);
  h->token_len = n;
  return 0;
}

int
gw_addr_loopback(const char *spec) {
  char host[128];
  const char *colon = strrchr(spec, ':');
  if (!colon)
    return 0;
  size_t hl = (size_t)(colon - spec);
  if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']')
    snprintf(host, sizeof host, "%.*s", (int)(hl - 2), spec + 1);
  else
    snprintf(host, sizeof host, "%.*s", (int)hl, spec);
  if (!strcmp(host, "localhost"))
    return 1;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}
