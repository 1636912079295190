/*
 * wlisten.c - lark-relay node's weights listener (wlisten.h).
 *
 * Invariants:
 * - The request line is read exactly: each read peeks first and then
 *   takes bytes only up to the first '\n', so the bytes after it (the
 *   fetcher's TLS ClientHello) stay in the socket for the far end.
 * - A connection is in the pending list from accept until its line is
 *   handled; it leaves through pend_end, once, which stops its poll
 *   before the socket is handed over or closed. At most MAX_PENDING wait
 *   at once, each at most REQUEST_TIMEOUT_MS.
 * - The listener frees itself when the last of its own handles (the
 *   listening poll and the sweep timer) is closed; each pending
 *   connection frees itself with its poll handle.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay-int.h"
#include "wlisten.h"

#define REQUEST_TIMEOUT_MS 5000
#define SWEEP_MS 500
#define MAX_PENDING 64

typedef struct pend {
  struct pend *next;
  relay_wlisten *w;
  int fd;
  uv_poll_t poll;
  uint64_t since;
  char peer[64];
  char buf[RELAY_WREQ_MAX + 2];
  size_t n;
} pend;

struct relay_wlisten {
  uv_loop_t *loop;
  int fd, port;
  uv_poll_t poll;
  uv_timer_t sweep;
  int handles; /* own handles not yet closed */
  relay_wsubmit_fn submit;
  void *ud;
  relay_log_fn log;
  void *log_ud;
  pend *pending;
  int npending;
};

