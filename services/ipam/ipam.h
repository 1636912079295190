/*
 * ipam.h - virtual networks across clusters: larkipam.
 *
 * lark-ipam owns Domain and DomainPeer (docs/design.md section 1). A Domain is
 * an address range (IPv4 or IPv6 CIDR); every pod of a Job that names it
 * gets one virtual address, all the Job's pods at once in one
 * domain.allocated event on lark.ev.domain.<domain> (docs/design.md section 3).
 * DomainPeer is the relays' routing table: per (domain, cluster), every
 * routed pod of the domain with its virtual IP, real IP, node and cluster,
 * marked local (same cluster) or hub; it is published on LARK_ROUTES as
 * lark.route.<domain>.<cluster>.<pod> (route.set, route.deleted).
 *
 * This header is the library: the pure parts (CIDR arithmetic, the
 * allocator) are tested without LMDB or a broker; the view applies
 * events into LMDB and decides allocations, releases and routes; the
 * query function answers `larkctl get domains|domainpeers|routes`; the
 * command handler takes domain.apply and domain.delete. main.c wires them.
 *
 * Functions return 0 or a negative BUS_E* code.
 */
#ifndef LARK_IPAM_H
#define LARK_IPAM_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* ------------------------------------------------------------------ CIDR */

/*
 * A parsed range. Addresses are handled as offsets from the network
 * address; the usable ones are [first, last]:
 *   IPv4 /0../30   every address but the network and broadcast ones
 *   IPv4 /31, /32  every address (RFC 3021)
 *   IPv6 /0../126  every address but the first (subnet-router anycast)
 *   IPv6 /127,/128 every address
 * Ranges with more than 2^64 addresses are cut to the first 2^64 (an
 * allocator never gets that far); counts saturate at UINT64_MAX.
 */
typedef struct ipam_cidr {
  int family;       /* 4 or 6 */
  int prefix;       /* 0..32 or 0..128 */
  uint8_t base[16]; /* network address, big-endian; IPv4 in base[0..3] */
  uint64_t first, last;
} ipam_cidr;

/*
 * Parse "10.0.0.0/16" or "fd00::/64". BUS_EFIELD with a message in err
 * (cap bytes) for anything else: no prefix, prefix out of range, host
 * bits set (the message names the network meant).
 */
int ipam_cidr_parse(const char *s, ipam_cidr *out, char *err, size_t cap);
/*
 * The widest range a Domain may claim: IPv4 /8 (16 M addresses, all of
 * 10.0.0.0/8), IPv6 /48 (a site). A Domain's prefix is routed to the
 * relay inside each of its pods, so 0.0.0.0/0 would take every
 * connection a pod makes, and would overlap every other Domain.
 */
#define IPAM_DOMAIN_MIN_PREFIX4 8
#define IPAM_DOMAIN_MIN_PREFIX6 48
/* BUS_EFIELD with a message in err (cap bytes) when c is wider than a
 * Domain may be; 0 otherwise. */
int ipam_domain_cidr_check(const ipam_cidr *c, char *err, size_t cap);
/* The canonical text of c ("10.0.0.0/16") into out. */
void ipam_cidr_format(const ipam_cidr *c, char *out, size_t cap);
/* 1 when a and b share an address (same family, one contains the other). */
int ipam_cidr_overlap(const ipam_cidr *a, const ipam_cidr *b);
/* Usable addresses: last - first + 1, saturated. */
uint64_t ipam_cidr_usable(const ipam_cidr *c);
/* The address at offset off (not checked against [first, last]). */
void ipam_addr_format(const ipam_cidr *c, uint64_t off, char *out, size_t cap);
/* The offset of ip in c; BUS_EFIELD when ip is not a usable address of c. */
int ipam_addr_offset(const ipam_cidr *c, const char *ip, uint64_t *off);

/* ------------------------------------------------------------- allocator */

/*
 * Where the taken addresses are: next(ud, from, &taken) sets the lowest
 * taken offset >= from and returns 1, returns 0 when there is none, or a
 * negative error. The view reads LMDB; ipam_set (below) is in memory.
 */
