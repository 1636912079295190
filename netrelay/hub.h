/*
 * hub.h - the relay hub's SSH server (part of larkrelay).
 *
 * The hub accepts SSH sessions authenticated by public key only, with an
 * OpenSSH user certificate that certcheck.h accepts for role "domain".
 * An authenticated session may open direct-tcpip channels (ssh -W, -L);
 * each target is a numeric address and port, checked against the
 * certificate by a policy function, then bridged to a TCP connection
 * the hub makes. Every other channel type and global request is refused.
 *
 * Revocation: the revoked set is read from a KRL file at start and again
 * whenever the file changes (checked every reload_ms) or on
 * relay_hub_reload (SIGHUP in lark-relay); with a bus, cert.revoked
 * events on LARK_EVENTS (lark.ev.cert.>) are followed too and apply
 * within a second. A session whose certificate becomes revoked or
 * expires is closed, and its new channels are refused from then on. An
 * unreadable or unsupported KRL keeps the previous set.
 *
 * Targets: a direct-tcpip channel names its target as a numeric address
 * with the port field, or in one line as "tcp://10.2.0.5:80" or
 * "tcp://[fd00::5]:80" (at most 1024 bytes; the port field is then not
 * read). Without a bus the policy function decides and the hub connects
 * to the target itself. With a bus the routes on LARK_ROUTES decide: the
 * target must be the virtual address of a pod of the certificate's
 * domain, and the channel is carried to the relay of that pod's cluster.
 *
 * Relays: a node relay (certificate role "domain"; its cluster field,
 * when present, must match) registers with the global request
 * "tcpip-forward", bind address = its cluster name, port 0; the reply
 * carries port 0. The hub keeps (domain, cluster) -> that session, the
 * latest registration winning, until the session ends or sends
 * "cancel-tcpip-forward". A channel to a pod of cluster X is carried to
 * the session registered for (domain, X) as a "forwarded-tcpip" channel
 * whose connected address and port are the target's virtual address and
 * port, and whose originator address and port are those of the
 * direct-tcpip request. With no relay for X the channel is refused.
 *
 * Threads: relay_hub_run owns the listening socket and runs in the
 * caller's thread; each session runs in its own thread. The policy and
 * log callbacks are called from session threads, concurrently.
 */
#ifndef LARK_RELAY_HUB_H
#define LARK_RELAY_HUB_H

#include <signal.h>
#include <stdint.h>

#include "certcheck.h"

/* Whether c may reach host:port; 0 to allow, else BUS_EDENIED with why. */
typedef int (*relay_policy_fn)(const relay_cert *c, const char *host,
                               uint16_t port, void *ud, char *why, size_t cap);

/* One line for people (no newline), from any thread. */
typedef void (*relay_log_fn)(void *ud, const char *line);

typedef struct relay_hub_opts {
  const char *host;       /* listen address, numeric; default 127.0.0.1 */
  int port;               /* 0: any free port (see port_file) */
  const char *ca_path;    /* the SSH CA's ca.pub */
  const char *host_key;   /* the hub's OpenSSH private host key file */
  const char *revoked;    /* KRL file; may be NULL */
  const char *port_file;  /* written with the bound port once listening */
  int reload_ms;          /* KRL change check; default 500 */
  int auth_timeout_s;     /* a session must authenticate within; 30 */
  relay_policy_fn policy; /* NULL refuses every target */
  void *policy_ud;
  relay_log_fn log; /* may be NULL */
  void *log_ud;
  bus_conn *bus; /* NULL: no routes, no revocation events; not owned */
} relay_hub_opts;

void relay_hub_opts_init(relay_hub_opts *o);

/*
 * Serve until *stop becomes nonzero (checked at least every 200 ms);
 * *reload nonzero (may be NULL) re-reads the KRL at once and is reset.
 * Returns 0 after a stop, or a negative code when the hub cannot start
 * (CA, host key or address unusable), with detail in bus_last_error().
 */
int relay_hub_run(const relay_hub_opts *o, volatile sig_atomic_t *stop,
                  volatile sig_atomic_t *reload);

/* ----------------------------------------------------------- allow-list */

/*
 * The policy used until targets come from routes: entries
 * "<domain>=<ip>:<port>" (port "*" for any). relay_allow_policy is a
 * relay_policy_fn whose ud is a relay_allow.
 */
#define RELAY_ALLOW_MAX 64

typedef struct relay_allow {
  struct {
    char domain[RELAY_NAME_MAX];
    char host[64];
    int port; /* -1: any */
  } e[RELAY_ALLOW_MAX];
  int n;
} relay_allow;

/* Add one entry; BUS_EINVAL for a malformed one, BUS_ETOO_BIG when full. */
int relay_allow_add(relay_allow *a, const char *entry);
int relay_allow_policy(const relay_cert *c, const char *host, uint16_t port,
                       void *ud, char *why, size_t cap);

#endif
