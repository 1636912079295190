/*
 * capture.c - a pod's Domain traffic turned into connections to the
 * relay, inside the pod's namespace (see capture.h).
 *
 * The nftables table is written as one transaction that first makes sure
 * the table exists, then deletes and recreates it: the kernel applies it
 * whole or not at all, so a pod is never left half-redirected and doing
 * it twice gives the same table. The prefix is checked to be a numeric
 * address and a length before it goes into the rules text: nothing from
 * a route row reaches nft unparsed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <nftables/libnftables.h>

#include "bus.h"
#include "capture.h"
#include "podnet.h"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h */
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80 /* linux/netfilter_ipv6/ip6_tables.h */
#endif

/* 4 or 6 for a numeric "addr/len" prefix, else 0. */
static int
prefix_family(const char *cidr) {
  bus_cidr c;
  return bus_cidr_parse(cidr, 0, &c) == 0 ? c.family : 0;
}

typedef struct nft_job {
  const char *rules;
  char err[512];
} nft_job;

/* Run j->rules with libnftables in the calling thread's namespace. */
static int
nft_run(void *ud) {
  nft_job *j = ud;
  struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (!ctx)
    return -ENOMEM;
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  int rc = nft_run_cmd_from_buffer(ctx, j->rules) ? -EIO : 0;
  if (rc) {
    const char *e = nft_ctx_get_error_buffer(ctx);
    snprintf(j->err, sizeof j->err, "%s", e ? e : "nft failed");
    for (char *p = j->err; *p; p++)
      if (*p == '\n')
        *p = ' ';
  }
  nft_ctx_free(ctx);
  return rc;
}

static int
nft_in_ns(const char *ns, const char *rules) {
  nft_job j = {.rules = rules};
  int rc = podnet_in_ns(ns, nft_run, &j);
  if (rc && j.err[0])
    return bus_error(rc, "nftables in %s: %s", ns, j.err);
  return rc;
}

static int
redirect_on(const char *ns, const char *cidr, int fam, int port) {
  char rules[1024];
  const char *t = fam == 4 ? "ip" : "ip6";
  snprintf(rules, sizeof rules,
           "add table %s lark_relay\n"
           "delete table %s lark_relay\n"
           "table %s lark_relay {\n"
           "  chain out {\n"
           "    type nat hook output priority -100; policy accept;\n"
           "    %s daddr %s meta l4proto tcp redirect to :%d\n"
           "  }\n"
           "}\n",
           t, t, t, t, cidr, port);
  return nft_in_ns(ns, rules);
}

int
relay_capture_up(const char *ns, const char *vip, const char *cidr, int port,
                 int *listen_fd) {
  int fam = prefix_family(cidr), rc;
  if (!fam || port <= 0 || port > 65535)
    return bus_error(BUS_EINVAL, "capture %s: bad prefix %s or port %d", ns,
                     cidr, port);
  if ((strchr(vip, ':') != NULL) != (fam == 6))
    return bus_error(BUS_EINVAL, "capture %s: %s is not of %s's family", ns,
                     vip, cidr);
  if ((rc = podnet_addr_add(ns, "lo", vip, fam == 4 ? 32 : 128)) ||
      (rc = podnet_route_add(ns, cidr, "lo", NULL)) ||
      (rc = redirect_on(ns, cidr, fam, port)))
    return rc;
  rc = podnet_listen(ns, fam == 4 ? "127.0.0.1" : "::1", port, NULL);
  if (rc < 0)
    return rc;
  *listen_fd = rc;
  return 0;
}

int
relay_capture_down(const char *ns, const char *cidr) {
  char rules[256];
  int fam = prefix_family(cidr);
  if (!fam)
    return bus_error(BUS_EINVAL, "capture %s: bad prefix %s", ns, cidr);
  if (!podnet_ns_exists(ns))
    return 0;
  const char *t = fam == 4 ? "ip" : "ip6";
  snprintf(rules, sizeof rules,
           "add table %s lark_relay\ndelete table %s lark_relay\n", t, t);
  int rc = nft_in_ns(ns, rules);
  return podnet_ns_exists(ns) ? rc : 0;
}

int
relay_capture_target(int fd, char ip[RELAY_IP_MAX], int *port) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  memset(&sa, 0, sizeof sa);
  if (getsockname(fd, (struct sockaddr *)&sa, &len))
    return -errno;
  len = sizeof sa;
  if (sa.ss_family == AF_INET6) {
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
    if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, v6, &len))
      return bus_error(BUS_ENOT_FOUND, "no original destination: %s",
                       strerror(errno));
    *port = ntohs(v6->sin6_port);
    return inet_ntop(AF_INET6, &v6->sin6_addr, ip, RELAY_IP_MAX) ? 0 : -errno;
  }
  struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
  if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, v4, &len))
    return bus_error(BUS_ENOT_FOUND, "no original destination: %s",
                     strerror(errno));
  *port = ntohs(v4->sin_port);
  return inet_ntop(AF_INET, &v4->sin_addr, ip, RELAY_IP_MAX) ? 0 : -errno;
}
