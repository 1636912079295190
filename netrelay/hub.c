/*
 * hub.c - the relay hub: a libssh server that authenticates with the
 * platform's SSH certificates and bridges direct-tcpip channels, to a
 * target it dials itself (allow-list) or to a node relay (routes).
 *
 * Invariants:
 * - A session counts as authenticated only when libssh reports a valid
 *   signature (SSH_PUBLICKEY_STATE_VALID) for a key whose certificate
 *   relay_cert_check accepted in the same callback; the certificate is
 *   kept in the session, and nothing else sets `authed`.
 * - The revoked sets (the KRL's, swapped whole, and the one cert.revoked
 *   events fill) are read under hub->mu, once per poll round (<= 200 ms)
 *   and at every channel open, so a revocation closes a session within
 *   a round of reaching the hub.
 * - Channel targets are numeric addresses, put in canonical form before
 *   a policy sees them: the hub never resolves names.
 * - libssh objects of a session are touched only by its thread; another
 *   session hands it work through its queue and wakes it with its
 *   eventfd (hubfwd.c). A bridge is freed only from the session loop,
 *   never inside a callback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "hub-int.h"

/* ---------------------------------------------------------------- util */

static uint64_t
now_s(void) {
  return (uint64_t)time(NULL);
}

void
relay_hub_opts_init(relay_hub_opts *o) {
  memset(o, 0, sizeof *o);
  o->host = "127.0.0.1";
  o->reload_ms = 500;
  o->auth_timeout_s = 30;
}

/* ---------------------------------------------------------- revocation */

/* Load the KRL when its file changed (or force); keep the old set on
 * failure. Called from the accept loop only. */
static void
reload(hub *h, int force) {
  struct stat st;
  char why[256] = "";
  if (!h->o.revoked)
    return;
  if (stat(h->o.revoked, &st)) {
    if (force)
      hub__log(h, "hub: revoked file %s: %s", h->o.revoked, strerror(errno));
    return;
  }
  if (!force && st.st_ino == h->rev_st.st_ino &&
      st.st_size == h->rev_st.st_size &&
      st.st_mtim.tv_sec == h->rev_st.st_mtim.tv_sec &&
      st.st_mtim.tv_nsec == h->rev_st.st_mtim.tv_nsec)
    return;
  sshwire_krl *r;
  if (relay_revoked_load_file(h->o.revoked, h->ca_pk, &r, why, sizeof why)) {
    hub__log(h, "hub: keeping the previous revoked set: %s", why);
    h->rev_st = st; /* do not retry a bad file every round */
    return;
  }
  pthread_mutex_lock(&h->mu);
  sshwire_krl *old = h->rev;
  h->rev = r;
  pthread_mutex_unlock(&h->mu);
  sshwire_krl_free(old);
  h->rev_st = st;
  hub__log(h, "hub: revoked set loaded from %s", h->o.revoked);
}

/* ---------------------------------------------------------------- auth */

static int
check_key(sess *s, ssh_key key, relay_cert *c, char *why, size_t cap) {
  char *b64 = NULL;
  uint8_t *blob = NULL;
  size_t n = 0;
  int rc = BUS_EDENIED;
  if (ssh_key_type(key) != SSH_KEYTYPE_ED25519_CERT01) {
    snprintf(why, cap, "no certificate offered (%s)",
             ssh_key_type_to_char(ssh_key_type(key)));
    return rc;
  }
  if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK || !b64) {
    snprintf(why, cap, "unreadable key");
    return rc;
  }
  size_t bl = strlen(b64), cap2 = bl / 4 * 3 + 3;
  if ((blob = malloc(cap2)) &&
      !sodium_base642bin(blob, cap2, b64, bl, NULL, &n, NULL,
                         sodium_base64_VARIANT_ORIGINAL)) {
    relay_check chk = {.ca_pk = s->h->ca_pk, .now = now_s(), .role = "domain"};
    pthread_mutex_lock(&s->h->mu);
    chk.revoked = s->h->rev;
    rc = relay_cert_check(&chk, blob, n, c, why, cap);
    if (!rc && relay_cert_revoked(s->h->ev_rev, c)) {
      snprintf(why, cap, "certificate revoked");
      rc = BUS_EDENIED;
    }
    pthread_mutex_unlock(&s->h->mu);
  } else {
    snprintf(why, cap, "unreadable certificate");
  }
  free(blob);
  ssh_string_free_char(b64);
  return rc;
}

