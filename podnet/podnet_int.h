/*
 * podnet_int.h - private to podnet/: what its files share. The netlink
 * calls (nl.c) work in the namespace of the calling thread, so inside a
 * pod's namespace they run through podnet_in_ns.
 */
#ifndef LARK_PODNET_INT_H
#define LARK_PODNET_INT_H

#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "bus.h"
#include "podnet.h"

/* ns.c: BUS_EINVAL unless name fits an interface's name. */
int podnet__check_ifname(const char *name);

/* nl.c: translate a libnl error: the code, with "what: libnl's text" as
 * detail. */
int podnet__nl_fail(int nle, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A route socket in the calling thread's current namespace. */
int podnet__nl_open(struct nl_sock **out);
int podnet__link_get(struct nl_sock *sk, const char *ifname,
                     struct rtnl_link **out);
int podnet__link_up(struct nl_sock *sk, const char *ifname);
/* 0 when it was not there. */
int podnet__link_del(struct nl_sock *sk, const char *ifname);
/* An address or prefix in text into a new nl_addr (nl.c says how). */
int podnet__parse_addr(const char *s, int hint, int plen, struct nl_addr **out);
/* Add (add 1) or delete an address or a route (podnet.h). */
int podnet__addr_change(struct nl_sock *sk, const char *ifname,
                        const char *addr, int plen, int add);
int podnet__route_change(struct nl_sock *sk, const char *prefix,
                         const char *ifname, const char *gw, int add);

#endif
