/*
 * hub.c - the relay hub: a libssh server that authenticates with the
 * platform's SSH certificates and bridges direct-tcpip channels.
 *
 * Invariants:
 * - A session counts as authenticated only when libssh reports a valid
 *   signature (SSH_PUBLICKEY_STATE_VALID) for a key whose certificate
 *   relay_cert_check accepted in the same callback; the certificate is
 *   kept in the session, and nothing else sets `authed`.
 * - The revoked set is swapped whole under hub->mu; sessions look at it
 *   under the same lock, once per poll round (<= 500 ms) and at every
 *   channel open, so a revocation closes a session within a round.
 * - Channel targets are numeric addresses, put in canonical form before
 *   the policy sees them: the hub never resolves names.
 * - libssh objects of a session are touched only by its thread; a
 *   bridge is freed only from the session loop, never inside a callback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>
#include <sodium.h>

#include "hub.h"

#define MAX_CHANNELS 64
#define IO_CHUNK 32768
#define SEND_TIMEOUT_S 10
#define CONNECT_TIMEOUT_MS 5000

typedef struct hub {
  relay_hub_opts o;
  uint8_t ca_pk[32];
  pthread_mutex_t mu;
  relay_revoked *rev; /* under mu */
  struct stat rev_st; /* of the file last loaded */
  int sessions;       /* under mu */
  volatile sig_atomic_t *stop;
} hub;

typedef struct sess sess;

typedef struct bridge {
  sess *s;
  ssh_channel ch;
  int fd;
  int polled; /* fd is in the event */
  int fd_eof; /* the target closed its side */
  int ch_eof; /* the client sent EOF */
  int dead;
  struct ssh_channel_callbacks_struct cb;
  struct bridge *next;
} bridge;

struct sess {
  hub *h;
  ssh_session ssh;
  ssh_event ev;
  struct ssh_server_callbacks_struct cb;
  char peer[64];
  int authed;
  relay_cert cert;
  bridge *bridges;
  int nbridges;
};

/* ---------------------------------------------------------------- util */

static void hlog(hub *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
hlog(hub *h, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  if (!h->o.log)
    return;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  h->o.log(h->o.log_ud, line);
}

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
      hlog(h, "hub: revoked file %s: %s", h->o.revoked, strerror(errno));
    return;
  }
  if (!force && st.st_ino == h->rev_st.st_ino &&
      st.st_size == h->rev_st.st_size &&
      st.st_mtim.tv_sec == h->rev_st.st_mtim.tv_sec &&
      st.st_mtim.tv_nsec == h->rev_st.st_mtim.tv_nsec)
    return;
  relay_revoked *r;
  if (relay_revoked_load_file(h->o.revoked, h->ca_pk, &r, why, sizeof why)) {
    hlog(h, "hub: keeping the previous revoked set: %s", why);
    h->rev_st = st; /* do not retry a bad file every round */
    return;
  }
  pthread_mutex_lock(&h->mu);
  relay_revoked *old = h->rev;
  h->rev = r;
  pthread_mutex_unlock(&h->mu);
  relay_revoked_free(old);
  h->rev_st = st;
  hlog(h, "hub: revoked set loaded from %s", h->o.revoked);
}

/* Whether the session's certificate still stands: why says why not. */
static int
still_valid(sess *s, char *why, size_t cap) {
  hub *h = s->h;
  pthread_mutex_lock(&h->mu);
  int revoked = relay_revoked_has(h->rev, &s->cert);
  pthread_mutex_unlock(&h->mu);
  if (revoked)
    snprintf(why, cap, "certificate revoked");
  else if (now_s() >= s->cert.valid_before)
    snprintf(why, cap, "certificate expired");
  else
    return 1;
  return 0;
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
      hlog(s->h, "hub: refused %s (user %.64s serial %llu): %s", s->peer,
           user ? user : "", (unsigned long long)c.serial, why);
    return SSH_AUTH_DENIED;
  }
  if (state == SSH_PUBLICKEY_STATE_NONE)
    return SSH_AUTH_SUCCESS; /* the key would do: the client signs next */
  s->cert = c;
  s->authed = 1;
  hlog(s->h, "hub: session %s: %s domain %s serial %llu", s->peer, c.name,
       c.domain, (unsigned long long)c.serial);
  return SSH_AUTH_SUCCESS;
}

