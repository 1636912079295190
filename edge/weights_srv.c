/*
 * weights_srv.c - the node's weights server (--weights-listen): other
 * nodes fetch the versions held here over TLS 1.3 with mutual
 * certificates.
 *
 *   client: GET <job> <version> <sha256>\n
 *   server: OK <size>\n<size bytes>     or     ERR <why>\n     then closes
 *
 * The client's certificate must chain to the platform CA and be a node's
 * (role agent), and its CN a node hosting pods of <job> (the Job's
 * engine.peers projection in the store); the version must be held here
 * with that sha256. One thread accepts (poll on the socket and a stop
 * pipe: no loop time, no thread while idle); each connection gets a
 * thread of its own for its one request, at most SRV_MAX at once (more
 * are closed at accept), with socket timeouts so a silent client cannot
 * hold one. Stop shuts every connection down and joins them all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "weights_int.h"

enum { SRV_MAX = 32, CHUNK = 1 << 20 };

struct wt_server {
  edge_weights *ws;
  SSL_CTX *ctx;
  int lfd, stop[2];
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int conns[SRV_MAX]; /* -1: free */
  int n;
};

typedef struct conn {
  wt_server *s;
  int fd, slot;
  char peer[EDGE_NAME_SZ];
} conn;

/* Whether node hosts pods of job, by the Job's engine.peers here. */
static int
hosts_job(edge_store *st, const char *job, const char *node) {
  msgpack_zone z;
  const void *out = NULL;
  int yes = 0;
  msgpack_zone_init(&z, 4096);
  if (edge_store_engine_load(st, job, "peers", &z, &out) == 0 && out) {
    const bus_ev_engine_peers *p = out;
    for (uint32_t i = 0; !yes && i < p->peers.n; i++)
      yes = bus_str_eq(p->peers.v[i].node, node);
  }
  msgpack_zone_destroy(&z);
  return yes;
}

/* The request line checked: the file to send (opened) and its size; the
 * line becomes "<job> <version>" for the log. */
static int
request(conn *c, char *line, int *fd, uint64_t *size, char *why, size_t cap) {
  char path[WT_PATH_SZ];
  wt_req q;
  edge_wver w;
  edge_weights *ws = c->s->ws;
  if (wt_req_parse(line, &q, why, cap))
    return -1;
  if (!hosts_job(ws->a->store, q.job, c->peer))
    return snprintf(why, cap, "node %s hosts no pod of job %s", c->peer, q.job),
           -1;
  if (edge_store_weights_get(ws->a->store, q.job, q.version, &w) ||
      strcmp(w.sha256, q.sha256))
    return snprintf(why, cap, "version %llu of job %s is not held here",
                    (unsigned long long)q.version, q.job),
           -1;
  wt_path(ws, w.sha256, path, sizeof path);
  if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return snprintf(why, cap, "version %llu is gone",
                    (unsigned long long)q.version),
           -1;
  *size = w.size;
  snprintf(line, 128, "%s %llu", q.job, (unsigned long long)q.version);
  return 0;
}

static int
send_file(SSL *ssl, int fd, uint64_t size) {
  char *buf = malloc(CHUNK);
  int rc = buf ? 0 : -ENOMEM;
  while (!rc && size) {
    ssize_t n = read(fd, buf, size < CHUNK ? (size_t)size : CHUNK);
    if (n <= 0)
      rc = bus_error(n < 0 ? -errno : BUS_EINVAL, "the file is short");
    else
      rc = wt_tls_write(ssl, buf, (size_t)n), size -= (uint64_t)n;
  }
  free(buf);
  return rc;
}

static void
serve_tls(conn *c, SSL *ssl) {
  char line[512], why[300], head[64];
  int fd = -1, rc;
  uint64_t size = 0;
  int64_t t0 = bus_mono_ms();
  if (SSL_accept(ssl) != 1) {
    edge_logf("warn", "weights", "refused at the handshake: %s",
              wt_tls_error());
    return;
  }
  if (wt_tls_peer(ssl, c->peer, sizeof c->peer, NULL, 0)) {
    edge_logf("warn", "weights", "refused: %s", bus_last_error());
    return;
  }
  if ((rc = wt_tls_line(ssl, line, sizeof line)) ||
      request(c, line, &fd, &size, why, sizeof why)) {
    if (rc)
      snprintf(why, sizeof why, "%s", bus_last_error());
    edge_logf("warn", "weights", "refused %s: %s", c->peer, why);
    snprintf(line, sizeof line, "ERR %s\n", why);
    wt_tls_write(ssl, line, strlen(line));
    return;
  }
  snprintf(head, sizeof head, "OK %llu\n", (unsigned long long)size);
  rc = wt_tls_write(ssl, head, strlen(head));
  if (!rc)
    rc = send_file(ssl, fd, size);
  close(fd);
  if (rc)
    edge_logf("warn", "weights", "sending %s to %s: %s", line, c->peer,
              bus_last_error());
  else
    edge_logf("info", "weights", "sent %s to %s: %llu bytes in %lld ms", line,
              c->peer, (unsigned long long)size,
              (long long)(bus_mono_ms() - t0));
}

