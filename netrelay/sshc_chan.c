/*
 * sshc_chan.c - the channels a node relay's hub session carries (see
 * sshc.h): inbound, a forwarded-tcpip channel the hub opens, delivered to
 * the target pod's real address when the route table says it is here;
 * outbound, a socket captured in a pod, opened as a direct-tcpip channel
 * through the hub; and the bridges that join each channel to its socket
 * until either end is done; and the few helpers the session thread
 * (sshc.c) shares with them, so sshc.c calls down here and nothing here
 * calls up. All of it runs on the session thread.
 *
 * Channels are opened and bridges freed in the loop between polls, never
 * inside a libssh callback; an inbound channel is accepted and bridged
 * inside the message callback because libssh frees the message when the
 * callback returns.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "sshc-int.h"

#define OPEN_TIMEOUT_S 10
#define DELIVER_TIMEOUT_MS 2000
#define MAX_BRIDGES 1024

/* ------------------------------------------------------- shared helpers */

/* What the session thread (sshc.c) uses too: its log line and the queue
 * of channel requests taken whole. */
void
sshc__log(relay_sshc *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  relay__vlog(s->log, s->log_ud, fmt, ap);
  va_end(ap);
}

job *
sshc__take_queue(relay_sshc *s) {
  pthread_mutex_lock(&s->mu);
  job *q = s->queue;
  s->queue = NULL;
  pthread_mutex_unlock(&s->mu);
  return q;
}

/* -------------------------------------------------------------- inbound */

/* A TCP connection to ip:port within DELIVER_TIMEOUT_MS, or -errno. */
static int
connect_now(const char *ip, int port) {
  return relay__dial(ip, port, DELIVER_TIMEOUT_MS);
}

/* The virtual address a forwarded channel names: numeric, or in the
 * "tcp://ip:port" form (brackets around IPv6). */
static void
dest_ip(const char *in, char out[RELAY_IP_MAX]) {
  const char *p = in && !strncmp(in, "tcp://", 6) ? in + 6 : in ? in : "";
  snprintf(out, RELAY_IP_MAX, "%s", p[0] == '[' ? p + 1 : p);
  char *end = strrchr(out, ']');
  if (end)
    *end = 0;
  else if (p != in && (end = strrchr(out, ':')) && strchr(out, ':') == end)
    *end = 0;
}

/* Bridge ch and fd and keep the bridge; both are closed on failure. */
static void
add_bridge(relay_sshc *s, ssh_channel ch, int fd, const char *what) {
  blink *l = calloc(1, sizeof *l);
  if (!l || !(l->b = relay_bridge_new(s->ev, s->ssh, ch, fd))) {
    if (!l) {
      close(fd);
      ssh_channel_close(ch);
      ssh_channel_free(ch);
    }
    sshc__log(s, "node: %s: out of memory", what);
    free(l);
    return;
  }
  snprintf(l->what, sizeof l->what, "%s", what);
  l->next = s->bridges;
  s->bridges = l;
  s->nbridges++;
}

/* Decide on a forwarded-tcpip channel: a connected fd to the pod, or -1
 * with why. */
static int
deliver_target(relay_sshc *s, const char *ip, int port, char *why, size_t cap) {
  relay_route r;
  if (s->nbridges >= MAX_BRIDGES)
    return snprintf(why, cap, "too many channels"), -1;
  if (relay_routes_find(s->rt, s->domain, ip, &r))
    return snprintf(why, cap, "no route in domain %s", s->domain), -1;
  if (r.via_hub || strcmp(r.pod_cluster, s->cluster))
    return snprintf(why, cap, "pod %.128s is not in cluster %s", r.pod,
                    s->cluster),
           -1;
  if (!r.real_ip[0])
    return snprintf(why, cap, "pod %.128s has no address yet", r.pod), -1;
  int fd = connect_now(r.real_ip, port);
  if (fd < 0)
    snprintf(why, cap, "pod %.128s at %s:%d: %s", r.pod, r.real_ip, port,
             strerror(-fd));
  return fd;
}

/* A weights channel the hub checked: a connection to the address it
 * names, or -1 with why. The hub alone decides who may reach a node's
 * weights server (and the server checks the client's certificate). */
static int
deliver_weights(relay_sshc *s, const char *dest, char *what, size_t wcap,
                char *why, size_t cap) {
  relay_wreq r;
  if (relay_wreq_parse_dest(dest, &r, why, cap))
    return snprintf(what, wcap, "weights channel"), -1;
  snprintf(what, wcap, "weights job %s %s -> %s at %s", r.job, r.from, r.to,
           r.addr);
  if (s->nbridges >= MAX_BRIDGES)
    return snprintf(why, cap, "too many channels"), -1;
  int fd = connect_now(r.ip, r.port);
  if (fd < 0)
    snprintf(why, cap, "%s: %s", r.addr, strerror(-fd));
  return fd;
}

/* Accept m and bridge it to fd; or refuse it (fd < 0), logging why. */
static int
accept_inbound(relay_sshc *s, ssh_message m, int fd, const char *what,
               const char *why) {
  if (fd < 0) {
    sshc__log(s, "node: refused inbound %s: %s", what, why);
    return 1; /* refused by libssh's default reply */
  }
  ssh_channel ch = ssh_message_channel_request_open_reply_accept(m);
  if (!ch) {
    close(fd);
    sshc__log(s, "node: inbound %s: accept failed", what);
    return 0;
  }
  sshc__log(s, "node: inbound %s: delivered", what);
  add_bridge(s, ch, fd, what);
  return 0;
}

