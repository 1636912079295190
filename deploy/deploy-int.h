/*
 * deploy-int.h - what the deploy part's files share among themselves
 * (deploy.h is what the rest of the tree sees): the error sentence, a
 * growing string, whole-file reads and atomic writes, and a clock.
 */
#ifndef LARK_DEPLOY_INT_H
#define LARK_DEPLOY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "deploy.h"

/* Set the thread's error sentence (lark_cfg_error) and return err. */
int dpl_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same, followed by ": <bus_strerror(err)> (<bus_last_error()>)",
 * as larkctl prints a failure of libbus. */
int dpl_fail_bus(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A growing NUL-terminated string; oom set once an allocation failed. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

void dpl_sb_addn(sbuf *b, const char *s, size_t n);
void dpl_sb_add(sbuf *b, const char *s);
void dpl_sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write data to path through a temporary file and rename, mode 0600. */
int dpl_write_atomic(const char *path, const char *data, size_t len);
/* The whole file, malloc'd and NUL-terminated; -errno on failure. */
int dpl_read_all(const char *path, char **out, size_t *len);

/* accounts.c: the accounts text of p[0..n); with site, the file of that
 * edge site's server (its nodes only, no JetStream); malloc'd. */
char *dpl_accounts_text(const lark_principal *p, size_t n, const char *site);
/* creds.c: the "SU..." seed in an nkey or creds file (wipe it after). */
int dpl_seed_read(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]);
/* brokers.c: nats-server's path ($LARK_NATS_SERVER, else $PATH): 0 or -1.
 * And server idx's config rendered again as it was started (its leaf
 * listener's TLS once the sites' certificates exist). */
int dpl_find_server(char *out, size_t cap);
int dpl_up_render_hub(lark_up *u, int idx);
/* sites_up.c: `larkctl up --sites N`. The leaf listener's settings for
 * the hub's config (none without sites; cert, key, ca of PATH_MAX);
 * every site made, the hub given TLS and the leaf servers started (after
 * the signer, before the nodes); and node i's URL (its site's server)
 * put in k's --url. */
/* A site's members and settings written (lark_site_add without the
 * rendering that follows it, regen.c). */
int dpl_site_put(const char *data, const char *site, const char *const *nodes,
                 size_t n, const lark_site_opts *o, int *added_out);
void dpl_up_hub_leaf(lark_up *u, int idx, lark_broker_opts *o, char *cert,
                     char *key, char *ca);
int dpl_up_sites_start(lark_up *u);
void dpl_up_edge_url(lark_up *u, lark_proc *k, int i);
/* accounts.c: the pid in a pid file (0 when none), and whether a pid is a
 * live nats-server. */
pid_t dpl_read_pid(const char *path);
int dpl_is_nats_server(pid_t pid);

/* nodecerts.c: run `larkctl --data <data> args...` (NULL-terminated), its
 * output appended to <data>/logs/<logname>; 0 when it exited 0. */
/* A process of `up` started as every service is: <bin_dir>/bin --url
 * --creds <name's creds> --data <data>/views/<name> [--node node],
 * supervised as name with its output in log's file; the caller may add
 * arguments. NULL when the supervisor is full. */
lark_proc *lark_up_add_service(lark_up *u, const char *name, const char *log,
                               const char *bin, const char *node);
int lark_up_larkctl(lark_up *u, const char *const *args, const char *logname);
/* Node i's TLS directory, <data>/tls/node-<i>. */
void lark_up_tls_dir(const lark_up *u, int node, char *out, size_t cap);
/* Each node's certificate from the signer (started already) into its TLS
 * directory, unless a fresh one is there. */
int lark_up_node_certs(lark_up *u);

#endif
