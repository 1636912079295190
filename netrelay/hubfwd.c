/*
 * hubfwd.c - the hub's registry of node relays and the channels it
 * carries to them.
 *
 * Invariants:
 * - The registry maps (domain, cluster) to the session that registered
 *   last; entries live under hub.mu and a session removes its own
 *   before it ends, so a session found there is alive while hub.mu is
 *   held.
 * - A session's libssh objects are touched only by its own thread. A
 *   session that needs a channel opened on a relay's session queues a
 *   request (one end of a socketpair and the target) on that session
 *   under hub.mu and writes its eventfd; the relay's thread opens a
 *   forwarded-tcpip channel when it wakes and bridges it to that end.
 *   The other end is bridged to the originating channel at once, so
 *   bytes sent early wait in the socketpair and then in the windows.
 * - Forwarded channels are opened without blocking the relay's session:
 *   the open is re-tried after each poll round until the relay confirms
 *   it, refuses it, or OPEN_TIMEOUT_S passes. A request that fails
 *   closes its end, which ends the originating channel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hub-int.h"

#define OPEN_TIMEOUT_S 10
#define MAX_FORWARDS 1024 /* channels a relay session carries */

struct hub_reg {
  char domain[RELAY_NAME_MAX], cluster[RELAY_NAME_MAX];
  sess *s;
  hub_reg *next;
};

struct hub_fwd {
  int fd;
  char dest[RELAY_WREQ_MAX + 1];
  int port;
  char orig[HUB_HOST_MAX];
  int oport;
  ssh_channel ch; /* once the open began */
  time_t since;
  hub_fwd *next;
};

static void
fwd_drop(hub_fwd *r) {
  close(r->fd);
  if (r->ch)
    ssh_channel_free(r->ch);
  free(r);
}

/* ---------------------------------------------------------- registry */

/* The entry for (domain, cluster); under mu. */
static hub_reg **
reg_find(hub *h, const char *domain, const char *cluster) {
  hub_reg **pp = &h->regs;
  for (; *pp; pp = &(*pp)->next)
    if (!strcmp((*pp)->domain, domain) && !strcmp((*pp)->cluster, cluster))
      break;
  return pp;
}

