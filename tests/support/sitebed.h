/*
 * sitebed.h - edge sites for Criterion tests: a hub nats-server with a
 * leaf listener (TLS, the config larkctl renders) and two sites, each a
 * leaf nats-server started from the directory lark_site_add rendered:
 * "north" with nodes n1 and n2, "south" with node s1. The TLS
 * certificates come from a test CA made with openssl (the platform's
 * signer is tested elsewhere; the site's files take any CA's). Each node
 * has its own stream with desired states (n1: two, n2: one, s1: one).
 * Its calls fail the test when they cannot do their part.
 */
#ifndef LARK_TEST_SITEBED_H
#define LARK_TEST_SITEBED_H

#include <sys/types.h>

#include "bus.h"
#include "natsd.h"

enum { LT_SITES = 2 };

typedef struct lt_leaf {
  const char *name; /* "north", "south" */
  int port;         /* its client port */
  char url[64];
  pid_t pid;
} lt_leaf;

typedef struct lt_sitebed {
  char data[256]; /* the hub's data directory (credentials, sites/) */
  char conf[320]; /* the hub's config */
  int leaf_port;  /* the hub's leaf listener */
  char hub_url[64];
  lt_natsd hub;
  bus_conn *admin; /* at the hub */
  lt_leaf leaf[LT_SITES];
} lt_sitebed;

/* Render everything; with start, run the hub and both sites and wait
 * until each site's nodes reach their streams through it. */
void lt_sitebed_up(lt_sitebed *x, int start);
void lt_sitebed_down(lt_sitebed *x);

/* Start (or start again) site i's leaf server; stop it (SIGTERM). */
void lt_leaf_start(lt_sitebed *x, int i);
void lt_leaf_stop(lt_sitebed *x, int i);
/* Wait up to ms until node's consumer can be opened through site i:
 * 0, or -1. */
int lt_leaf_ready(lt_sitebed *x, int i, const char *node, int ms);

/* Connect as node name (its _INBOX_<name> prefix) to site i's server;
 * bus_conn_open's code. */
int lt_site_connect(lt_sitebed *x, int i, const char *name, bus_conn **out);
#endif
