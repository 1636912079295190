/*
 * routes.c - the relay's routing table and the thread that follows
 * LARK_ROUTES into it.
 *
 * Invariants:
 * - Rows are kept in an array sorted by subject, one per subject: the
 *   stream keeps one message per subject, so the table is the stream's
 *   last word on each subject. Every row was checked whole before it
 *   went in (names, addresses, and the subject agreeing with the
 *   fields); a message that fails leaves the table as it was.
 * - Addresses are stored in canonical text form (inet_ntop of what
 *   parsed), and lookups canonicalise the address asked for, so
 *   "fd00::05" and "fd00::5" find the same row.
 * - The follower's consumer is ephemeral: after an outage it may be
 *   gone, so the follower starts over with a new one. Each consumer is
 *   an epoch; rows are stamped with the epoch that last delivered them,
 *   and once a new consumer has caught up, rows it did not deliver (a
 *   subject purged meanwhile) are dropped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay-int.h"
#include "routes.h"

typedef struct row {
  char subject[BUS_SUBJECT_MAX];
  uint64_t epoch;
  relay_route r;
} row;

struct relay_routes {
  pthread_mutex_t mu;
  row *rows; /* sorted by subject */
  size_t n, cap;
  uint64_t gen, skipped, epoch;
};

int
relay_routes_new(relay_routes **out) {
  relay_routes *t = calloc(1, sizeof *t);
  if (!t)
    return -ENOMEM;
  pthread_mutex_init(&t->mu, NULL);
  *out = t;
  return 0;
}

void
relay_routes_free(relay_routes *t) {
  if (!t)
    return;
  pthread_mutex_destroy(&t->mu);
  free(t->rows);
  free(t);
}

/* --------------------------------------------------------------- parse */

/* ip in canonical text form into out; -1 when it is not an address. */
static int
canon_ip(const char *ip, char out[RELAY_IP_MAX]) {
  unsigned char a[16];
  if (inet_pton(AF_INET, ip, a) == 1)
    return inet_ntop(AF_INET, a, out, RELAY_IP_MAX) ? 0 : -1;
  if (inet_pton(AF_INET6, ip, a) == 1)
    return inet_ntop(AF_INET6, a, out, RELAY_IP_MAX) ? 0 : -1;
  return -1;
}

/* s into buf; -1 when it does not fit. */
static int
copy(bus_str s, char *buf, size_t cap) {
  if (s.len >= cap)
    return -1;
  bus_str_copy(s, buf, cap);
  return 0;
}

/* The row's subject must be lark.route.<domain>.<cluster>.<pod>. */
static int
subject_agrees(const char *subject, const relay_route *r) {
  char want[BUS_SUBJECT_MAX];
  int n = snprintf(want, sizeof want, "lark.route.%s.%s.%s", r->domain,
                   r->cluster, r->pod);
  return n > 0 && (size_t)n < sizeof want && !strcmp(want, subject);
}

static int
names_ok(const relay_route *r) {
  return bus_name_valid(r->domain, BUS_NAME_MAX) &&
         bus_name_valid(r->cluster, BUS_NAME_MAX) && r->pod[0] &&
         !strpbrk(r->pod, ".*> \t");
}

/* A route.set's data into r (canonical addresses); BUS_EFIELD if bad. */
static int
parse_set(const bus_ev_route_set *d, relay_route *r) {
  char ip[RELAY_IP_MAX], real[RELAY_IP_MAX];
  memset(r, 0, sizeof *r);
  if (copy(d->domain, r->domain, sizeof r->domain) ||
      copy(d->cluster, r->cluster, sizeof r->cluster) ||
      copy(d->pod, r->pod, sizeof r->pod) || copy(d->ip, ip, sizeof ip) ||
      copy(d->realIP, real, sizeof real) ||
      copy(d->node, r->node, sizeof r->node) ||
      copy(d->podCluster, r->pod_cluster, sizeof r->pod_cluster) ||
      copy(d->cidr, r->cidr, sizeof r->cidr))
    return BUS_EFIELD;
  if (!names_ok(r) || !bus_name_valid(r->pod_cluster, BUS_NAME_MAX) ||
      canon_ip(ip, r->ip) || (real[0] && canon_ip(real, r->real_ip)))
    return BUS_EFIELD;
  if (bus_str_eq(d->via, "hub"))
    r->via_hub = 1;
  else if (!bus_str_eq(d->via, "local"))
    return BUS_EFIELD;
  return 0;
}