/* -------------------------------------------------------------- bridges */

static int
on_channel_data(ssh_session ssh, ssh_channel ch, void *data, uint32_t len,
                int is_stderr, void *ud) {
  bridge *b = ud;
  const uint8_t *p = data;
  (void)ssh;
  (void)ch;
  if (is_stderr || b->dead)
    return (int)len;
  for (uint32_t off = 0; off < len;) {
    ssize_t w = send(b->fd, p + off, len - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      b->dead = 1; /* the target is gone or stuck past SEND_TIMEOUT_S */
      break;
    }
    off += (uint32_t)w;
  }
  return (int)len;
}

static void
on_channel_eof(ssh_session ssh, ssh_channel ch, void *ud) {
  bridge *b = ud;
  (void)ssh;
  (void)ch;
  b->ch_eof = 1;
  shutdown(b->fd, SHUT_WR);
}

static void
on_channel_close(ssh_session ssh, ssh_channel ch, void *ud) {
  bridge *b = ud;
  (void)ssh;
  (void)ch;
  b->dead = 1;
}

static int
on_fd(socket_t fd, int revents, void *ud) {
  bridge *b = ud;
  uint8_t buf[IO_CHUNK];
  if (b->dead || b->fd_eof)
    return 0;
  if (!(revents & (POLLIN | POLLHUP | POLLERR)))
    return 0;
  ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (r > 0) {
    if (ssh_channel_write(b->ch, buf, (uint32_t)r) == SSH_ERROR)
      b->dead = 1;
    return 0;
  }
  b->fd_eof = 1;
  if (r < 0 || ssh_channel_send_eof(b->ch) == SSH_ERROR)
    b->dead = 1;
  return 0;
}

static void
bridge_free(sess *s, bridge *b) {
  if (b->polled)
    ssh_event_remove_fd(s->ev, b->fd);
  close(b->fd);
  if (!ssh_channel_is_closed(b->ch))
    ssh_channel_close(b->ch);
  ssh_channel_free(b->ch);
  free(b);
  s->nbridges--;
}

/* Free the bridges that are done: closed, failed, or EOF both ways. */
static void
reap(sess *s, int all) {
  for (bridge **pp = &s->bridges; *pp;) {
    bridge *b = *pp;
    if (b->fd_eof && b->polled) {
      ssh_event_remove_fd(s->ev, b->fd);
      b->polled = 0;
    }
    if (all || b->dead || (b->fd_eof && b->ch_eof) ||
        ssh_channel_is_closed(b->ch)) {
      *pp = b->next;
      bridge_free(s, b);
    } else {
      pp = &b->next;
    }
  }
}

/* A TCP connection to addr within CONNECT_TIMEOUT_MS, or -errno. */
static int
dial(const struct sockaddr_storage *sa, socklen_t len) {
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  int rc = connect(fd, (const struct sockaddr *)sa, len) ? -errno : 0;
  if (rc == -EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int e = 0;
    socklen_t el = sizeof e;
    rc = poll(&p, 1, CONNECT_TIMEOUT_MS) == 1 ? 0 : -ETIMEDOUT;
    if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e)
      rc = -e;
  }
  struct timeval tv = {.tv_sec = SEND_TIMEOUT_S};
  if (!rc && (fcntl(fd, F_SETFL, 0) ||
              setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)))
    rc = -errno;
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
}

