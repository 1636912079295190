/*
 * hub-int.h - what the hub's files share (hub.c: server and sessions;
 * hubfwd.c: relay registrations and forwarded channels; hubbus.c: what
 * the hub follows on the bus and the routes policy; hubweights.c: the
 * weights channels; hublog.c: its log).
 *
 * Locking: hub.mu guards the revoked sets, the session count, the
 * registry of relays and every session's queue of forwarding requests.
 * Everything else in a session belongs to its thread.
 */
#ifndef LARK_RELAY_HUB_INT_H
#define LARK_RELAY_HUB_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include "bridge.h"
#include "hub.h"
#include "jobs.h"
#include "relay-int.h"
#include "revoked.h"
#include "routes.h"

#define HUB_HOST_MAX 64
#define HUB_MAX_CHANNELS 256 /* bridged channels per session */

typedef struct hub_reg hub_reg;
typedef struct hub_fwd hub_fwd;

typedef struct hub {
  relay_hub_opts o;
  uint8_t ca_pk[32];
  pthread_mutex_t mu;
  sshwire_krl *rev;    /* from the KRL file; under mu, swapped whole */
  sshwire_krl *ev_rev; /* from cert.revoked events; under mu */
  struct stat rev_st;  /* of the KRL file last loaded */
  int sessions;        /* under mu */
  hub_reg *regs;       /* under mu */
  volatile sig_atomic_t *stop;
  int failed;           /* stopped because the broker connection closed */
  relay_routes *routes; /* NULL without a bus: the allow-list decides */
  relay_follow *routes_follow;
  relay__tail *rev_follow;
  relay_jobs *jobs; /* the Job rule for weights channels; NULL without a bus */
  relay__tail *jobs_follow;
} hub;

typedef struct hub_link {
  relay_bridge *b;
  struct hub_link *next;
} hub_link;

typedef struct sess {
  hub *h;
  ssh_session ssh;
  ssh_event ev;
  struct ssh_server_callbacks_struct cb;
  char peer[64];
  int authed;
  relay_cert cert;
  hub_link *links; /* bridged channels */
  int nlinks;
  int wake_fd;      /* eventfd: a request was queued */
  hub_fwd *queue;   /* requests from other sessions; under h->mu */
  hub_fwd *opening; /* forwarded channels being opened */
} sess;

/* A channel's target once parsed: a canonical numeric address. */
typedef struct hub_target {
  char host[HUB_HOST_MAX];
  int port;
} hub_target;

/* One line to the hub's log callback, if any (hublog.c). */
void hub__log(hub *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the session's certificate still stands; why says why not. */
int hub__still_valid(sess *s, char *why, size_t cap);
/* Whether s may open a channel now: authenticated, its certificate
 * standing, under HUB_MAX_CHANNELS; why says why not. */
int hub__may_open(sess *s, char *why, size_t cap);
/* Bridge ch (just opened) to fd in session s; 0 or -1 (both closed). */
int hub__bridge(sess *s, ssh_channel ch, int fd);

/* "10.2.0.5" with port, "tcp://10.2.0.5:80" or "tcp://[fd00::5]:80"
 * (port then ignored) into t; -1 when it is none of those. */
int hub__parse_target(const char *dst, int port, hub_target *t);
/* A TCP connection to t within a few seconds, or -errno (hubtarget.c). */
int hub__dial(const hub_target *t);

/* ---------------------------------------------------------- hubfwd.c */

/* A tcpip-forward or cancel-tcpip-forward request; replies to m. */
void hub__fwd_request(sess *s, ssh_message m);
/*
 * Hand fd to the relay registered for (domain, cluster): it opens a
 * forwarded-tcpip channel to dest:port for orig:oport and bridges it to
 * fd, which it owns from now on. domain NULL: any relay registered for
 * cluster whose certificate names that cluster. -1 (fd untouched) when
 * no relay is registered.
 */
int hub__fwd_handoff(hub *h, const char *domain, const char *cluster,
                     const char *dest, int port, const char *orig, int oport,
                     int fd);
/* In the session loop: open what was queued, bridge what opened. */
void hub__fwd_poll(sess *s);
/* The session ends: drop its registrations and requests. */
void hub__fwd_end(sess *s);

/* ------------------------------------------------------ hubweights.c */

/* A direct-tcpip open whose destination names a weights channel
 * (wreq.h): checked by the Job rule, carried to the relay of the target
 * node's cluster, or refused with a log line. */
void hub__weights_open(sess *s, ssh_message m);

/* ---------------------------------------------------------- hubbus.c */

/* Start following routes and revocations when o.bus is set; waits (a
 * few seconds at most) for both to catch up. */
int hub__bus_start(hub *h);
/* Stop the followers; then free what they filled, once no session
 * is left to read it. */
void hub__bus_stop(hub *h);
void hub__bus_free(hub *h);
/*
 * The routes policy: t must be the virtual address of a pod of c's
 * domain with a route row; its cluster goes to cluster. 0, or
 * BUS_EDENIED with why.
 */
int hub__route_check(hub *h, const relay_cert *c, const hub_target *t,
                     char *cluster, size_t ccap, char *why, size_t cap);

#endif