static int
parse_deleted(const bus_ev_route_deleted *d, relay_route *r) {
  memset(r, 0, sizeof *r);
  if (copy(d->domain, r->domain, sizeof r->domain) ||
      copy(d->cluster, r->cluster, sizeof r->cluster) ||
      copy(d->pod, r->pod, sizeof r->pod) || !names_ok(r))
    return BUS_EFIELD;
  return 0;
}

/* A route event's row into r: 0, BUS_EUNKNOWN_TYPE or BUS_EFIELD. */
static int
parse(const char *subject, const bus_event *ev, int del, relay_route *r) {
  const void *d = NULL;
  msgpack_zone z;
  int rc;
  if (!ev->type || (!del && strcmp(ev->type, "route.set")))
    return BUS_EUNKNOWN_TYPE;
  if (!subject || strlen(subject) >= BUS_SUBJECT_MAX)
    return BUS_EFIELD;
  msgpack_zone_init(&z, 1024); /* for an event decoded without its types */
  if (bus_event_typed(ev, &z, &d))
    rc = BUS_EFIELD;
  else if (!(rc = del ? parse_deleted(d, r) : parse_set(d, r)) &&
           !subject_agrees(subject, r))
    rc = BUS_EFIELD;
  msgpack_zone_destroy(&z);
  return rc;
}

/* --------------------------------------------------------------- table */

static int
by_subject(const void *key, const void *item) {
  return strcmp(key, ((const row *)item)->subject);
}

/* Index of subject, or where it would go (*found 0). Under mu. */
static size_t
locate(const relay_routes *t, const char *subject, int *found) {
  return bus_bsearch(subject, t->rows, t->n, sizeof *t->rows, by_subject,
                     found);
}

static int
put(relay_routes *t, const char *subject, const relay_route *r) {
  int found;
  size_t i = locate(t, subject, &found);
  if (!found) {
    int rc = bus_grow(&t->rows, t->n, &t->cap, sizeof *t->rows, 64);
    if (rc)
      return rc;
    memmove(&t->rows[i + 1], &t->rows[i], (t->n - i) * sizeof *t->rows);
    t->n++;
    snprintf(t->rows[i].subject, sizeof t->rows[i].subject, "%s", subject);
  }
  t->rows[i].r = *r;
  t->rows[i].epoch = t->epoch;
  return 0;
}

static void
drop_at(relay_routes *t, size_t i) {
  memmove(&t->rows[i], &t->rows[i + 1], (t->n - i - 1) * sizeof *t->rows);
  t->n--;
}

