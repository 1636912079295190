/*
 * weights_int.h - private to weights*.c: the node's weights state.
 *
 * From the top down (each calls only those below it):
 *
 * weights_pub.c   a pod's publish: hash, link or copy, index + report
 * weights_run.c   start, stop, the sweep of Jobs gone from the node
 * weights_net.c   the server and the fetcher started or not (--tls-dir)
 * weights_get.c   the fetcher: one thread per version being fetched; a
 *                 pod's wait and a new projection enter here
 * weights_srv.c   the server: one thread accepts, one thread per transfer
 * weights.c       the cache's index in memory (a copy of the store's
 *                 table, loop only), waits, the drop policy
 * weights_tls.c   the TLS contexts, the peer's certificate checks, the
 *                 sockets' address and timeouts
 * weights_file.c  SHA-256 of a stream, the cache's file names
 * weights_req.c   the protocol's lines (weights_req.h)
 *
 * Invariants: a version is in `held` exactly when its row is in the
 * store and its file <dir>/<sha256> is complete and checked; a fetch
 * writes only <dir>/<sha256>.part.<n>, which nothing else reads; one
 * fetch per (job, version) at a time.
 */
#ifndef LARK_EDGE_WEIGHTS_INT_H
#define LARK_EDGE_WEIGHTS_INT_H

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "proc.h"
#include "weights.h"
#include "weights_req.h"

enum { WT_PATH_SZ = 4200, WT_ADDR_SZ = 301 };

struct edge_weights_wait {
  edge_weights_wait *next;
  struct edge_weights *ws;
  char job[EDGE_NAME_SZ];
  uint64_t min;
  uv_timer_t timer;
  int has_timer;
  edge_weights_cb cb;
  void *ud;
};

typedef struct wt_fetch wt_fetch;
typedef struct wt_server wt_server;

typedef struct edge_weights {
  edge_agent *a;
  char dir[WT_PATH_SZ];
  char address[WT_ADDR_SZ]; /* the server's host:port; "" without one */
  edge_wver *held;          /* sorted by job, then version */
  size_t nheld, cap;
  edge_weights_wait *waits;
  wt_fetch *fetches; /* running or done, not yet reaped (weights_get.c) */
  uv_async_t fetched;
  uv_timer_t sweep; /* Jobs gone from the node; fetches to retry */
  int has_async, has_sweep;
  wt_server *srv;
  struct wt_gone *gone; /* Jobs seen gone, since when (weights_run.c) */
  size_t ngone, gcap;
  SSL_CTX *client; /* NULL: no TLS dir, no fetch */
  int pending;     /* publishes on a worker */
  int handles;     /* open handles (fetched, sweep) */
  int closing;
} edge_weights;

/* ---------------------------------------------------------- weights.c */

/* The newest version >= min of job held here, or NULL. */
const edge_wver *wt_newest(edge_weights *ws, const char *job, uint64_t min);
/* w is complete in the cache: index it (and queue msg with it), answer the
 * waits it satisfies, apply the drop policy. 0, or the store's error. */
int wt_add(edge_weights *ws, const edge_wver *w, const edge_msg *msg);
/* A weights.report (published | cached | dropped) for w, packed into sb
 * and its subject into subject; from/ms only for cached, pod for
 * published. */
int wt_report(edge_weights *ws, const edge_wver *w, const char *event,
              const char *pod, const char *from, uint64_t ms,
              msgpack_sbuffer *sb, char *subject, size_t cap);

/* A pod's wait for a version >= min of its Job: answered now (NULL
 * returned) or parked until one is added or its timeout (0: none) fires;
 * starts no fetch (edge_weights_wait_for does). */
edge_weights_wait *wt_wait(edge_agent *a, edge_proc *p, uint64_t min,
                           uint64_t timeout_ms, edge_weights_cb cb, void *ud);

/* Drop held[i] (with its report) / every version of job. */
int wt_drop_at(edge_weights *ws, size_t i, const char *why);
void wt_drop_job(edge_weights *ws, const char *job);

/* ------------------------------------------------------- weights_run.c */

/* Free ws once it is stopped and nothing refers to it any more. */
void wt_free_if_done(edge_weights *ws);

/* ------------------------------------------------------ weights_file.c */

typedef struct wt_sha {
  EVP_MD_CTX *ctx;
} wt_sha;
int wt_sha_init(wt_sha *h);
void wt_sha_update(wt_sha *h, const void *p, size_t n);
/* The digest as 64 lowercase hex digits and a NUL; frees h. */
void wt_sha_final(wt_sha *h, char hex[65]);
void wt_sha_free(wt_sha *h);
/* Copy in to out (out < 0: only read), hashing; the bytes into *size.
 * -errno with bus_last_error(). */
int wt_hash_fd(int in, int out, char hex[65], uint64_t *size);
/* The cache path of sha256 into out. */
void wt_path(const edge_weights *ws, const char *sha256, char *out, size_t cap);

/* ------------------------------------------------------- weights_net.c */

/* The server and the fetchers' TLS context (none without --tls-dir). */
int wt_net_start(edge_weights *ws);
void wt_net_stop(edge_weights *ws);
/* Whether job has left the node: no pod of it here and no projection. */
int wt_job_gone(edge_weights *ws, const char *job);

/* weights_tls.c: a context from --tls-dir (NULL with bus_last_error()),
 * the peer's node (CN) once its certificate is checked to be a node's,
 * and its cluster (may be NULL); a line (without its \n) and bytes. */
SSL_CTX *wt_tls_ctx(const char *dir, int server);
int wt_tls_peer(SSL *ssl, char *node, size_t cap, char *cluster, size_t ccap);
const char *wt_tls_error(void);
int wt_tls_line(SSL *ssl, char *buf, size_t cap);
int wt_tls_write(SSL *ssl, const void *p, size_t n);
/* addr "host:port" or "[v6]:port" into host and port; BUS_EINVAL. */
int wt_addr_split(const char *addr, char *host, size_t hcap, char *port,
                  size_t pcap);
/* A socket's send and receive timeouts (a silent peer gives up). */
void wt_sock_timeouts(int fd);

/* weights_srv.c */
int wt_srv_start(edge_weights *ws, SSL_CTX *ctx, const char *addr);
void wt_srv_stop(edge_weights *ws);

/* weights_get.c */

/* Start the fetches the waits of job need and the projection offers. */
void wt_fetch_kick(edge_weights *ws, const char *job);
/* Reap the finished fetches (loop; from the async). */
void wt_fetch_reap(edge_weights *ws);
/* Stop and join every fetch. */
void wt_fetch_stop(edge_weights *ws);
/* Forget the failed fetches no wait wants. */
void wt_fetch_prune(edge_weights *ws);

#endif