/* A numeric target in canonical form (host) with its socket address. */
static int
parse_target(const char *in, int port, char host[64],
             struct sockaddr_storage *sa, socklen_t *len) {
  memset(sa, 0, sizeof *sa);
  if (!in || port <= 0 || port > 65535 || strlen(in) >= 64)
    return -1;
  struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
  if (inet_pton(AF_INET, in, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof *v4;
    return inet_ntop(AF_INET, &v4->sin_addr, host, 64) ? 0 : -1;
  }
  if (inet_pton(AF_INET6, in, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *len = sizeof *v6;
    return inet_ntop(AF_INET6, &v6->sin6_addr, host, 64) ? 0 : -1;
  }
  return -1;
}

/* Decide on a direct-tcpip open; a connected fd or -1 with why. */
static int
open_target(sess *s, ssh_message m, char *host, int *port, char *why,
            size_t cap) {
  struct sockaddr_storage sa;
  socklen_t len = 0;
  const char *dst = ssh_message_channel_request_open_destination(m);
  *port = ssh_message_channel_request_open_destination_port(m);
  snprintf(host, 64, "%.63s", dst ? dst : "");
  if (!s->authed)
    return snprintf(why, cap, "not authenticated"), -1;
  if (!still_valid(s, why, cap))
    return -1;
  if (s->nbridges >= MAX_CHANNELS)
    return snprintf(why, cap, "too many channels"), -1;
  if (parse_target(dst, *port, host, &sa, &len))
    return snprintf(why, cap, "target is not a numeric address and port"), -1;
  if (!s->h->o.policy || s->h->o.policy(&s->cert, host, (uint16_t)*port,
                                        s->h->o.policy_ud, why, cap)) {
    if (!why[0])
      snprintf(why, cap, "target not allowed");
    return -1;
  }
  int fd = dial(&sa, len);
  if (fd < 0)
    snprintf(why, cap, "connect: %s", strerror(-fd));
  return fd;
}

static int
add_bridge(sess *s, ssh_message m, int fd) {
  bridge *b = calloc(1, sizeof *b);
  if (!b)
    return -1;
  b->s = s;
  b->fd = fd;
  b->cb.userdata = b;
  b->cb.channel_data_function = on_channel_data;
  b->cb.channel_eof_function = on_channel_eof;
  b->cb.channel_close_function = on_channel_close;
  ssh_callbacks_init(&b->cb);
  if (!(b->ch = ssh_message_channel_request_open_reply_accept(m))) {
    free(b);
    return -1;
  }
  ssh_set_channel_callbacks(b->ch, &b->cb);
  if (ssh_event_add_fd(s->ev, fd, POLLIN, on_fd, b) == SSH_OK)
    b->polled = 1;
  else
    b->dead = 1;
  b->next = s->bridges;
  s->bridges = b;
  s->nbridges++;
  return 0;
}

/* Channel opens and anything the callbacks do not take: direct-tcpip
 * is decided here, everything else gets libssh's refusal. */
static int
on_message(ssh_session ssh, ssh_message m, void *ud) {
  sess *s = ud;
  char host[64] = "", why[256] = "";
  int port = 0;
  (void)ssh;
  if (ssh_message_type(m) != SSH_REQUEST_CHANNEL_OPEN ||
      ssh_message_subtype(m) != SSH_CHANNEL_DIRECT_TCPIP)
    return 1;
  int fd = open_target(s, m, host, &port, why, sizeof why);
  if (fd >= 0 && add_bridge(s, m, fd)) {
    close(fd);
    fd = -1;
    snprintf(why, sizeof why, "channel setup failed");
  }
  if (fd < 0) {
    hlog(s->h, "hub: refused channel %s serial %llu to %s:%d: %s", s->peer,
         (unsigned long long)s->cert.serial, host, port, why);
    ssh_message_reply_default(m);
  } else {
    hlog(s->h, "hub: channel %s domain %s to %s:%d", s->peer, s->cert.domain,
         host, port);
  }
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
    if (ssh_event_dopoll(s->ev, 200) == SSH_ERROR && !s->bridges)
      break;
    reap(s, 0);
    int st = ssh_get_status(s->ssh);
    if (!ssh_is_connected(s->ssh) || (st & (SSH_CLOSED | SSH_CLOSED_ERROR)))
      break;
    if (!s->authed && time(NULL) - start > s->h->o.auth_timeout_s)
      break;
    if (s->authed && !still_valid(s, why, sizeof why)) {
      hlog(s->h, "hub: closing %s serial %llu: %s", s->peer,
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
    hlog(h, "hub: key exchange with %s failed: %s", s->peer,
         ssh_get_error(s->ssh));
  else if (!(s->ev = ssh_event_new()) ||
           ssh_event_add_session(s->ev, s->ssh) != SSH_OK)
    hlog(h, "hub: session %s: no event loop", s->peer);
  else
    session_loop(s);
  reap(s, 1);
  if (s->ev) {
    ssh_event_remove_session(s->ev, s->ssh);
    ssh_event_free(s->ev);
  }
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
    free(s);
    return -rc;
  }
  return 0;
}

static int
write_port_file(const char *path, int port) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return BUS_EINVAL;
  FILE *f = fopen(tmp, "w");
  if (!f)
    return -errno;
  fprintf(f, "%d\n", port);
  int rc = fclose(f) ? -errno : 0;
  if (!rc && rename(tmp, path))
    rc = -errno;
  return rc;
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
  hlog(h, "hub: listening on %s:%d", h->o.host, p);
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
    hlog(h, "hub: accept: %s", ssh_get_error(b));
    ssh_free(ssh);
    return;
  }
  if (start_session(h, ssh)) {
    hlog(h, "hub: no thread for a session");
    ssh_disconnect(ssh);
    ssh_free(ssh);
  }
}

/* Accept until stop; check the KRL every reload_ms. */
static void
serve(hub *h, ssh_bind b, volatile sig_atomic_t *reload_flag) {
  struct timespec last = {0}, now;
  int every = h->o.reload_ms > 0 ? h->o.reload_ms : 500;
  while (!*h->stop) {
    struct pollfd p = {.fd = ssh_bind_get_fd(b), .events = POLLIN};
    int r = poll(&p, 1, every < 200 ? every : 200);
    if (r == 1 && (p.revents & POLLIN))
      accept_one(h, b);
    clock_gettime(CLOCK_MONOTONIC, &now);
    int force = reload_flag && *reload_flag;
    if (force)
      *reload_flag = 0;
    if (force || (now.tv_sec - last.tv_sec) * 1000 +
                         (now.tv_nsec - last.tv_nsec) / 1000000 >=
                     every) {
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
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
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
  if ((rc = listen_on(h, b)))
    goto out;
  serve(h, b, reload_flag);
  drain(h);
out:
  ssh_bind_free(b);
  pthread_mutex_lock(&h->mu);
  int left = h->sessions;
  pthread_mutex_unlock(&h->mu);
  if (!left) {
    relay_revoked_free(h->rev);
    pthread_mutex_destroy(&h->mu);
    free(h);
    ssh_finalize();
  }
  return rc;
}

/* ----------------------------------------------------------- allow-list */

int
relay_allow_add(relay_allow *a, const char *entry) {
  char host[64];
  const char *eq = strchr(entry, '='), *colon = strrchr(entry, ':');
  if (a->n >= RELAY_ALLOW_MAX)
    return BUS_ETOO_BIG;
  if (!eq || !colon || colon < eq || eq == entry ||
      (size_t)(eq - entry) >= sizeof a->e[0].domain ||
      (size_t)(colon - eq - 1) >= sizeof host)
    return BUS_EINVAL;
  memcpy(host, eq + 1, (size_t)(colon - eq - 1));
  host[colon - eq - 1] = 0;
  struct sockaddr_storage sa;
  socklen_t len;
  char *end;
  long port = strcmp(colon + 1, "*") ? strtol(colon + 1, &end, 10) : -1;
  if (port >= 0 && (*end || port == 0 || port > 65535))
    return BUS_EINVAL;
  if (parse_target(host, port < 0 ? 1 : (int)port, a->e[a->n].host, &sa, &len))
    return BUS_EINVAL;
  memcpy(a->e[a->n].domain, entry, (size_t)(eq - entry));
  a->e[a->n].domain[eq - entry] = 0;
  a->e[a->n].port = (int)port;
  a->n++;
  return 0;
}

int
relay_allow_policy(const relay_cert *c, const char *host, uint16_t port,
                   void *ud, char *why, size_t cap) {
  const relay_allow *a = ud;
  for (int i = 0; a && i < a->n; i++)
    if (!strcmp(a->e[i].domain, c->domain) && !strcmp(a->e[i].host, host) &&
        (a->e[i].port < 0 || a->e[i].port == port))
      return 0;
  snprintf(why, cap, "target not allowed for domain %s", c->domain);
  return BUS_EDENIED;
}
