/*
 * sitehub.h - a hub with a leaf listener and the edge sites that dial it,
 * made the same way for the sites' tests (sitebed.c) and for
 * bench_site_catchup: the credentials, the sites' directories and the
 * hub's config rendered by larkdeploy as larkctl renders them
 * (lark_site_add, lark_render_conf), the TLS certificates from a test CA
 * in <data>/test-ca (testcert.c), the servers started from those files.
 * Plain calls, usable without Criterion: 0 (or a pid), or a negative code
 * with the reason in bus_last_error().
 */
#ifndef LARK_TEST_SITEHUB_H
#define LARK_TEST_SITEHUB_H

#include <stddef.h>
#include <sys/types.h>

#include "bus.h"
#include "natsd.h"

/* admin's credentials (and the accounts rendered with them), the hub's
 * leaf certificate, and its config in conf: one server whose leaf
 * listener is on leaf_port. Before or after the sites. */
int lt_hub_render(const char *data, int leaf_port, char *conf, size_t cap);

/* Site site of the n nodes: its certificate, then lark_site_add with dial
 * (the URL its leaf server dials) and port (its client port). */
int lt_site_render(const char *data, const char *site, const char *const *nodes,
                   size_t n, const char *dial, int port);

/* The hub started from conf, admin connected to it (js_wait_ms; 0: the
 * default) and the platform's streams made (dedupe window dedupe_ms). */
int lt_hub_start(const char *data, const char *conf, lt_natsd *hub,
                 bus_conn **admin, int js_wait_ms, int dedupe_ms);

/* Site site's leaf server (its leaf.conf) started, its output in log, and
 * waited for until it listens (10 s): its pid. */
pid_t lt_site_leaf_start(const char *data, const char *site, const char *log);

/* A connection as node name of site to url, with the node's credentials
 * from the site's directory and its _INBOX_<name> prefix (js_wait_ms; 0:
 * the default): bus_conn_open's code. */
int lt_site_node_connect(const char *data, const char *site, const char *name,
                         const char *url, int js_wait_ms, bus_conn **out);

#endif
