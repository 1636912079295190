/*
 * wreq.h - a weights channel's request (part of larkrelay): which Job's
 * weights, fetched by which node from which node at which address.
 *
 * A lark-edge fetcher in one cluster reaches a node of another through
 * its cluster's relay: it connects to `lark-relay node --weights-listen`
 * and sends one line
 *
 *   WEIGHTS <job> <from-node> <to-node> <to-address>\n
 *
 * then its TLS session. The relay carries the same four words to the hub
 * and the hub to the relay of to-node's cluster as the destination of a
 * channel, "lark-weights@larkbus <job> <from> <to> <to-address>" (libssh
 * 0.10 opens no channel type of our own, so the destination marks the
 * kind: no pod target ever looks like it).
 *
 * Job and nodes are names (bus_name_valid); the address is a numeric
 * "ip:port" ("[ip6]:port"), never resolved, kept in canonical form
 * (inet_ntop), so one address has one spelling wherever it is compared.
 * All input may be hostile: it is read only within its length.
 */
#ifndef LARK_RELAY_WREQ_H
#define LARK_RELAY_WREQ_H

#include <stddef.h>

#include "certcheck.h"
#include "routes.h"

#define RELAY_WEIGHTS_LINE "WEIGHTS"
#define RELAY_WEIGHTS_CHANNEL "lark-weights@larkbus"
#define RELAY_WREQ_MAX 1024 /* a line or a destination, at most */
#define RELAY_ADDR_MAX (RELAY_IP_MAX + 8)

typedef struct relay_wreq {
  char job[RELAY_NAME_MAX], from[RELAY_NAME_MAX], to[RELAY_NAME_MAX];
  char addr[RELAY_ADDR_MAX]; /* canonical "ip:port" */
  char ip[RELAY_IP_MAX];
  int port;
} relay_wreq;

/* The client's line (without its '\n'; a '\r' before it is allowed) into
 * r; BUS_EMALFORMED with why when it is not one. */
int relay_wreq_parse_line(const char *line, size_t n, relay_wreq *r, char *why,
                          size_t cap);
/* A channel's destination; BUS_EMALFORMED when it is not a weights
 * channel's. */
int relay_wreq_parse_dest(const char *dest, relay_wreq *r, char *why,
                          size_t cap);
/* Whether dest names a weights channel (its first word). */
int relay_wreq_is_dest(const char *dest);
/* r as a channel destination. */
void relay_wreq_dest(const relay_wreq *r, char *out, size_t cap);

/* "host:port" (numeric; IPv6 in brackets) into canonical "ip:port" and
 * its parts; -1 when it is not that. */
int relay_addr_canon(const char *s, size_t n, char out[RELAY_ADDR_MAX],
                     char ip[RELAY_IP_MAX], int *port);

#endif
