/*
 * routes.h - the relay's routing table: the DomainPeer rows lark-ipam
 * publishes on LARK_ROUTES (lark.route.<domain>.<cluster>.<pod>, latest
 * wins, route.deleted as a tombstone), kept in memory and followed live.
 * Part of larkrelay; the hub follows every cluster's rows ("lark.route.>"),
 * a node relay its own cluster's ("lark.route.*.<cluster>.>").
 *
 * A table is safe to share: one follower thread writes it, any thread
 * reads it (a mutex inside; lookups copy the row out). Rows are keyed by
 * their subject, so a route.set replaces the row and a route.deleted
 * drops it; a malformed message is counted and skipped, never applied.
 */
#ifndef LARK_RELAY_ROUTES_H
#define LARK_RELAY_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

#define RELAY_IP_MAX 48 /* text form of an IPv4 or IPv6 address, with NUL */

typedef struct relay_route {
  char domain[64];
  char cluster[64]; /* whose relay reads the row */
  char pod[256];
  char ip[RELAY_IP_MAX];      /* the pod's virtual address */
  char real_ip[RELAY_IP_MAX]; /* its localIP; "" until reported */
  char node[64];
  char pod_cluster[64];
  char cidr[64]; /* the Domain's prefix, "" when the row has none */
  int via_hub;   /* 0: local (this cluster), 1: through the hub */
} relay_route;

typedef struct relay_routes relay_routes;

int relay_routes_new(relay_routes **out);
void relay_routes_free(relay_routes *t);

/*
 * Apply one LARK_ROUTES message (subject and decoded event). route.set
 * replaces the row of that subject, route.deleted removes it. BUS_EFIELD
 * or BUS_EUNKNOWN_TYPE for what is not a route; the table is unchanged.
 */
int relay_routes_apply(relay_routes *t, const char *subject,
                       const bus_event *ev);

/* The row for virtual address ip in domain; BUS_ENOT_FOUND when none. */
int relay_routes_find(relay_routes *t, const char *domain, const char *ip,
                      relay_route *out);
/* The row of pod in domain; BUS_ENOT_FOUND when none. */
int relay_routes_find_pod(relay_routes *t, const char *domain, const char *pod,
                          relay_route *out);

/*
 * Call fn for every row (a copy), in subject order, under the table's
 * lock: fn must not call back into the table. Stops when fn returns
 * nonzero and returns that.
 */
int relay_routes_each(relay_routes *t,
                      int (*fn)(const relay_route *r, void *ud), void *ud);
/* Rows held, and changes applied since creation (a cheap change test). */
size_t relay_routes_count(relay_routes *t);
uint64_t relay_routes_generation(relay_routes *t);
/* Messages refused as malformed (or not decodable) so far. */
uint64_t relay_routes_skipped(relay_routes *t);

/* ------------------------------------------------------------- follower */

/*
 * Follow LARK_ROUTES with filter (e.g. "lark.route.>") on c in a thread
 * of its own: an ephemeral consumer delivering the last message per
 * subject, then every change; on a broker outage it keeps retrying and
 * starts over with a fresh consumer. on_change (may be NULL) is called
 * from that thread after each batch that changed the table.
 */
typedef struct relay_follow relay_follow;

int relay_follow_start(bus_conn *c, const char *filter, relay_routes *t,
                       void (*on_change)(void *ud), void *ud,
                       relay_follow **out);
/* Whether the follower has caught up with the stream at least once. */
int relay_follow_synced(relay_follow *f);
void relay_follow_stop(relay_follow *f);

#endif
