/*
 * sshc.c - a node relay's session to the hub for one Domain (see
 * sshc.h): the session thread, which dials the hub, registers the cluster
 * and runs the loop until the connection drops, then dials again; and the
 * public calls that start it, hand it sockets and stop it. The channels it
 * carries are sshc_chan.c's.
 *
 * Invariants:
 * - The session thread alone touches the libssh session, its event,
 *   channels and bridges. Other threads reach it only through the job
 *   queue (under mu) and the eventfd that wakes it.
 * - A job is queued only while `ready` is set, both under mu; the thread
 *   clears `ready` under mu before it empties the queue on a disconnect,
 *   so every socket handed over is either carried or reset, never lost.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include "sshc-int.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define SSH_TIMEOUT_S 5

static void
set_ready(relay_sshc *s, int v) {
  pthread_mutex_lock(&s->mu);
  s->ready = v;
  pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------- dialing */

/* Log a dial failure once per distinct reason. */
static int dial_fail(relay_sshc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
dial_fail(relay_sshc *s, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (strcmp(why, s->last_err)) {
    sshc__log(s, "node: domain %s: hub %s:%d: %s (retrying)", s->domain,
              s->host, s->port, why);
    snprintf(s->last_err, sizeof s->last_err, "%s", why);
  }
  return -1;
}

static void
keepalive(int fd) {
  int on = 1, idle = 10, intvl = 5, cnt = 3;
  unsigned int user_timeout = 30000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout,
             sizeof user_timeout);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

static int
check_host_key(relay_sshc *s) {
  ssh_key k = NULL;
  if (ssh_get_server_publickey(s->ssh, &k) != SSH_OK)
    return dial_fail(s, "no host key: %s", ssh_get_error(s->ssh));
  int same = ssh_key_cmp(k, s->hub_key, SSH_KEY_CMP_PUBLIC) == 0;
  ssh_key_free(k);
  return same ? 0 : dial_fail(s, "host key is not the one expected");
}

static int
authenticate(relay_sshc *s) {
  ssh_key priv = NULL, cert = NULL;
  int rc = -1;
  if (ssh_pki_import_privkey_file(s->key, NULL, NULL, NULL, &priv) != SSH_OK)
    dial_fail(s, "cannot read key %s", s->key);
  else if (ssh_pki_import_cert_file(s->cert, &cert) != SSH_OK ||
           ssh_pki_copy_cert_to_privkey(cert, priv) != SSH_OK)
    dial_fail(s, "cannot read certificate %s", s->cert);
  else if (ssh_userauth_publickey(s->ssh, NULL, priv) != SSH_AUTH_SUCCESS)
    dial_fail(s, "certificate refused: %s", ssh_get_error(s->ssh));
  else
    rc = 0;
  ssh_key_free(cert);
  ssh_key_free(priv);
  return rc;
}

static int
open_session(relay_sshc *s) {
  long timeout = SSH_TIMEOUT_S;
  unsigned int port = (unsigned int)s->port;
  int none = SSH_LOG_NOLOG;
  bool no_config = false;
  if (!(s->ssh = ssh_new()))
    return dial_fail(s, "out of memory");
  ssh_options_set(s->ssh, SSH_OPTIONS_HOST, s->host);
  ssh_options_set(s->ssh, SSH_OPTIONS_PORT, &port);
  ssh_options_set(s->ssh, SSH_OPTIONS_USER, s->cluster);
  ssh_options_set(s->ssh, SSH_OPTIONS_TIMEOUT, &timeout);
  ssh_options_set(s->ssh, SSH_OPTIONS_LOG_VERBOSITY, &none);
  ssh_options_set(s->ssh, SSH_OPTIONS_PROCESS_CONFIG, &no_config);
  if (ssh_connect(s->ssh) != SSH_OK)
    return dial_fail(s, "connect: %s", ssh_get_error(s->ssh));
  keepalive(ssh_get_fd(s->ssh));
  if (check_host_key(s) || authenticate(s))
    return -1;
  ssh_set_message_callback(s->ssh, sshc__on_message, s);
  if (!(s->ev = ssh_event_new()) ||
      ssh_event_add_session(s->ev, s->ssh) != SSH_OK)
    return dial_fail(s, "no event loop");
  if (ssh_channel_listen_forward(s->ssh, s->cluster, 0, NULL) != SSH_OK)
    return dial_fail(s, "registering cluster %s refused: %s", s->cluster,
                     ssh_get_error(s->ssh));
  ssh_set_blocking(s->ssh, 0);
  return 0;
}

/* --------------------------------------------------------------- thread */

static int
on_wake(socket_t fd, int revents, void *ud) {
  (void)revents, (void)ud;
  return relay__wake_drain(fd);
}

static void
serve(relay_sshc *s) {
  if (ssh_event_add_fd(s->ev, s->wake, POLLIN, on_wake, s) != SSH_OK)
    return;
  while (!atomic_load(&s->stop)) {
    ssh_event_dopoll(s->ev, 200);
    sshc__progress_opens(s);
    sshc__reap(s, 0);
    if (!ssh_is_connected(s->ssh) ||
        (ssh_get_status(s->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR)))
      break;
  }
  ssh_event_remove_fd(s->ev, s->wake);
}

/* Drop the session and everything on it; queued sockets are reset. */
static void
hang_up(relay_sshc *s) {
  set_ready(s, 0);
  sshc__reap(s, 1);
  for (job *j = sshc__take_queue(s), *n; j; j = n) {
    n = j->next;
    sshc__job_free(j);
  }
  for (job *j = s->opening, *n; j; j = n) {
    n = j->next;
    sshc__job_free(j);
  }
  s->opening = NULL;
  if (s->ev) {
    ssh_event_remove_session(s->ev, s->ssh);
    ssh_event_free(s->ev);
    s->ev = NULL;
  }
  if (s->ssh) {
    ssh_disconnect(s->ssh);
    ssh_free(s->ssh);
    s->ssh = NULL;
  }
}

static void
sleep_wake(relay_sshc *s, int ms) {
  struct pollfd p = {.fd = s->wake, .events = POLLIN};
  uint64_t n;
  if (poll(&p, 1, ms) == 1 && read(s->wake, &n, sizeof n) < 0)
    return;
}

static void *
session_main(void *arg) {
  relay_sshc *s = arg;
  int backoff = BACKOFF_MIN_MS;
  while (!atomic_load(&s->stop)) {
    if (open_session(s) == 0) {
      set_ready(s, 1);
      sshc__log(s, "node: domain %s: registered cluster %s with hub %s:%d",
                s->domain, s->cluster, s->host, s->port);
      s->last_err[0] = 0;
      serve(s);
      if (!atomic_load(&s->stop))
        sshc__log(s, "node: domain %s: hub connection lost", s->domain);
      backoff = BACKOFF_MIN_MS;
    }
    hang_up(s);
    if (atomic_load(&s->stop))
      break;
    sleep_wake(s, backoff);
    backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
  }
  return NULL;
}

/* ---------------------------------------------------------------- public */

static int
copy_opt(char *dst, size_t cap, const char *src) {
  if (!src || !*src || strlen(src) >= cap)
    return -1;
  memcpy(dst, src, strlen(src) + 1);
  return 0;
}

int
relay_sshc_start(const relay_sshc_opts *o, relay_sshc **out) {
  relay_sshc *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  if (copy_opt(s->domain, sizeof s->domain, o->domain) ||
      copy_opt(s->key, sizeof s->key, o->key_path) ||
      copy_opt(s->cert, sizeof s->cert, o->cert_path) ||
      copy_opt(s->host, sizeof s->host, o->hub_host) ||
      copy_opt(s->cluster, sizeof s->cluster, o->cluster) || !o->routes ||
      o->hub_port <= 0 || o->hub_port > 65535) {
    free(s);
    return bus_error(BUS_EINVAL, "hub session: missing or bad option");
  }
  if (!o->hub_key_path ||
      ssh_pki_import_pubkey_file(o->hub_key_path, &s->hub_key) != SSH_OK) {
    free(s);
    return bus_error(BUS_EINVAL, "hub key %s: not a public key",
                     o->hub_key_path ? o->hub_key_path : "(none)");
  }
  s->port = o->hub_port;
  s->rt = o->routes;
  s->log = o->log;
  s->log_ud = o->log_ud;
  pthread_mutex_init(&s->mu, NULL);
  s->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  int rc =
      s->wake < 0 ? -errno : -pthread_create(&s->th, NULL, session_main, s);
  if (rc) {
    if (s->wake >= 0)
      close(s->wake);
    ssh_key_free(s->hub_key);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return bus_error(rc, "hub session: %s", strerror(-rc));
  }
  *out = s;
  return 0;
}

static void
wake(relay_sshc *s) {
  uint64_t one = 1;
  if (write(s->wake, &one, sizeof one) < 0 && errno != EAGAIN)
    return;
}

/* Queue j while the session is registered; BUS_ECONN (j freed, its fd
 * still the caller's) when not. */
static int
submit(relay_sshc *s, job *j) {
  pthread_mutex_lock(&s->mu);
  int ready = s->ready;
  if (ready) {
    j->next = s->queue;
    s->queue = j;
  }
  pthread_mutex_unlock(&s->mu);
  if (!ready) {
    free(j);
    return bus_error(BUS_ECONN, "domain %s: no session with the hub",
                     s->domain);
  }
  wake(s);
  return 0;
}

int
relay_sshc_submit(relay_sshc *s, int fd, const char *ip, int port) {
  job *j = calloc(1, sizeof *j);
  if (!j)
    return -ENOMEM;
  j->fd = fd;
  j->port = port;
  snprintf(j->ip, sizeof j->ip, "%s", ip);
  return submit(s, j);
}

int
relay_sshc_submit_weights(relay_sshc *s, int fd, const relay_wreq *r) {
  job *j = calloc(1, sizeof *j);
  if (!j)
    return -ENOMEM;
  j->fd = fd;
  j->port = r->port;
  snprintf(j->ip, sizeof j->ip, "%s", r->ip);
  relay_wreq_dest(r, j->dest, sizeof j->dest);
  return submit(s, j);
}

int
relay_sshc_ready(relay_sshc *s) {
  return relay__locked_int(&s->mu, &s->ready);
}

void
relay_sshc_stop(relay_sshc *s) {
  if (!s)
    return;
  atomic_store(&s->stop, 1);
  wake(s);
  pthread_join(s->th, NULL);
  close(s->wake);
  ssh_key_free(s->hub_key);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
