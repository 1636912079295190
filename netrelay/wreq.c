/*
 * wreq.c - a weights channel's request line and destination (wreq.h).
 *
 * Both are five words separated by single spaces: a keyword, the Job,
 * the two nodes and the address. Anything else (more or fewer words, a
 * word that is not a name, an address that is not numeric) is refused
 * with a reason, and nothing is read past the given length.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "wreq.h"

/* A decimal port 1..65535 of n bytes, or -1. */
static long
port_of(const char *p, size_t n) {
  long v = 0;
  if (!n || n > 5)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v >= 1 && v <= 65535 ? v : -1;
}

int
relay_addr_canon(const char *s, size_t n, char out[RELAY_ADDR_MAX],
                 char ip[RELAY_IP_MAX], int *port) {
  char host[RELAY_IP_MAX];
  unsigned char a[16];
  const char *colon, *h = s, *end;
  int v6 = n && s[0] == '[';
  if (v6) {
    if (!(end = memchr(s, ']', n)) || end + 1 >= s + n || end[1] != ':')
      return -1;
    h = s + 1;
    colon = end + 1;
  } else {
    if (!(colon = memrchr(s, ':', n)) || memchr(s, ':', n) != colon)
      return -1;
    end = colon;
  }
  long p = port_of(colon + 1, (size_t)(s + n - colon - 1));
  size_t hl = (size_t)(end - h);
  if (p < 0 || !hl || hl >= sizeof host)
    return -1;
  memcpy(host, h, hl);
  host[hl] = 0;
  int fam = v6 ? AF_INET6 : AF_INET;
  if (inet_pton(fam, host, a) != 1 || !inet_ntop(fam, a, ip, RELAY_IP_MAX))
    return -1;
  *port = (int)p;
  snprintf(out, RELAY_ADDR_MAX, v6 ? "[%s]:%d" : "%s:%d", ip, *port);
  return 0;
}

/* The next word of [*p, end) into w (cap bytes); -1 when empty or too
 * long. Moves *p past one space. */
static int
word(const char **p, const char *end, char *w, size_t cap) {
  const char *sp = memchr(*p, ' ', (size_t)(end - *p));
  size_t n = (size_t)((sp ? sp : end) - *p);
  if (!n || n >= cap)
    return -1;
  memcpy(w, *p, n);
  w[n] = 0;
  *p += n + (sp != NULL);
  return 0;
}

static int
refuse(char *why, size_t cap, const char *what) {
  snprintf(why, cap, "%s", what);
  return BUS_EMALFORMED;
}

/* "<keyword> job from to addr" of n bytes into r. */
static int
parse(const char *s, size_t n, const char *keyword, relay_wreq *r, char *why,
      size_t cap) {
  char kw[32], addr[RELAY_WREQ_MAX];
  const char *p = s, *end = s + n;
  memset(r, 0, sizeof *r);
  if (n > RELAY_WREQ_MAX || memchr(s, 0, n))
    return refuse(why, cap, "request too long or not text");
  if (word(&p, end, kw, sizeof kw) || strcmp(kw, keyword))
    return refuse(why, cap, "not a weights request");
  if (word(&p, end, r->job, sizeof r->job) ||
      word(&p, end, r->from, sizeof r->from) ||
      word(&p, end, r->to, sizeof r->to) || word(&p, end, addr, sizeof addr) ||
      p != end)
    return refuse(why, cap, "want: WEIGHTS <job> <from> <to> <address>");
  if (!bus_name_valid(r->job, BUS_NAME_MAX) ||
      !bus_name_valid(r->from, BUS_NAME_MAX) ||
      !bus_name_valid(r->to, BUS_NAME_MAX))
    return refuse(why, cap, "job and nodes must be names");
  if (relay_addr_canon(addr, strlen(addr), r->addr, r->ip, &r->port))
    return refuse(why, cap, "address is not a numeric host:port");
  return 0;
}

int
relay_wreq_parse_line(const char *line, size_t n, relay_wreq *r, char *why,
                      size_t cap) {
  if (n && line[n - 1] == '\r')
    n--;
  return parse(line, n, RELAY_WEIGHTS_LINE, r, why, cap);
}

int
relay_wreq_parse_dest(const char *dest, relay_wreq *r, char *why, size_t cap) {
  if (!dest)
    return refuse(why, cap, "no destination");
  return parse(dest, strnlen(dest, RELAY_WREQ_MAX + 1), RELAY_WEIGHTS_CHANNEL,
               r, why, cap);
}

int
relay_wreq_is_dest(const char *dest) {
  size_t k = strlen(RELAY_WEIGHTS_CHANNEL);
  return dest && !strncmp(dest, RELAY_WEIGHTS_CHANNEL, k) &&
         (dest[k] == ' ' || !dest[k]);
}

void
relay_wreq_dest(const relay_wreq *r, char *out, size_t cap) {
  snprintf(out, cap, "%s %s %s %s %s", RELAY_WEIGHTS_CHANNEL, r->job, r->from,
           r->to, r->addr);
}
