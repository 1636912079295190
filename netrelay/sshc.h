/*
 * sshc.h - a node relay's SSH session to the hub for one Domain (part of
 * larkrelay; used by lark-relay node).
 *
 * A session authenticates with the Domain's certificate (<domain>.key
 * and <domain>-cert.pub), checks the hub's host key against a known
 * public key, and registers its cluster with a tcpip-forward request
 * (bind address = the cluster's name, port 0). From then on it carries
 * two kinds of channels:
 * - outbound: a connection captured in a pod, handed over with
 *   relay_sshc_submit, becomes a direct-tcpip channel to the target
 *   ("tcp://<vip>:<port>"), which the hub checks and forwards;
 * - inbound: a forwarded-tcpip channel the hub opens for a target in
 *   this cluster is delivered to the target pod's real address, when
 *   the route table has that virtual address as local to this cluster in
 *   the session's Domain; anything else is refused;
 * - weights channels (wreq.h): outbound, a lark-edge fetcher's connection
 *   handed over with relay_sshc_submit_weights; inbound, one the hub
 *   checked by the Job rule, delivered to the address it names.
 *
 * Threads: each session runs in a thread of its own, which alone touches
 * its libssh objects (libssh sessions are not thread-safe). It dials with
 * backoff (100 ms doubling to 5 s) until stopped, and dials again (and
 * registers again) whenever the connection drops, e.g. a hub restart.
 * relay_sshc_submit may be called from any thread: it queues the socket
 * and wakes the session thread through an eventfd.
 */
#ifndef LARK_RELAY_SSHC_H
#define LARK_RELAY_SSHC_H

#include "hub.h"
#include "routes.h"
#include "wreq.h"

typedef struct relay_sshc relay_sshc;

typedef struct relay_sshc_opts {
  const char *domain;
  const char *key_path;  /* OpenSSH private key */
  const char *cert_path; /* its certificate, signed by the platform's CA */
  const char *hub_host;  /* numeric address or name */
  int hub_port;
  const char *hub_key_path; /* the hub's host public key (.pub) */
  const char *cluster;      /* registered with the hub */
  relay_routes *routes;     /* shared, read only here */
  relay_log_fn log;         /* may be NULL; called from the session thread */
  void *log_ud;
} relay_sshc_opts;

/*
 * Start the session thread (it dials at once). The strings are copied;
 * routes must outlive the session. Returns 0, BUS_EINVAL for a missing
 * option or a hub key that does not load, or -errno.
 */
int relay_sshc_start(const relay_sshc_opts *o, relay_sshc **out);

/*
 * Hand over fd (a connected socket; owned by the session from now on)
 * to be carried to ip:port through the hub. Returns 0, or BUS_ECONN when
 * the session is not registered with the hub right now (then the caller
 * still owns fd).
 */
int relay_sshc_submit(relay_sshc *s, int fd, const char *ip, int port);

/* The same for a weights channel: fd (the fetcher's connection, its
 * request line read) is carried to r's node through the hub. */
int relay_sshc_submit_weights(relay_sshc *s, int fd, const relay_wreq *r);

/* Whether the session is registered with the hub right now. */
int relay_sshc_ready(relay_sshc *s);

/* Stop the thread, close every channel and free s (NULL is fine). */
void relay_sshc_stop(relay_sshc *s);

#endif
