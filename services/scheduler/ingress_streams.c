/*
 * ingress_streams.c - the nodes whose streams are known to be on the
 * broker, so that a registration need not ask for its node's stream.
 *
 * Checking a registering node's stream costs a JetStream API request,
 * which in a fleet registering at once waits behind the nodes' own: the
 * largest part of a batch's time. The set is filled from the broker's
 * own list of node streams (bus_node_streams_list) the first time it is
 * asked, and with each stream made since; it is forgotten when the
 * connection was made again, since a restarted broker has no node
 * streams (they are in memory) until their writers make them again. A
 * stream deleted meanwhile by another (a node deleted) and not made again
 * is found missing by the outbox, which makes it (svc_node_streams_repair).
 */
#include <stdlib.h>
#include <string.h>

#include "ingress-int.h"

static size_t
slot_of(const sched_streams *s, const char *node) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = node; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  size_t i = h & (s->nslots - 1);
  while (s->slots[i][0] && strcmp(s->slots[i], node))
    i = (i + 1) & (s->nslots - 1);
  return i;
}

/* Room for one more, the table at most half full. */
static int
room(sched_streams *s) {
  if (s->nslots && 2 * (s->n + 1) <= s->nslots)
    return 0;
  size_t n = s->nslots ? s->nslots * 2 : 1024;
  char(*old)[SCHED_NAME_SZ] = s->slots;
  size_t had = s->nslots;
  if (!(s->slots = calloc(n, sizeof *s->slots))) {
    s->slots = old;
    return -1;
  }
  s->nslots = n;
  for (size_t i = 0; i < had; i++)
    if (old[i][0])
      memcpy(s->slots[slot_of(s, old[i])], old[i], SCHED_NAME_SZ);
  free(old);
  return 0;
}

void
sched_streams_add(sched_streams *s, const char *node) {
  if (strlen(node) >= SCHED_NAME_SZ || room(s))
    return; /* not known: asked again next time */
  size_t i = slot_of(s, node);
  if (!s->slots[i][0]) {
    memcpy(s->slots[i], node, strlen(node) + 1);
    s->n++;
  }
}

static int
listed(const char *node, void *ud) {
  sched_streams_add(ud, node);
  return 0;
}

int
sched_streams_has(sched_streams *s, bus_conn *c, const char *node) {
  unsigned long now = bus_conn_reconnects(c);
  if (!s->listed || now != s->reconnects) {
    if (s->slots)
      memset(s->slots, 0, s->nslots * sizeof *s->slots);
    s->n = 0;
    s->reconnects = now;
    /* a list that failed is asked for again with the next batch */
    s->listed = bus_node_streams_list(c, listed, s) == 0;
  }
  return s->nslots && s->slots[slot_of(s, node)][0];
}

void
sched_streams_free(sched_streams *s) {
  free(s->slots);
  memset(s, 0, sizeof *s);
}