static void wlog(relay_wlisten *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
wlog(relay_wlisten *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  relay__vlog(w->log, w->log_ud, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------- pending */

static void
on_pend_closed(uv_handle_t *h) {
  pend *p = h->data;
  if (p->fd >= 0)
    relay__reset_fd(p->fd);
  free(p);
}

/* Take p out of the list and close its poll (and its socket, unless it
 * was handed over: fd -1). */
static void
pend_end(pend *p) {
  relay_wlisten *w = p->w;
  for (pend **pp = &w->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  w->npending--;
  uv_poll_stop(&p->poll);
  uv_close((uv_handle_t *)&p->poll, on_pend_closed);
}

static void
pend_refuse(pend *p, const char *why) {
  wlog(p->w, "node: refused weights request from %s: %s", p->peer, why);
  pend_end(p);
}

/* The whole line is in p->buf (n bytes with its '\n'). */
static void
pend_line(pend *p) {
  relay_wreq r;
  char why[512] = "";
  if (relay_wreq_parse_line(p->buf, p->n - 1, &r, why, sizeof why)) {
    pend_refuse(p, why);
    return;
  }
  relay_wlisten *w = p->w;
  int fd = p->fd;
  char peer[sizeof p->peer];
  snprintf(peer, sizeof peer, "%s", p->peer);
  p->fd = -1;
  pend_end(p); /* its poll stops here, before the socket goes */
  if (w->submit(w->ud, fd, &r, why, sizeof why)) {
    wlog(w, "node: refused weights request from %s job %s %s -> %s at %s: %s",
         peer, r.job, r.from, r.to, r.addr, why);
    relay__reset_fd(fd);
    return;
  }
  wlog(w, "node: weights job %s %s -> %s at %s: to the hub (from %s)", r.job,
       r.from, r.to, r.addr, peer);
}

/* Read what came of p's line (never past its '\n'); NULL, or why the
 * connection is refused. */
static const char *
read_more(pend *p, int *done) {
  char *at = p->buf + p->n;
  ssize_t k = recv(p->fd, at, sizeof p->buf - 1 - p->n, MSG_PEEK);
  *done = 0;
  if (k < 0 && (errno == EAGAIN || errno == EINTR))
    return NULL;
  if (k <= 0)
    return k ? strerror(errno) : "closed before its request";
  char *nl = memchr(at, '\n', (size_t)k);
  size_t take = nl ? (size_t)(nl - at) + 1 : (size_t)k;
  if (recv(p->fd, at, take, 0) != (ssize_t)take)
    return "read failed";
  p->n += take;
  *done = nl != NULL;
  return !nl && p->n > RELAY_WREQ_MAX ? "request line too long" : NULL;
}

static void
on_readable(uv_poll_t *h, int status, int events) {
  pend *p = h->data;
  int done = 0;
  (void)events;
  const char *why = status < 0 ? uv_strerror(status) : read_more(p, &done);
  if (why)
    pend_refuse(p, why);
  else if (done)
    pend_line(p);
}

static void
peer_of(int fd, char *out, size_t cap) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (!getpeername(fd, (struct sockaddr *)&sa, &len)) {
    if (sa.ss_family == AF_INET6) {
      struct sockaddr_in6 *v = (struct sockaddr_in6 *)&sa;
      inet_ntop(AF_INET6, &v->sin6_addr, ip, sizeof ip);
      port = ntohs(v->sin6_port);
    } else if (sa.ss_family == AF_INET) {
      struct sockaddr_in *v = (struct sockaddr_in *)&sa;
      inet_ntop(AF_INET, &v->sin_addr, ip, sizeof ip);
      port = ntohs(v->sin_port);
    }
  }
  snprintf(out, cap, "%s:%d", ip, port);
}

static void
pend_start(relay_wlisten *w, int fd) {
  pend *p = calloc(1, sizeof *p);
  if (!p) {
    relay__reset_fd(fd);
    return;
  }
  p->w = w;
  p->fd = fd;
  p->since = uv_now(w->loop);
  p->poll.data = p;
  peer_of(fd, p->peer, sizeof p->peer);
  if (uv_poll_init(w->loop, &p->poll, fd)) {
    relay__reset_fd(fd);
    free(p);
    return;
  }
  p->next = w->pending;
  w->pending = p;
  w->npending++;
  uv_poll_start(&p->poll, UV_READABLE, on_readable);
}

/* ------------------------------------------------------------ listener */

static void
on_accept(uv_poll_t *h, int status, int events) {
  relay_wlisten *w = h->data;
  (void)events;
  if (status < 0)
    return;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      break;
    if (w->npending >= MAX_PENDING) {
      wlog(w, "node: refused a weights connection: %d waiting already",
           w->npending);
      relay__reset_fd(fd);
      continue;
    }
    pend_start(w, fd);
  }
}

static void
on_sweep(uv_timer_t *t) {
  relay_wlisten *w = t->data;
  uint64_t now = uv_now(w->loop);
  for (pend *p = w->pending, *next; p; p = next) {
    next = p->next;
    if (now - p->since >= REQUEST_TIMEOUT_MS)
      pend_refuse(p, "no request line within 5 s");
  }
}

/* A listening socket on numeric host:port, or -errno. */
static int
listen_fd(const char *host, int port, int *bound) {
  struct sockaddr_storage sa;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
  socklen_t len = sizeof *v4;
  memset(&sa, 0, sizeof sa);
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    len = sizeof *v6;
  } else {
    return -EINVAL;
  }
  int on = 1,
      fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 64) ||
      getsockname(fd, (struct sockaddr *)&sa, &len)) {
    int e = errno;
    close(fd);
    return -e;
  }
  *bound = ntohs(sa.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

int
relay_wlisten_start(uv_loop_t *loop, const char *host, int port,
                    relay_wsubmit_fn submit, void *ud, relay_log_fn log,
                    void *log_ud, relay_wlisten **out) {
  relay_wlisten *w = calloc(1, sizeof *w);
  if (!w)
    return -ENOMEM;
  *w = (relay_wlisten){
      .loop = loop, .submit = submit, .ud = ud, .log = log, .log_ud = log_ud};
  if ((w->fd = listen_fd(host, port, &w->port)) < 0) {
    int rc = bus_error(BUS_EINVAL, "weights listen on %s:%d: %s", host, port,
                       strerror(-w->fd));
    free(w);
    return rc;
  }
  w->poll.data = w->sweep.data = w;
  uv_poll_init(loop, &w->poll, w->fd);
  uv_timer_init(loop, &w->sweep);
  w->handles = 2;
  uv_poll_start(&w->poll, UV_READABLE, on_accept);
  uv_timer_start(&w->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
  wlog(w, "node: weights requests on %s:%d", host, w->port);
  *out = w;
  return 0;
}

int
relay_wlisten_port(const relay_wlisten *w) {
  return w->port;
}

static void
on_own_closed(uv_handle_t *h) {
  relay_wlisten *w = h->data;
  if (--w->handles == 0) {
    close(w->fd);
    free(w);
  }
}

void
relay_wlisten_stop(relay_wlisten *w) {
  if (!w)
    return;
  while (w->pending)
    pend_end(w->pending);
  uv_poll_stop(&w->poll);
  uv_timer_stop(&w->sweep);
  uv_close((uv_handle_t *)&w->poll, on_own_closed);
  uv_close((uv_handle_t *)&w->sweep, on_own_closed);
}
