/*
 * hubbus.c - what the hub follows on the bus: the routes of every
 * cluster (LARK_ROUTES, lark.route.>) for its routes policy,
 * cert.revoked events (LARK_EVENTS, lark.ev.cert.>) for revocation, and
 * lark-engine's events (LARK_EVENTS, lark.ev.engine.>) for the Job rule
 * of weights channels (jobs.h).
 *
 * Invariants:
 * - Revocations from events go into hub.ev_rev under hub.mu, where the
 *   sessions look at every poll round: a revocation closes the sessions
 *   of its certificate within a round of the follower's fetch.
 * - Each serial has its own subject, and cert.revoked comes after its
 *   cert.issued, so the last message per subject is all the hub needs.
 * - Without a bus none of this runs, and the allow-list decides.
 * - Engine events are read from the start (not the last per subject:
 *   a Job's addresses come from many events on one subject), and
 *   applying one again changes nothing, so a follower starting over
 *   after an outage needs no reset.
 * - The followers name their consumer for the hub's principal
 *   (follow.c): relay-<key> for routes and cert events, relay-engine-<key>
 *   for engine events (two filters on one stream need two names), and
 *   the hub's broker rules allow exactly these filters under these
 *   names (deploy/policy.c, role relay-hub).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hub-int.h"

#define SYNC_WAIT_MS 5000

static int
rev_apply(const char *subject, const bus_event *ev, void *ud) {
  hub *h = ud;
  char serial[80] = "";
  (void)subject;
  if (!ev || !ev->type || strcmp(ev->type, "cert.revoked"))
    return 0;
  pthread_mutex_lock(&h->mu);
  int rc = relay_revoked_apply(h->ev_rev, ev);
  pthread_mutex_unlock(&h->mu);
  const bus_ev_cert_revoked *d = bus_as_cert_revoked(ev);
  if (d)
    bus_str_copy(d->serial, serial, sizeof serial);
  if (rc)
    hub__log(h, "hub: unusable cert.revoked (seq %llu): %s",
             (unsigned long long)ev->seq, bus_strerror(rc));
  else
    hub__log(h, "hub: certificate %s revoked", serial);
  return !rc;
}

static int
jobs_apply(const char *subject, const bus_event *ev, void *ud) {
  hub *h = ud;
  int rc = relay_jobs_apply(h->jobs, ev);
  if (rc < 0)
    hub__log(h, "hub: unusable event on %s (seq %llu): %s",
             subject ? subject : "?", ev ? (unsigned long long)ev->seq : 0ULL,
             bus_strerror(rc));
  return rc == 1;
}

static void
wait_synced(hub *h) {
  for (int i = 0; i < SYNC_WAIT_MS / 50; i++) {
    if (relay_follow_synced(h->routes_follow) &&
        relay__tail_synced(h->rev_follow) && relay__tail_synced(h->jobs_follow))
      return;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  hub__log(h, "hub: routes or revocations not caught up yet; serving anyway");
}

int
hub__bus_start(hub *h) {
  int rc;
  if (!h->o.bus)
    return 0;
  if ((rc = sshwire_krl_new(&h->ev_rev)) ||
      (rc = relay_routes_new(&h->routes)) || (rc = relay_jobs_new(&h->jobs)))
    return rc;
  relay__tail_hooks k = {.stream = "LARK_EVENTS",
                         .filter = "lark.ev.cert.>",
                         .deliver = BUS_DELIVER_LAST_PER_SUBJECT,
                         .apply = rev_apply,
                         .ud = h};
  relay__tail_hooks e = {.stream = "LARK_EVENTS",
                         .filter = "lark.ev.engine.>",
                         .prefix = RELAY_ENGINE_PREFIX,
                         .deliver = BUS_DELIVER_ALL,
                         .apply = jobs_apply,
                         .ud = h};
  if ((rc = relay_follow_start(h->o.bus, "lark.route.>", h->routes, NULL, NULL,
                               &h->routes_follow)) ||
      (rc = relay__tail_start(h->o.bus, &k, &h->rev_follow)) ||
      (rc = relay__tail_start(h->o.bus, &e, &h->jobs_follow)))
    return rc;
  wait_synced(h);
  hub__log(h, "hub: following routes (%zu rows), revocations and jobs (%zu)",
           relay_routes_count(h->routes), relay_jobs_count(h->jobs));
  return 0;
}

void
hub__bus_stop(hub *h) {
  relay_follow_stop(h->routes_follow);
  h->routes_follow = NULL;
  relay__tail_stop(h->rev_follow);
  h->rev_follow = NULL;
  relay__tail_stop(h->jobs_follow);
  h->jobs_follow = NULL;
}

void
hub__bus_free(hub *h) {
  relay_routes_free(h->routes);
  h->routes = NULL;
  sshwire_krl_free(h->ev_rev);
  h->ev_rev = NULL;
  relay_jobs_free(h->jobs);
  h->jobs = NULL;
}

int
hub__route_check(hub *h, const relay_cert *c, const hub_target *t,
                 char *cluster, size_t ccap, char *why, size_t cap) {
  relay_route r;
  if (relay_routes_find(h->routes, c->domain, t->host, &r)) {
    snprintf(why, cap, "target %s is not a pod of domain %s", t->host,
             c->domain);
    return BUS_EDENIED;
  }
  snprintf(cluster, ccap, "%s", r.pod_cluster);
  return 0;
}