/*
 * libssh calls this for a probe (state NONE) and again with the
 * signature checked (state VALID). The certificate is checked both
 * times; only the second authenticates.
 */
static int
on_auth_pubkey(ssh_session ssh, const char *user, struct ssh_key_struct *key,
               char state, void *ud) {
  sess *s = ud;
  relay_cert c;
  char why[256] = "";
  (void)ssh;
  if (s->authed)
    return SSH_AUTH_DENIED;
  if (state != SSH_PUBLICKEY_STATE_NONE && state != SSH_PUBLICKEY_STATE_VALID)
    return SSH_AUTH_DENIED;
  if (check_key(s, key, &c, why, sizeof why)) {
    if (state == SSH_PUBLICKEY_STATE_NONE || c.serial)
      hub__log(s->h, "hub: refused %s (user %.64s serial %llu): %s", s->peer,
               user ? user : "", (unsigned long long)c.serial, why);
    return SSH_AUTH_DENIED;
  }
  if (state == SSH_PUBLICKEY_STATE_NONE)
    return SSH_AUTH_SUCCESS; /* the key would do: the client signs next */
  s->cert = c;
  s->authed = 1;
  hub__log(s->h, "hub: session %s: %s domain %s serial %llu", s->peer, c.name,
           c.domain, (unsigned long long)c.serial);
  return SSH_AUTH_SUCCESS;
}

/* ------------------------------------------------------------- channels */

/* Free the bridges that are done (all of them when all). */
static void
reap(sess *s, int all) {
  for (hub_link **pp = &s->links; *pp;) {
    hub_link *l = *pp;
    if (all || relay_bridge_done(l->b)) {
      *pp = l->next;
      relay_bridge_free(l->b);
      free(l);
      s->nlinks--;
    } else {
      relay_bridge_tick(l->b);
      pp = &l->next;
    }
  }
}

/* Whether a direct-tcpip open may go on; the target (and, with routes,
 * the target pod's cluster) when it may. */
static int
decide(sess *s, ssh_message m, hub_target *t, char *cluster, char *why,
       size_t cap) {
  hub *h = s->h;
  const char *dst = ssh_message_channel_request_open_destination(m);
  int port = ssh_message_channel_request_open_destination_port(m);
  if (!hub__may_open(s, why, cap))
    return -1;
  if (hub__parse_target(dst, port, t)) {
    snprintf(t->host, sizeof t->host, "%.40s", dst ? dst : "");
    t->port = port;
    return snprintf(why, cap, "target is not a numeric address and port"), -1;
  }
  if (h->routes)
    return hub__route_check(h, &s->cert, t, cluster, RELAY_NAME_MAX, why, cap)
               ? -1
               : 0;
  if (!h->o.policy || h->o.policy(&s->cert, t->host, (uint16_t)t->port,
                                  h->o.policy_ud, why, cap)) {
    if (!why[0])
      snprintf(why, cap, "target not allowed");
    return -1;
  }
  return 0;
}

/* A socket whose other end went to the relay of cluster, or -1. */
static int
via_relay(sess *s, ssh_message m, const hub_target *t, const char *cluster,
          char *why, size_t cap) {
  int sp[2];
  const char *orig = ssh_message_channel_request_open_originator(m);
  int oport = ssh_message_channel_request_open_originator_port(m);
  char o[HUB_HOST_MAX];
  snprintf(o, sizeof o, "%s", orig && strlen(orig) < sizeof o ? orig : "");
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
    return snprintf(why, cap, "socketpair: %s", strerror(errno)), -1;
  if (hub__fwd_handoff(s->h, s->cert.domain, cluster, t->host, t->port, o,
                       oport, sp[1])) {
    close(sp[0]);
    close(sp[1]);
    return snprintf(why, cap, "no relay for cluster %s", cluster), -1;
  }
  return sp[0];
}