static int
reg_add(sess *s, const char *cluster) {
  hub *h = s->h;
  int rc = 0;
  pthread_mutex_lock(&h->mu);
  hub_reg **pp = reg_find(h, s->cert.domain, cluster);
  if (!*pp && (*pp = calloc(1, sizeof **pp))) {
    snprintf((*pp)->domain, sizeof(*pp)->domain, "%s", s->cert.domain);
    snprintf((*pp)->cluster, sizeof(*pp)->cluster, "%s", cluster);
  }
  if (*pp)
    (*pp)->s = s; /* the latest registration wins */
  else
    rc = -ENOMEM;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

static void
reg_cancel(sess *s, const char *cluster) {
  hub *h = s->h;
  pthread_mutex_lock(&h->mu);
  hub_reg **pp = reg_find(h, s->cert.domain, cluster), *r = *pp;
  if (r && r->s == s) {
    *pp = r->next;
    free(r);
  }
  pthread_mutex_unlock(&h->mu);
}

/* Why a tcpip-forward from s for cluster is refused, or 0. */
static int
refuse_why(sess *s, const char *cluster, int port, char *why, size_t cap) {
  if (!s->authed)
    return snprintf(why, cap, "not authenticated"), -1;
  if (!hub__still_valid(s, why, cap))
    return -1;
  if (!cluster || !bus_name_valid(cluster, BUS_NAME_MAX))
    return snprintf(why, cap, "bind address is not a cluster name"), -1;
  if (port != 0)
    return snprintf(why, cap, "port must be 0"), -1;
  if (s->cert.cluster[0] && strcmp(s->cert.cluster, cluster))
    return snprintf(why, cap, "certificate is for cluster %s", s->cert.cluster),
           -1;
  return 0;
}

void
hub__fwd_request(sess *s, ssh_message m) {
  const char *cluster = ssh_message_global_request_address(m);
  int port = ssh_message_global_request_port(m);
  int cancel =
      ssh_message_subtype(m) == SSH_GLOBAL_REQUEST_CANCEL_TCPIP_FORWARD;
  char why[256] = "";
  if (refuse_why(s, cluster, port, why, sizeof why) ||
      (!cancel && reg_add(s, cluster))) {
    hub__log(s->h, "hub: refused relay %s domain %s cluster %.64s: %s", s->peer,
             s->cert.domain, cluster ? cluster : "",
             why[0] ? why : "out of memory");
    ssh_message_reply_default(m);
    return;
  }
  if (cancel)
    reg_cancel(s, cluster);
  ssh_message_global_request_reply_success(m, 0);
  hub__log(s->h, "hub: relay %s domain %s cluster %s %s", s->peer,
           s->cert.domain, cluster, cancel ? "cancelled" : "registered");
}

/* A relay registered for cluster, of any domain, whose certificate
 * names that cluster; under mu. */
static hub_reg *
reg_of_cluster(hub *h, const char *cluster) {
  for (hub_reg *r = h->regs; r; r = r->next)
    if (!strcmp(r->cluster, cluster) && !strcmp(r->s->cert.cluster, cluster))
      return r;
  return NULL;
}

/* ----------------------------------------------------------- handoff */

int
hub__fwd_handoff(hub *h, const char *domain, const char *cluster,
                 const char *dest, int port, const char *orig, int oport,
                 int fd) {
  hub_fwd *r = calloc(1, sizeof *r);
  if (!r)
    return -1;
  r->fd = fd;
  snprintf(r->dest, sizeof r->dest, "%s", dest);
  r->port = port;
  snprintf(r->orig, sizeof r->orig, "%s", orig);
  r->oport = oport;
  pthread_mutex_lock(&h->mu);
  hub_reg *g =
      domain ? *reg_find(h, domain, cluster) : reg_of_cluster(h, cluster);
  if (g) {
    hub_fwd **pp = &g->s->queue;
    while (*pp)
      pp = &(*pp)->next;
    *pp = r;
    uint64_t one = 1;
    ssize_t w = write(g->s->wake_fd, &one, sizeof one);
    (void)w; /* an eventfd only refuses at 2^64 - 1 pending wakes */
  }
  pthread_mutex_unlock(&h->mu);
  if (!g)
    free(r);
  return g ? 0 : -1;
}

/* Push the open of r on; 1 when it is settled (r gone), 0 pending. */
static int
fwd_step(sess *s, hub_fwd *r) {
  int blocking = ssh_is_blocking(s->ssh);
  ssh_set_blocking(s->ssh, 0);
  int rc = ssh_channel_open_reverse_forward(r->ch, r->dest, r->port, r->orig,
                                            r->oport);
  ssh_set_blocking(s->ssh, blocking);
  if (rc == SSH_AGAIN && time(NULL) - r->since < OPEN_TIMEOUT_S)
    return 0;
  if (rc == SSH_OK) {
    hub__bridge(s, r->ch, r->fd);
    free(r);
    return 1;
  }
  hub__log(s->h, "hub: relay %s did not open %.600s:%d: %s", s->peer, r->dest,
           r->port, rc == SSH_AGAIN ? "timed out" : ssh_get_error(s->ssh));
  fwd_drop(r);
  return 1;
}

/* Begin opening each queued request (appended to s->opening). */
static void
fwd_begin(sess *s, hub_fwd *list) {
  hub_fwd **tail = &s->opening;
  while (*tail)
    tail = &(*tail)->next;
  while (list) {
    hub_fwd *r = list;
    list = r->next;
    r->next = NULL;
    if (s->nlinks >= MAX_FORWARDS || !(r->ch = ssh_channel_new(s->ssh))) {
      hub__log(s->h, "hub: relay %s: too many channels", s->peer);
      fwd_drop(r);
      continue;
    }
    r->since = time(NULL);
    *tail = r;
    tail = &r->next;
  }
}

void
hub__fwd_poll(sess *s) {
  pthread_mutex_lock(&s->h->mu);
  hub_fwd *list = s->queue;
  s->queue = NULL;
  pthread_mutex_unlock(&s->h->mu);
  fwd_begin(s, list);
  for (hub_fwd **pp = &s->opening; *pp;) {
    hub_fwd *r = *pp, *next = r->next;
    if (fwd_step(s, r))
      *pp = next;
    else
      pp = &r->next;
  }
}

void
hub__fwd_end(sess *s) {
  hub *h = s->h;
  pthread_mutex_lock(&h->mu);
  for (hub_reg **pp = &h->regs; *pp;) {
    hub_reg *r = *pp;
    if (r->s == s) {
      *pp = r->next;
      free(r);
    } else {
      pp = &r->next;
    }
  }
  hub_fwd *list = s->queue;
  s->queue = NULL;
  pthread_mutex_unlock(&h->mu);
  while (list) {
    hub_fwd *r = list;
    list = r->next;
    fwd_drop(r);
  }
  while (s->opening) {
    hub_fwd *r = s->opening;
    s->opening = r->next;
    fwd_drop(r);
  }
}