static void *
serve(void *arg) {
  conn *c = arg;
  wt_server *s = c->s;
  SSL *ssl = SSL_new(s->ctx);
  if (ssl && SSL_set_fd(ssl, c->fd) == 1) {
    serve_tls(c, ssl);
    SSL_shutdown(ssl);
  }
  SSL_free(ssl);
  pthread_mutex_lock(&s->mu);
  s->conns[c->slot] = -1;
  s->n--;
  close(c->fd);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  free(c);
  return NULL;
}

/* A thread for fd, or fd closed when SRV_MAX are busy. */
static void
start_conn(wt_server *s, int fd) {
  conn *c = calloc(1, sizeof *c);
  pthread_t th;
  pthread_mutex_lock(&s->mu);
  int slot = 0;
  while (slot < SRV_MAX && s->conns[slot] >= 0)
    slot++;
  if (c && slot < SRV_MAX) {
    *c = (conn){.s = s, .fd = fd, .slot = slot};
    s->conns[slot] = fd, s->n++;
    wt_sock_timeouts(fd);
    if (pthread_create(&th, NULL, serve, c) == 0)
      pthread_detach(th), c = NULL, fd = -1;
    else
      s->conns[slot] = -1, s->n--;
  }
  pthread_mutex_unlock(&s->mu);
  if (fd >= 0) {
    edge_logf("warn", "weights", "a connection closed: %d transfers running",
              SRV_MAX);
    close(fd);
  }
  free(c);
}

static void *
accept_main(void *arg) {
  wt_server *s = arg;
  struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
  for (;;) {
    if (poll(p, 2, -1) < 0 && errno != EINTR)
      break;
    if (p[1].revents)
      break;
    if (p[0].revents & POLLIN) {
      int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0)
        start_conn(s, fd);
    }
  }
  return NULL;
}

/* A listening socket on addr ("host:port"); the address it got, as
 * others reach it (an unspecified host: the node's first address), into
 * out. */
static int
listen_on(const char *addr, char *out, size_t cap) {
  char host[256], port[16], name[256];
  struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICHOST,
                           .ai_socktype = SOCK_STREAM},
                  *ai = NULL;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int rc = wt_addr_split(addr, host, sizeof host, port, sizeof port), fd = -1,
      one = 1;
  if (!rc && (rc = getaddrinfo(host, port, &hints, &ai)))
    return bus_error(BUS_EINVAL, "%s: %s", addr, gai_strerror(rc));
  if (!rc && ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
              setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
              bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
              getsockname(fd, (struct sockaddr *)&ss, &sl) < 0))
    rc = bus_error(-errno, "listen on %s: %s", addr, strerror(errno));
  if (ai)
    freeaddrinfo(ai);
  if (rc) {
    if (fd >= 0)
      close(fd);
    return rc;
  }
  int v6 = ss.ss_family == AF_INET6;
  unsigned p = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                        : ((struct sockaddr_in *)&ss)->sin_port);
  if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
    edge_node_first_address(name, sizeof name);
  else
    snprintf(name, sizeof name, "%s", host);
  v6 = strchr(name, ':') != NULL;
  snprintf(out, cap, "%s%s%s:%u", v6 ? "[" : "", name, v6 ? "]" : "", p);
  return fd;
}

int
wt_srv_start(edge_weights *ws, SSL_CTX *ctx, const char *addr) {
  wt_server *s = calloc(1, sizeof *s);
  int rc;
  if (!s)
    return bus_error(-ENOMEM, "out of memory");
  *s = (wt_server){.ws = ws, .ctx = ctx, .stop = {-1, -1}};
  for (int i = 0; i < SRV_MAX; i++)
    s->conns[i] = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  ws->srv = s;
  if ((s->lfd = listen_on(addr, ws->address, sizeof ws->address)) < 0)
    return s->lfd;
  if (pipe2(s->stop, O_CLOEXEC) < 0)
    return bus_error(-errno, "pipe: %s", strerror(errno));
  if ((rc = pthread_create(&s->th, NULL, accept_main, s)))
    return bus_error(-rc, "cannot start the weights server's thread");
  s->started = 1;
  return 0;
}

void
wt_srv_stop(edge_weights *ws) {
  wt_server *s = ws->srv;
  if (!s)
    return;
  if (s->started) {
    (void)!write(s->stop[1], "x", 1);
    pthread_join(s->th, NULL);
  }
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < SRV_MAX; i++)
    if (s->conns[i] >= 0)
      shutdown(s->conns[i], SHUT_RDWR);
  while (s->n)
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < 2; i++)
    if (s->stop[i] >= 0)
      close(s->stop[i]);
  if (s->lfd >= 0)
    close(s->lfd);
  SSL_CTX_free(s->ctx);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
  ws->srv = NULL;
}