int
sshc__on_message(ssh_session ssh, ssh_message m, void *ud) {
  relay_sshc *s = ud;
  char ip[RELAY_IP_MAX], why[512] = "", what[400];
  (void)ssh;
  if (ssh_message_type(m) != SSH_REQUEST_CHANNEL_OPEN ||
      ssh_message_subtype(m) != SSH_CHANNEL_FORWARDED_TCPIP)
    return 1; /* refused by libssh's default reply */
  const char *dest = ssh_message_channel_request_open_destination(m);
  if (relay_wreq_is_dest(dest)) {
    int fd = deliver_weights(s, dest, what, sizeof what, why, sizeof why);
    return accept_inbound(s, m, fd, what, why);
  }
  dest_ip(dest, ip);
  int port = ssh_message_channel_request_open_destination_port(m);
  const char *from = ssh_message_channel_request_open_originator(m);
  snprintf(what, sizeof what, "domain %s %.48s -> %s:%d", s->domain,
           from ? from : "?", ip, port);
  int fd = deliver_target(s, ip, port, why, sizeof why);
  return accept_inbound(s, m, fd, what, why);
}

/* ------------------------------------------------------------- outbound */

static void
target_host(const job *j, char *out, size_t cap) {
  if (j->dest[0])
    snprintf(out, cap, "%s", j->dest);
  else if (strchr(j->ip, ':'))
    snprintf(out, cap, "tcp://[%s]:%d", j->ip, j->port);
  else
    snprintf(out, cap, "tcp://%s:%d", j->ip, j->port);
}

static void
peer_of(int fd, char ip[INET6_ADDRSTRLEN], int *port) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  snprintf(ip, INET6_ADDRSTRLEN, "127.0.0.1");
  *port = 0;
  if (getpeername(fd, (struct sockaddr *)&sa, &len))
    return;
  if (sa.ss_family == AF_INET) {
    struct sockaddr_in *v = (struct sockaddr_in *)&sa;
    inet_ntop(AF_INET, &v->sin_addr, ip, INET6_ADDRSTRLEN);
    *port = ntohs(v->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    struct sockaddr_in6 *v = (struct sockaddr_in6 *)&sa;
    inet_ntop(AF_INET6, &v->sin6_addr, ip, INET6_ADDRSTRLEN);
    *port = ntohs(v->sin6_port);
  }
}

/* Send (or go on waiting for) the direct-tcpip open of j: SSH_OK,
 * SSH_AGAIN or SSH_ERROR. */
static int
open_step(relay_sshc *s, job *j) {
  char host[sizeof j->dest], from[INET6_ADDRSTRLEN];
  int from_port;
  if (!j->ch) {
    if (!(j->ch = ssh_channel_new(s->ssh)))
      return SSH_ERROR;
    j->deadline = time(NULL) + OPEN_TIMEOUT_S;
  }
  target_host(j, host, sizeof host);
  peer_of(j->fd, from, &from_port);
  int rc = ssh_channel_open_forward(j->ch, host, j->port, from, from_port);
  if (rc == SSH_AGAIN && time(NULL) > j->deadline)
    rc = SSH_ERROR;
  return rc;
}

void
sshc__job_free(job *j) {
  if (j->fd >= 0)
    relay__reset_fd(j->fd);
  if (j->ch)
    ssh_channel_free(j->ch);
  free(j);
}

void
sshc__progress_opens(relay_sshc *s) {
  job *q = sshc__take_queue(s);
  while (q) {
    job *n = q->next;
    q->next = s->opening;
    s->opening = q;
    q = n;
  }
  for (job **pp = &s->opening; *pp;) {
    job *j = *pp;
    int rc = open_step(s, j);
    if (rc == SSH_AGAIN) {
      pp = &j->next;
      continue;
    }
    *pp = j->next;
    char what[256];
    if (j->dest[0])
      snprintf(what, sizeof what, "%.200s", j->dest);
    else
      snprintf(what, sizeof what, "domain %s -> %s:%d", s->domain, j->ip,
               j->port);
    if (rc != SSH_OK) {
      sshc__log(s, "node: hub refused %s", what);
      sshc__job_free(j);
      continue;
    }
    sshc__log(s, "node: %s: channel open through the hub", what);
    add_bridge(s, j->ch, j->fd, what);
    free(j);
  }
}

void
sshc__reap(relay_sshc *s, int all) {
  for (blink **pp = &s->bridges; *pp;) {
    blink *l = *pp;
    if (!all && !relay_bridge_done(l->b)) {
      relay_bridge_tick(l->b);
      pp = &l->next;
      continue;
    }
    uint64_t to_fd = 0, to_ch = 0;
    relay_bridge_bytes(l->b, &to_fd, &to_ch);
    sshc__log(s, "node: %s: closed (%llu bytes in, %llu out)", l->what,
              (unsigned long long)to_fd, (unsigned long long)to_ch);
    relay_bridge_free(l->b);
    *pp = l->next;
    free(l);
    s->nbridges--;
  }
}