int
relay_routes_apply(relay_routes *t, const char *subject, const bus_event *ev) {
  relay_route r;
  int del = ev->type && !strcmp(ev->type, "route.deleted");
  int rc = parse(subject, ev, del, &r);
  pthread_mutex_lock(&t->mu);
  if (rc) {
    t->skipped++;
  } else if (del) {
    int found;
    size_t i = locate(t, subject, &found);
    if (found)
      drop_at(t, i);
    t->gen++;
  } else if (!(rc = put(t, subject, &r))) {
    t->gen++;
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

static int
find_by(relay_routes *t, const char *domain, const char *what, int by_pod,
        relay_route *out) {
  int rc = BUS_ENOT_FOUND;
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n; i++) {
    const relay_route *r = &t->rows[i].r;
    if (!strcmp(r->domain, domain) && !strcmp(by_pod ? r->pod : r->ip, what)) {
      *out = *r;
      rc = 0;
      break;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int
relay_routes_find(relay_routes *t, const char *domain, const char *ip,
                  relay_route *out) {
  char c[RELAY_IP_MAX];
  if (canon_ip(ip, c))
    return BUS_ENOT_FOUND;
  return find_by(t, domain, c, 0, out);
}

int
relay_routes_find_pod(relay_routes *t, const char *domain, const char *pod,
                      relay_route *out) {
  return find_by(t, domain, pod, 1, out);
}

int
relay_routes_each(relay_routes *t, int (*fn)(const relay_route *r, void *ud),
                  void *ud) {
  int rc = 0;
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n && !rc; i++) {
    relay_route copy = t->rows[i].r;
    rc = fn(&copy, ud);
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

size_t
relay_routes_count(relay_routes *t) {
  pthread_mutex_lock(&t->mu);
  size_t n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}

/* A counter of t, read under its lock. */
static uint64_t
counter(relay_routes *t, const uint64_t *c) {
  pthread_mutex_lock(&t->mu);
  uint64_t v = *c;
  pthread_mutex_unlock(&t->mu);
  return v;
}

uint64_t
relay_routes_generation(relay_routes *t) {
  return counter(t, &t->gen);
}

uint64_t
relay_routes_skipped(relay_routes *t) {
  return counter(t, &t->skipped);
}

/* A new consumer starts: rows it delivers get the new epoch. */
static void
epoch_begin(relay_routes *t) {
  pthread_mutex_lock(&t->mu);
  t->epoch++;
  pthread_mutex_unlock(&t->mu);
}

/* The consumer caught up: drop rows an older one delivered and it did
 * not. Returns whether any went. */
static int
epoch_sweep(relay_routes *t) {
  int dropped = 0;
  pthread_mutex_lock(&t->mu);
  for (size_t i = t->n; i-- > 0;)
    if (t->rows[i].epoch != t->epoch) {
      drop_at(t, i);
      dropped = 1;
    }
  if (dropped)
    t->gen++;
  pthread_mutex_unlock(&t->mu);
  return dropped;
}

/* ------------------------------------------------------------ follower */

struct relay_follow {
  relay_routes *t;
  void (*on_change)(void *ud);
  void *ud;
  relay__tail *tail;
};

static void
f_begin(void *ud) {
  epoch_begin(((relay_follow *)ud)->t);
}

static int
f_apply(const char *subject, const bus_event *ev, void *ud) {
  relay_follow *f = ud;
  if (ev)
    return !relay_routes_apply(f->t, subject, ev);
  pthread_mutex_lock(&f->t->mu);
  f->t->skipped++;
  pthread_mutex_unlock(&f->t->mu);
  return 0;
}

static int
f_caught_up(void *ud) {
  return epoch_sweep(((relay_follow *)ud)->t);
}

static void
f_changed(void *ud) {
  relay_follow *f = ud;
  if (f->on_change)
    f->on_change(f->ud);
}

int
relay_follow_start(bus_conn *c, const char *filter, relay_routes *t,
                   void (*on_change)(void *ud), void *ud, relay_follow **out) {
  relay_follow *f = calloc(1, sizeof *f);
  if (!f)
    return -ENOMEM;
  f->t = t;
  f->on_change = on_change;
  f->ud = ud;
  relay__tail_hooks h = {.stream = "LARK_ROUTES",
                         .filter = filter,
                         .deliver = BUS_DELIVER_LAST_PER_SUBJECT,
                         .begin = f_begin,
                         .apply = f_apply,
                         .caught_up = f_caught_up,
                         .changed = f_changed,
                         .ud = f};
  int rc = t ? relay__tail_start(c, &h, &f->tail)
             : bus_error(BUS_EINVAL, "follow: no table");
  if (rc) {
    free(f);
    return rc;
  }
  *out = f;
  return 0;
}

int
relay_follow_synced(relay_follow *f) {
  return relay__tail_synced(f->tail);
}

void
relay_follow_stop(relay_follow *f) {
  if (!f)
    return;
  relay__tail_stop(f->tail);
  free(f);
}
