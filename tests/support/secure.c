/*
 * secure.c - a broker with the platform's own accounts.
 */
#include "secure.h"

#include <stdio.h>
#include <stdlib.h>

#include "deploy.h"

int
lt_render_accounts(const char *dir) {
  char accounts[512];
  lark_principal *p = NULL;
  size_t n = 0;
  snprintf(accounts, sizeof accounts, "%s/accounts.conf", dir);
  if (lark_creds_load(dir, &p, &n))
    return -1;
  int rc = lark_render_accounts(p, n, accounts);
  free(p);
  return rc ? -1 : 0;
}

int
lt_secure_natsd_start(lt_natsd *s, const char *dir) {
  char conf[512];
  if (lt_render_accounts(dir))
    return -1;
  snprintf(conf, sizeof conf, "%s/nats.conf", dir);
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  o.run_dir = dir;
  if (lark_render_conf("single", &o, conf))
    return -1;
  return lt_natsd_start(s, conf, NULL);
}

int
lt_connect_as(const char *url, const char *dir, const char *name,
              int js_wait_ms, bus_conn **out) {
  char creds[512];
  bus_conn_opts o;
  lark_creds_path(dir, name, creds, sizeof creds);
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  if (js_wait_ms > 0)
    o.js_wait_ms = js_wait_ms;
  o.name = "test";
  return bus_conn_open(out, &o);
}
