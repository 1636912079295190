/*
 * hubsess.c - what both the session loop (hub.c) and a hand-over from
 * another session (hubfwd.c) do to a session: ask whether its certificate
 * still stands (and whether it may open one more channel), and bridge a
 * channel opened in it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "hub-int.h"

int
hub__still_valid(sess *s, char *why, size_t cap) {
  hub *h = s->h;
  pthread_mutex_lock(&h->mu);
  int revoked = relay_cert_revoked(h->rev, &s->cert) ||
                relay_cert_revoked(h->ev_rev, &s->cert);
  pthread_mutex_unlock(&h->mu);
  if (revoked)
    snprintf(why, cap, "certificate revoked");
  else if ((uint64_t)time(NULL) >= s->cert.valid_before)
    snprintf(why, cap, "certificate expired");
  else
    return 1;
  return 0;
}

int
hub__may_open(sess *s, char *why, size_t cap) {
  if (!s->authed)
    return snprintf(why, cap, "not authenticated"), 0;
  if (!hub__still_valid(s, why, cap))
    return 0;
  if (s->nlinks >= HUB_MAX_CHANNELS)
    return snprintf(why, cap, "too many channels"), 0;
  return 1;
}

int
hub__bridge(sess *s, ssh_channel ch, int fd) {
  hub_link *l = calloc(1, sizeof *l);
  if (!l) {
    close(fd);
    ssh_channel_close(ch);
    ssh_channel_free(ch);
    return -1;
  }
  if (!(l->b = relay_bridge_new(s->ev, s->ssh, ch, fd))) {
    free(l);
    return -1;
  }
  l->next = s->links;
  s->links = l;
  s->nlinks++;
  return 0;
}
