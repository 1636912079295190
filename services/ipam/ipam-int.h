/*
 * ipam-int.h - the view's records and tables, shared by apply (apply.c,
 * domains.c, routes.c), decide (decide.c), queries (queries.c) and
 * commands (commands.c).
 *
 * Records are zeroed fixed structs with a layout byte, so equal states
 * are equal bytes for the digest. Tables:
 *   domains   <d>                     -> dom_rec
 *   addrs     <d>/ be64(offset)       -> pod name (an address taken)
 *   pods      <pod>                   -> pod_rec (every pod of a domain
 *                                        Job; keeps its last address)
 *   jobs      <job>                   -> job_rec (Jobs that name a domain)
 *   wants     <d>/ be64(seq) <job>    -> pod names, '\n'-separated: a
 *                                        placed Job waiting for addresses
 *   ending    <d>/<pod>               -> "" (ended, still holding)
 *   nodes     <node>                  -> its cluster
 *   clusters  <d>/<cluster>           -> be32 routed pods there
 *   routes    <d>/<pod>               -> "" (routed: held, bound, alive)
 *   rtq       <d>.<c>.<pod>           -> be64 seq of its rtout entry
 *   rtout     be64(seq) <d>.<c>.<pod> -> "S" (set) or "D" (tombstone)
 */
#ifndef LARK_IPAM_INT_H
#define LARK_IPAM_INT_H

#include <string.h>

#include "ipam.h"

#define IPAM_NAME_SZ 64
#define IPAM_DNAME_SZ 256
#define IPAM_IP_SZ 48
#define IPAM_LAYOUT 1
#define IPAM_MAX_PODS 4096

typedef struct dom_rec {
  uint8_t layout;
  uint8_t pad[7];
  char name[IPAM_NAME_SZ];
  char cidr[IPAM_NAME_SZ];
  ipam_cidr c;
  uint64_t used; /* addresses taken */
  uint64_t low;  /* every usable offset below is taken */
  uint64_t seq;  /* the domain.created event */
  int64_t ts;
  char actor[128];
} dom_rec;

typedef struct pod_rec {
  uint8_t layout;
  uint8_t held;    /* holds off in domain */
  uint8_t has_off; /* off is its last address (sticky) */
  uint8_t ended;   /* its run ended; released after the hold */
  uint8_t routed;  /* counted in clusters[domain/rcluster] */
  uint8_t pad[3];
  char pod[IPAM_DNAME_SZ];
  char job[IPAM_NAME_SZ];
  char domain[IPAM_NAME_SZ];
  char node[IPAM_NAME_SZ];
  char rcluster[IPAM_NAME_SZ]; /* cluster it is routed in */
  char local_ip[IPAM_IP_SZ];
  char vip[IPAM_IP_SZ];
  uint64_t off;
  int64_t ended_ts;
} pod_rec;

typedef struct job_rec {
  uint8_t layout;
  uint8_t pad[7];
  char name[IPAM_NAME_SZ];
  char domain[IPAM_NAME_SZ];
  uint64_t generation;
  uint64_t want_seq; /* its wants entry; 0 none */
  char reason[160];
} job_rec;

/*
 * Records, read and written whole: get returns BUS_ENOT_FOUND when absent,
 * BUS_ECORRUPT for a wrong size or layout. Each table's record is keyed by
 * its own name field.
 */
int ipam__rec_get(bus_txn *t, const char *table, const char *name, void *r,
                  size_t sz);
/* Checks that p points at a type (a compile-time check; evaluates nothing). */
#define IPAM__IS(type, p) (void)sizeof((p) == (type *)0)
#define IPAM__PUT(t, table, type, key, r)                                      \
  (IPAM__IS(type, r),                                                          \
   bus_txn_put((t), table, key, strlen(key), (r), sizeof(type)))
#define ipam_dom_get(t, name, r)                                               \
  (IPAM__IS(dom_rec, r),                                                       \
   ipam__rec_get((t), "domains", (name), (r), sizeof(dom_rec)))
#define ipam_dom_put(t, r) IPAM__PUT(t, "domains", dom_rec, (r)->name, r)
#define ipam_pod_get(t, name, r)                                               \
  (IPAM__IS(pod_rec, r),                                                       \
   ipam__rec_get((t), "pods", (name), (r), sizeof(pod_rec)))