static void
on_direct_tcpip(sess *s, ssh_message m) {
  hub_target t = {.host = ""};
  char cluster[RELAY_NAME_MAX] = "", why[256] = "";
  int fd = -1;
  if (!decide(s, m, &t, cluster, why, sizeof why)) {
    if (s->h->routes)
      fd = via_relay(s, m, &t, cluster, why, sizeof why);
    else if ((fd = hub__dial(&t)) < 0)
      snprintf(why, sizeof why, "connect: %s", strerror(-fd));
  }
  ssh_channel ch = NULL;
  if (fd >= 0 && !(ch = ssh_message_channel_request_open_reply_accept(m))) {
    close(fd);
    fd = -1;
    snprintf(why, sizeof why, "channel setup failed");
  }
  if (fd < 0) {
    hub__log(s->h, "hub: refused channel %s serial %llu to %s:%d: %s", s->peer,
             (unsigned long long)s->cert.serial, t.host, t.port, why);
    ssh_message_reply_default(m);
    return;
  }
  hub__log(s->h, "hub: channel %s domain %s to %s:%d%s%s", s->peer,
           s->cert.domain, t.host, t.port, cluster[0] ? " via relay " : "",
           cluster);
  hub__bridge(s, ch, fd);
}

/* Channel opens and global requests; anything else gets libssh's
 * refusal. */
static int
on_message(ssh_session ssh, ssh_message m, void *ud) {
  sess *s = ud;
  (void)ssh;
  int type = ssh_message_type(m), sub = ssh_message_subtype(m);
  if (type == SSH_REQUEST_CHANNEL_OPEN && sub == SSH_CHANNEL_DIRECT_TCPIP &&
      relay_wreq_is_dest(ssh_message_channel_request_open_destination(m))) {
    hub__weights_open(s, m);
    return 0;
  }
  if (type == SSH_REQUEST_CHANNEL_OPEN && sub == SSH_CHANNEL_DIRECT_TCPIP) {
    on_direct_tcpip(s, m);
    return 0;
  }
  if (type == SSH_REQUEST_GLOBAL &&
      (sub == SSH_GLOBAL_REQUEST_TCPIP_FORWARD ||
       sub == SSH_GLOBAL_REQUEST_CANCEL_TCPIP_FORWARD)) {
    hub__fwd_request(s, m);
    return 0;
  }
  return 1;
}

static int
on_wake(socket_t fd, int revents, void *ud) {
  (void)revents, (void)ud;
  relay__wake_drain(fd);
  return 0;
}

/* ------------------------------------------------------------- session */

/* Poll until the client leaves, the hub stops, or the certificate falls:
 * revoked or expired closes the session. */
static void
session_loop(sess *s) {
  time_t start = time(NULL);
  char why[256];
  while (!*s->h->stop) {
    if (ssh_event_dopoll(s->ev, 200) == SSH_ERROR && !s->links)
      break;
    reap(s, 0);
    hub__fwd_poll(s);
    int st = ssh_get_status(s->ssh);
    if (!ssh_is_connected(s->ssh) || (st & (SSH_CLOSED | SSH_CLOSED_ERROR)))
      break;
    if (!s->authed && time(NULL) - start > s->h->o.auth_timeout_s)
      break;
    if (s->authed && !hub__still_valid(s, why, sizeof why)) {
      hub__log(s->h, "hub: closing %s serial %llu: %s", s->peer,
               (unsigned long long)s->cert.serial, why);
      break;
    }
  }
}

static void
peer_name(sess *s) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char a[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (getpeername(ssh_get_fd(s->ssh), (struct sockaddr *)&sa, &len) == 0) {
    if (sa.ss_family == AF_INET) {
      struct sockaddr_in *v = (struct sockaddr_in *)&sa;
      inet_ntop(AF_INET, &v->sin_addr, a, sizeof a);
      port = ntohs(v->sin_port);
    } else if (sa.ss_family == AF_INET6) {
      struct sockaddr_in6 *v = (struct sockaddr_in6 *)&sa;
      inet_ntop(AF_INET6, &v->sin6_addr, a, sizeof a);
      port = ntohs(v->sin6_port);
    }
  }
  snprintf(s->peer, sizeof s->peer, "%s:%d", a, port);
}