typedef int (*ipam_next_fn)(void *ud, uint64_t from, uint64_t *taken);

#define IPAM_NONE UINT64_MAX

/*
 * Choose n addresses of c, none taken. sticky[i] (IPAM_NONE for none) is
 * the address pod i had before: it gets it back while it is still free.
 * Every other pod gets the lowest free address, searching from low (a
 * hint: every usable address below it is taken). free is how many usable
 * addresses are not taken. Fills out[0..n). Returns 0, 1 when fewer than
 * n are free (nothing chosen), or a negative error from next.
 */
int ipam_pick(const ipam_cidr *c, uint64_t low, uint64_t free, size_t n,
              const uint64_t *sticky, ipam_next_fn next, void *ud,
              uint64_t *out);

/* A sorted set of taken offsets in memory (tests, benchmarks). */
typedef struct ipam_set {
  uint64_t *v;
  size_t n, cap;
} ipam_set;

int ipam_set_add(ipam_set *s, uint64_t off);
void ipam_set_del(ipam_set *s, uint64_t off);
int ipam_set_has(const ipam_set *s, uint64_t off);
void ipam_set_free(ipam_set *s);
/* ipam_next_fn over an ipam_set (ud). */
int ipam_set_next(void *ud, uint64_t from, uint64_t *taken);

/* --------------------------------------------------------------- the view */

/*
 * The view, filter lark.ev.> (domains, the placement log, Jobs, Pods and
 * Nodes). Its tables are described in ipam-int.h. decide (live only) emits,
 * per domain and per version of lark.ev.domain.<d>, at most one of:
 * domain.released (pods that ended, after the hold), domain.allocated or
 * domain.exhausted (the oldest Job waiting); and the route messages
 * queued by apply, to LARK_ROUTES.
 *
 * def->ud may point at an ipam_opts (decide's settings); NULL: defaults.
 */
typedef struct ipam_opts {
  int64_t hold_ns; /* how long an ended pod keeps its address; 0 */
} ipam_opts;

void ipam_view_def(bus_view_def *def);

/*
 * Reads, live and for --at:
 *   domain     list {name?} -> [{name, cidr, family, capacity, used, free,
 *                                waiting, ts, actor}]
 *              describe {name} -> {domain: {...}, allocations: [{pod, ip,
 *                                job, node, state}], waiting: [job]}
 *   domainpeer list {name?} -> [{name: "<d>.<c>", domain, cluster, pods,
 *                                local, hub}]
 *              describe {name: "<d>.<c>"} -> {domain, cluster, peers: [...]}
 *   route      list {name: "<d>" or "<d>.<c>"} -> [{domain, cluster, pod, ip,
 *                                realIP, node, podCluster, via}]
 */
int ipam_query(bus_txn *t, const char *kind, const char *verb,
               const msgpack_object *req, msgpack_packer *pk, void *ud);
/* The virtual address pod holds now (what a domain's allocations list
 * gives it) into out[cap]; BUS_ENOT_FOUND when it holds none. */
int ipam_pod_vip(bus_txn *t, const char *pod, char *out, size_t cap);

/* ------------------------------------------------------------- commands */

/*
 * The table of lark-ipam's verbs (served by bus_verbs_serve with the view):
 * lark.cmd.<user>.domain.<verb>:
 *   apply  {key, resource: <Domain>} -> {ok, seq, result: created|unchanged}
 *          refused (details {path, reason}) when the resource or its CIDR
 *          is invalid, or the CIDR overlaps another domain's; a changed
 *          CIDR is refused (EXISTS): delete, then apply.
 *   delete {key, name} -> {ok, seq}; refused while addresses are in use.
 *   list, describe: ipam_query.
 * and lark.cmd.<user>.domainpeer.* and .route.* (queries). domain.created
 * and domain.deleted go on lark.ev.ipam.domains with prev = that
 * subject's version, so creations are serialised: on a conflict the
 * check is redone once the view has caught up with the stream.
 */
extern const bus_verbs ipam_verbs;

#endif
