/*
 * hubweights.c - the hub's weights channels: a node relay asks, on its
 * session, for a channel "lark-weights@larkbus <job> <from> <to>
 * <address>" (wreq.h); the hub carries it to the relay of <to>'s
 * cluster, which connects to <address>. The bytes are the two nodes'
 * own TLS session; the hub only joins them.
 *
 * The rule (jobs.h), checked at every open: the session's certificate
 * names a cluster and <from> is a node of the Job in that cluster, <to>
 * is a node of the Job, and <address> is one the Job's weights events
 * gave for <to>. The target relay is any relay registered for <to>'s
 * cluster whose certificate names that cluster (whatever its Domain), so
 * a relay whose certificate names no cluster never receives one.
 * Every refusal is logged with why and the open is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hub-int.h"

/* Why r may not go on from s, or 0 (to's cluster in to_cluster). */
static int
refuse_why(sess *s, const char *dest, relay_wreq *r, char *to_cluster,
           char *why, size_t cap) {
  if (!hub__may_open(s, why, cap))
    return -1;
  if (relay_wreq_parse_dest(dest, r, why, cap))
    return -1;
  if (!s->h->jobs)
    return snprintf(why, cap, "the hub follows no bus"), -1;
  if (!s->cert.cluster[0])
    return snprintf(why, cap, "certificate names no cluster"), -1;
  return relay_jobs_check(s->h->jobs, r, s->cert.cluster, to_cluster, why, cap)
             ? -1
             : 0;
}

/* A socket whose other end went to the relay of cluster, or -1. */
static int
to_relay(sess *s, const relay_wreq *r, const char *cluster, char *why,
         size_t cap) {
  char dest[RELAY_WREQ_MAX + 1];
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
    return snprintf(why, cap, "socketpair: %s", strerror(errno)), -1;
  relay_wreq_dest(r, dest, sizeof dest);
  if (hub__fwd_handoff(s->h, NULL, cluster, dest, r->port, r->from, 0, sp[1])) {
    close(sp[0]);
    close(sp[1]);
    return snprintf(why, cap, "no relay for cluster %s", cluster), -1;
  }
  return sp[0];
}

void
hub__weights_open(sess *s, ssh_message m) {
  const char *dest = ssh_message_channel_request_open_destination(m);
  char to_cluster[RELAY_NAME_MAX] = "", why[512] = "";
  relay_wreq r;
  ssh_channel ch = NULL;
  int fd = -1;
  memset(&r, 0, sizeof r);
  if (!refuse_why(s, dest, &r, to_cluster, why, sizeof why))
    fd = to_relay(s, &r, to_cluster, why, sizeof why);
  if (fd >= 0 && !(ch = ssh_message_channel_request_open_reply_accept(m))) {
    close(fd);
    fd = -1;
    snprintf(why, sizeof why, "channel setup failed");
  }
  if (fd < 0) {
    hub__log(s->h,
             "hub: refused weights channel %s serial %llu cluster %s job %s "
             "%s -> %s at %s: %s",
             s->peer, (unsigned long long)s->cert.serial,
             s->cert.cluster[0] ? s->cert.cluster : "none",
             r.job[0] ? r.job : "?", r.from[0] ? r.from : "?",
             r.to[0] ? r.to : "?", r.addr[0] ? r.addr : "?", why);
    ssh_message_reply_default(m);
    return;
  }
  hub__log(s->h,
           "hub: weights channel %s job %s %s (%s) -> %s at %s via relay %s",
           s->peer, r.job, r.from, s->cert.cluster, r.to, r.addr, to_cluster);
  hub__bridge(s, ch, fd);
}