/* The event loop of an authenticated-or-not session, with its wake fd. */
static int
session_event(sess *s) {
  if (!(s->ev = ssh_event_new()) ||
      ssh_event_add_session(s->ev, s->ssh) != SSH_OK)
    return -1;
  if (ssh_event_add_fd(s->ev, s->wake_fd, POLLIN, on_wake, s) != SSH_OK)
    return -1;
  return 0;
}

static void *
session_main(void *arg) {
  sess *s = arg;
  hub *h = s->h;
  peer_name(s);
  s->cb.userdata = s;
  s->cb.auth_pubkey_function = on_auth_pubkey;
  ssh_callbacks_init(&s->cb);
  ssh_set_server_callbacks(s->ssh, &s->cb);
  ssh_set_message_callback(s->ssh, on_message, s);
  ssh_set_auth_methods(s->ssh, SSH_AUTH_METHOD_PUBLICKEY);
  if (ssh_handle_key_exchange(s->ssh) != SSH_OK)
    hub__log(h, "hub: key exchange with %s failed: %s", s->peer,
             ssh_get_error(s->ssh));
  else if (session_event(s))
    hub__log(h, "hub: session %s: no event loop", s->peer);
  else
    session_loop(s);
  hub__fwd_end(s);
  reap(s, 1);
  if (s->ev) {
    ssh_event_remove_fd(s->ev, s->wake_fd);
    ssh_event_remove_session(s->ev, s->ssh);
    ssh_event_free(s->ev);
  }
  close(s->wake_fd);
  ssh_disconnect(s->ssh);
  ssh_free(s->ssh);
  free(s);
  pthread_mutex_lock(&h->mu);
  h->sessions--;
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---------------------------------------------------------------- server */

static int
start_session(hub *h, ssh_session ssh) {
  pthread_t t;
  pthread_attr_t at;
  sess *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->h = h;
  s->ssh = ssh;
  if ((s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    free(s);
    return -errno;
  }
  long timeout = 10;
  ssh_options_set(ssh, SSH_OPTIONS_TIMEOUT, &timeout);
  pthread_mutex_lock(&h->mu);
  h->sessions++;
  pthread_mutex_unlock(&h->mu);
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &at, session_main, s);
  pthread_attr_destroy(&at);
  if (rc) {
    pthread_mutex_lock(&h->mu);
    h->sessions--;
    pthread_mutex_unlock(&h->mu);
    close(s->wake_fd);
    free(s);
    return -rc;
  }
  return 0;
}

static int
write_port_file(const char *path, int port) {
  char line[16];
  int n = snprintf(line, sizeof line, "%d\n", port);
  return bus_file_write(path, line, (size_t)n, 0644);
}

static int
bound_port(ssh_bind b) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(ssh_bind_get_fd(b), (struct sockaddr *)&sa, &len))
    return -1;
  if (sa.ss_family == AF_INET)
    return ntohs(((struct sockaddr_in *)&sa)->sin_port);
  return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
}

static int
listen_on(hub *h, ssh_bind b) {
  unsigned int port = (unsigned int)h->o.port;
  if (ssh_bind_options_set(b, SSH_BIND_OPTIONS_BINDADDR, h->o.host) ||
      ssh_bind_options_set(b, SSH_BIND_OPTIONS_BINDPORT, &port) ||
      ssh_bind_options_set(b, SSH_BIND_OPTIONS_HOSTKEY, h->o.host_key))
    return bus_error(BUS_EINVAL, "hub options: %s", ssh_get_error(b));
  if (ssh_bind_listen(b) != SSH_OK)
    return bus_error(BUS_EINVAL, "listen on %s:%d: %s", h->o.host, h->o.port,
                     ssh_get_error(b));
  int p = bound_port(b);
  hub__log(h, "hub: listening on %s:%d", h->o.host, p);
  if (h->o.port_file && write_port_file(h->o.port_file, p))
    return bus_error(-EIO, "cannot write %s", h->o.port_file);
  return 0;
}