#define ipam_pod_put(t, r) IPAM__PUT(t, "pods", pod_rec, (r)->pod, r)
#define ipam_job_get(t, name, r)                                               \
  (IPAM__IS(job_rec, r),                                                       \
   ipam__rec_get((t), "jobs", (name), (r), sizeof(job_rec)))
#define ipam__job_put(t, r) IPAM__PUT(t, "jobs", job_rec, (r)->name, r)

/* The <id> of the subject lark.ev.<kind>.<id>; "" when there is none. */
const char *ipam__subject_id(const char *subject);
/*
 * Walks. ipam__scan_domain calls fn(tail, ud) for each key "<d>/<tail>"
 * of a domain's table (addrs' tails are binary: not for it);
 * ipam__scan_recs calls fn(rec, ud) for each value of a table that is a
 * whole record of sz bytes, copied into rec. A non-zero fn result stops
 * the walk and is returned (1: found, < 0: an error).
 */
typedef int (*ipam_tail_fn)(const char *tail, void *ud);
typedef int (*ipam_rec_fn)(void *rec, void *ud);
int ipam__scan_domain(bus_txn *t, const char *table, const char *d,
                      ipam_tail_fn fn, void *ud);
int ipam__scan_recs(bus_txn *t, const char *table, void *rec, size_t sz,
                    ipam_rec_fn fn, void *ud);
/* The domain whose range overlaps c, other than the one named except
 * (NULL: none), into other: 1 when there is one, 0 none, or an error. */
int ipam__overlapping(bus_txn *t, const ipam_cidr *c, const char *except,
                      dom_rec *other);

/* "<d>/" + be64(off) into key (>= IPAM_NAME_SZ + 9); returns its length. */
size_t ipam_addr_key(const char *domain, uint64_t off, unsigned char *key);
/* Copy at most cap-1 bytes of s (len n) with NUL. */
void ipam_copy(char *dst, size_t cap, const void *s, size_t n);

/* The taken-address lookup of a domain, for ipam_pick. */
typedef struct ipam_lookup {
  bus_txn *t;
  const char *domain;
} ipam_lookup;
int ipam_view_next(void *ud, uint64_t from, uint64_t *taken);

/* Free addresses of a domain (usable - used). */
uint64_t ipam_dom_free(const dom_rec *d);

int ipam_apply(bus_txn *t, const bus_event *ev, void *ud);
int ipam_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud);

/* records.c: keys of a table under a prefix, collected before they are
 * deleted. */

typedef struct keys {
  char **v;
  size_t *len;
  size_t n, cap;
} keys;

int ipam__keys_under(bus_txn *t, const char *table, const char *prefix,
                     keys *ks);
void ipam__keys_free(keys *ks);

/* routes.c: the pod's route brought up to date with its record (routed
 * while it holds an address, is bound to a node of a known cluster and
 * has not ended), its route message queued. */
int ipam__route_update(bus_txn *t, pod_rec *p, uint64_t seq);
/* The route of a routed pod as cluster c sees it (strings point into p),
 * as a route.set and a domainpeer row carry it: realIP always, no cidr. */
void ipam__route_of(const pod_rec *p, const char *c, bus_ev_route_set *e);

/* apply.c: the pods' lives the domain events share; the key of a pod's
 * `ending` row, its address given back, a Job's `wants` entry dropped. */
int ipam__ending_key(const pod_rec *p, char *key, size_t cap);
int ipam__free_addr(bus_txn *t, pod_rec *p);
int ipam__drop_want(bus_txn *t, job_rec *j);

/* domains.c: the domain events, as apply's table calls them (data is the
 * event's generated struct, bus_ev_domain_*). */
int ipam__apply_created(bus_txn *t, const bus_event *ev, const void *data,
                        void *ud);
int ipam__apply_deleted(bus_txn *t, const bus_event *ev, const void *data,
                        void *ud);
int ipam__apply_allocated(bus_txn *t, const bus_event *ev, const void *data,
                          void *ud);
int ipam__apply_exhausted(bus_txn *t, const bus_event *ev, const void *data,
                          void *ud);
int ipam__apply_released(bus_txn *t, const bus_event *ev, const void *data,
                         void *ud);

#endif
