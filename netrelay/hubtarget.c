/*
 * hubtarget.c - what a hub channel may name as its target: the numeric
 * and one-line ("tcp://10.2.0.5:80", "tcp://[fd00::5]:80") forms, the
 * connection the hub makes itself without routes, and the allow-list
 * that decides then.
 *
 * Invariants: a target is a numeric address put in canonical form
 * (inet_ntop of what parsed) before anything compares it, so a name is
 * never resolved and one address has one spelling; input is at most
 * 1024 bytes and is read only within its length.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hub-int.h"
#include "relay-int.h"

#define CONNECT_TIMEOUT_MS 5000

/* A canonical address and port into t; -1 when not numeric. */
static int
canon_target(const char *host, size_t n, long port, hub_target *t) {
  char buf[HUB_HOST_MAX];
  unsigned char a[16];
  if (!n || n >= sizeof buf || port <= 0 || port > 65535)
    return -1;
  memcpy(buf, host, n);
  buf[n] = 0;
  t->port = (int)port;
  if (inet_pton(AF_INET, buf, a) == 1)
    return inet_ntop(AF_INET, a, t->host, sizeof t->host) ? 0 : -1;
  if (inet_pton(AF_INET6, buf, a) == 1)
    return inet_ntop(AF_INET6, a, t->host, sizeof t->host) ? 0 : -1;
  return -1;
}

/* Decimal 1..65535 and nothing else, or -1. */
static long
port_of(const char *p) {
  long v = 0;
  if (!*p || strlen(p) > 5)
    return -1;
  for (; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (*p - '0');
  }
  return v;
}

int
hub__parse_target(const char *dst, int port, hub_target *t) {
  memset(t, 0, sizeof *t);
  if (!dst || strnlen(dst, 1025) > 1024)
    return -1;
  if (strncmp(dst, "tcp://", 6))
    return canon_target(dst, strlen(dst), port, t);
  const char *h = dst + 6, *end;
  if (*h == '[') {
    if (!(end = strchr(h, ']')) || end[1] != ':')
      return -1;
    return canon_target(h + 1, (size_t)(end - h - 1), port_of(end + 2), t);
  }
  if (!(end = strchr(h, ':')))
    return -1; /* a bare IPv6 address needs its brackets */
  return canon_target(h, (size_t)(end - h), port_of(end + 1), t);
}

void
relay__reset_fd(int fd) {
  struct linger l = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

/* A TCP connection to numeric ip:port within timeout_ms, or -errno. */
int
relay__dial(const char *ip, int port, int timeout_ms) {
  struct sockaddr_storage sa;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
  socklen_t len = sizeof *v4;
  memset(&sa, 0, sizeof sa);
  if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
  } else if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    len = sizeof *v6;
  } else {
    return -EINVAL;
  }
  int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  int rc = connect(fd, (const struct sockaddr *)&sa, len) ? -errno : 0;
  if (rc == -EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int e = 0;
    socklen_t el = sizeof e;
    rc = poll(&p, 1, timeout_ms) == 1 ? 0 : -ETIMEDOUT;
    if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e)
      rc = -e;
  }
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
}

/* A TCP connection to t within CONNECT_TIMEOUT_MS, or -errno. */
int
hub__dial(const hub_target *t) {
  return relay__dial(t->host, t->port, CONNECT_TIMEOUT_MS);
}

/* ----------------------------------------------------------- allow-list */

int
relay_allow_add(relay_allow *a, const char *entry) {
  char host[64];
  const char *eq = strchr(entry, '='), *colon = strrchr(entry, ':');
  if (a->n >= RELAY_ALLOW_MAX)
    return BUS_ETOO_BIG;
  if (!eq || !colon || colon < eq || eq == entry ||
      (size_t)(eq - entry) >= sizeof a->e[0].domain ||
      (size_t)(colon - eq - 1) >= sizeof host)
    return BUS_EINVAL;
  memcpy(host, eq + 1, (size_t)(colon - eq - 1));
  host[colon - eq - 1] = 0;
  char *end;
  hub_target t;
  long port = strcmp(colon + 1, "*") ? strtol(colon + 1, &end, 10) : -1;
  if (port >= 0 && (*end || port == 0 || port > 65535))
    return BUS_EINVAL;
  if (hub__parse_target(host, port < 0 ? 1 : (int)port, &t))
    return BUS_EINVAL;
  snprintf(a->e[a->n].host, sizeof a->e[a->n].host, "%s", t.host);
  memcpy(a->e[a->n].domain, entry, (size_t)(eq - entry));
  a->e[a->n].domain[eq - entry] = 0;
  a->e[a->n].port = (int)port;
  a->n++;
  return 0;
}

int
relay_allow_policy(const relay_cert *c, const char *host, uint16_t port,
                   void *ud, char *why, size_t cap) {
  const relay_allow *a = ud;
  for (int i = 0; a && i < a->n; i++)
    if (!strcmp(a->e[i].domain, c->domain) && !strcmp(a->e[i].host, host) &&
        (a->e[i].port < 0 || a->e[i].port == port))
      return 0;
  snprintf(why, cap, "target not allowed for domain %s", c->domain);
  return BUS_EDENIED;
}
