/*
 * sitehub.c - a hub and its edge sites from the files larkdeploy renders
 * (see sitehub.h).
 */
#include "sitehub.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy.h"
#include "proc.h"
#include "secure.h"
#include "testcert.h"

/* larkdeploy's failure, as this file's. */
static int
cfg_fail(int rc, const char *what) {
  return bus_error(rc < 0 ? rc : BUS_EINVAL, "%s: %s", what, lark_cfg_error());
}

int
lt_hub_render(const char *data, int leaf_port, char *conf, size_t cap) {
  char ca[PATH_MAX], tls[PATH_MAX], cert[PATH_MAX], key[PATH_MAX],
      cafile[PATH_MAX];
  int rc = lark_creds_ensure(data, "admin", LARK_ROLE_ADMIN, NULL, NULL);
  if (rc < 0 || (rc = lark_regen_accounts(data)) < 0)
    return cfg_fail(rc, "admin's credentials");
  snprintf(ca, sizeof ca, "%s/test-ca", data);
  snprintf(tls, sizeof tls, "%s/tls/leaf-hub", data);
  if (lt_test_cert(ca, tls, "hub") < 0 ||
      !lark_hub_leaf_tls(data, cert, key, cafile))
    return bus_error(BUS_EINVAL, "no certificate for the hub (openssl)");
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  o.run_dir = data;
  o.leaf_port = leaf_port;
  o.leaf_cert = cert;
  o.leaf_key = key;
  o.leaf_ca = cafile;
  snprintf(conf, cap, "%s/broker/hub.conf", data);
  if ((rc = lark_render_conf("single", &o, conf)) < 0)
    return cfg_fail(rc, "the hub's config");
  return 0;
}

int
lt_site_render(const char *data, const char *site, const char *const *nodes,
               size_t n, const char *dial, int port) {
  char ca[PATH_MAX], tls[PATH_MAX];
  snprintf(ca, sizeof ca, "%s/test-ca", data);
  snprintf(tls, sizeof tls, "%s/sites/%s/tls", data, site);
  if (lt_test_cert(ca, tls, site) < 0)
    return bus_error(BUS_EINVAL, "no certificate for site %s (openssl)", site);
  lark_site_opts o;
  lark_site_opts_init(&o);
  o.hub_url = dial;
  o.port = port;
  int rc = lark_site_add(data, site, nodes, n, &o, NULL);
  return rc < 0 ? cfg_fail(rc, "site add") : 0;
}

int
lt_hub_start(const char *data, const char *conf, lt_natsd *hub,
             bus_conn **admin, int js_wait_ms, int dedupe_ms) {
  if (lt_natsd_start(hub, conf, NULL) < 0)
    return bus_error(BUS_EINVAL, "the hub's nats-server did not start");
  int rc = lt_connect_as(hub->url, data, "admin", js_wait_ms, admin);
  return rc < 0 ? rc : lt_streams(*admin, dedupe_ms);
}

pid_t
lt_site_leaf_start(const char *data, const char *site, const char *log) {
  char env[] = "/usr/bin/env", ns[] = "nats-server", c[] = "-c";
  char conf[PATH_MAX], ports[PATH_MAX];
  char *argv[] = {env, ns, c, conf, NULL};
  snprintf(conf, sizeof conf, "%s/sites/%s/leaf.conf", data, site);
  pid_t pid = lt_spawn(argv, log);
  if (pid <= 0)
    return bus_error(BUS_EINVAL, "cannot start site %s's server", site);
  snprintf(ports, sizeof ports, "%s/sites/%s/run/nats-server_%d.ports", data,
           site, (int)pid);
  for (int t = 0; t < 100 && access(ports, F_OK) != 0; t++)
    bus_sleep_ms(100);
  if (access(ports, F_OK) != 0)
    return bus_error(BUS_EINVAL, "site %s's server did not start: see %s", site,
                     log);
  return pid;
}

int
lt_site_node_connect(const char *data, const char *site, const char *name,
                     const char *url, int js_wait_ms, bus_conn **out) {
  char creds[PATH_MAX], inbox[80];
  bus_conn_opts o;
  snprintf(creds, sizeof creds, "%s/sites/%s/creds/%s.nk", data, site, name);
  snprintf(inbox, sizeof inbox, "_INBOX_%s", name);
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  o.inbox_prefix = inbox;
  o.name = name;
  if (js_wait_ms)
    o.js_wait_ms = js_wait_ms;
  return bus_conn_open(out, &o);
}