static void
accept_one(hub *h, ssh_bind b) {
  ssh_session ssh = ssh_new();
  if (!ssh)
    return;
  if (ssh_bind_accept(b, ssh) != SSH_OK) {
    hub__log(h, "hub: accept: %s", ssh_get_error(b));
    ssh_free(ssh);
    return;
  }
  /* channel opens, confirmations and small requests go out at once: with
   * Nagle's algorithm each would wait for the relay's delayed ACK */
  int on = 1;
  setsockopt(ssh_get_fd(ssh), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (start_session(h, ssh)) {
    hub__log(h, "hub: no thread for a session");
    ssh_disconnect(ssh);
    ssh_free(ssh);
  }
}

/* Accept until stop; check the KRL every reload_ms. */
static void
serve(hub *h, ssh_bind b, volatile sig_atomic_t *reload_flag) {
  int64_t last = 0;
  int every = h->o.reload_ms > 0 ? h->o.reload_ms : 500;
  while (!*h->stop) {
    if (h->o.bus && bus_conn_closed(h->o.bus)) {
      hub__log(h, "hub: the broker connection closed for good; stopping");
      h->failed = 1;
      *h->stop = 1; /* the sessions stop with the hub */
      return;
    }
    struct pollfd p = {.fd = ssh_bind_get_fd(b), .events = POLLIN};
    int r = poll(&p, 1, every < 200 ? every : 200);
    if (r == 1 && (p.revents & POLLIN))
      accept_one(h, b);
    int64_t now = bus_mono_ms();
    int force = reload_flag && *reload_flag;
    if (force)
      *reload_flag = 0;
    if (force || now - last >= every) {
      reload(h, force);
      last = now;
    }
  }
}

/* Wait (up to 5 s) for session threads to notice the stop. */
static void
drain(hub *h) {
  for (int i = 0; i < 250; i++) {
    pthread_mutex_lock(&h->mu);
    int n = h->sessions;
    pthread_mutex_unlock(&h->mu);
    if (!n)
      return;
    bus_sleep_ms(20);
  }
}

/*
 * The hub lives on the heap: should a session thread outlive the drain
 * (a peer stuck in key exchange), the hub and its lock are left to the
 * process's exit instead of being freed under it.
 */
int
relay_hub_run(const relay_hub_opts *o, volatile sig_atomic_t *stop,
              volatile sig_atomic_t *reload_flag) {
  ssh_bind b = NULL;
  int rc;
  if (!o->ca_path || !o->host_key)
    return bus_error(BUS_EINVAL, "hub needs a CA and a host key");
  if (sodium_init() < 0 || ssh_init() != SSH_OK)
    return bus_error(BUS_EINVAL, "crypto libraries failed to start");
  hub *h = calloc(1, sizeof *h);
  if (!h)
    return -ENOMEM;
  h->o = *o;
  h->stop = stop;
  pthread_mutex_init(&h->mu, NULL);
  if ((rc = relay_ca_load(o->ca_path, h->ca_pk))) {
    rc = bus_error(rc, "CA %s: not an ssh-ed25519 public key", o->ca_path);
    goto out;
  }
  reload(h, 1);
  if (o->revoked && !h->rev) {
    rc = bus_error(BUS_EINVAL, "revoked file %s unusable", o->revoked);
    goto out;
  }
  if (!(b = ssh_bind_new())) {
    rc = -ENOMEM;
    goto out;
  }
  if ((rc = hub__bus_start(h)) || (rc = listen_on(h, b)))
    goto out;
  serve(h, b, reload_flag);
  drain(h);
  if (h->failed)
    rc = bus_error(BUS_ECONN, "the broker connection closed");
out:
  ssh_bind_free(b);
  hub__bus_stop(h);
  pthread_mutex_lock(&h->mu);
  int left = h->sessions;
  pthread_mutex_unlock(&h->mu);
  if (!left) {
    hub__bus_free(h);
    sshwire_krl_free(h->rev);
    pthread_mutex_destroy(&h->mu);
    free(h);
    ssh_finalize();
  }
  return rc;
}
