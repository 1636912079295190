/*
 * sitebed.c - the edge sites' test bed (see sitebed.h).
 */
#include "sitebed.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy.h"
#include "proc.h"
#include "testcert.h"
#include "wait.h"

static void
add_site(lt_sitebed *x, int i, const char *const *nodes, size_t n) {
  char ca[300], tls[400];
  lark_site_opts o;
  lark_site_opts_init(&o);
  o.hub_url = x->hub_url;
  o.port = x->leaf[i].port;
  snprintf(ca, sizeof ca, "%s/test-ca", x->data);
  snprintf(tls, sizeof tls, "%s/sites/%s/tls", x->data, x->leaf[i].name);
  cr_assert_eq(lt_test_cert(ca, tls, x->leaf[i].name), 0);
  cr_assert_eq(lark_site_add(x->data, x->leaf[i].name, nodes, n, &o, NULL), 0,
               "%s", lark_cfg_error());
}

/* Credentials, both sites, the hub's certificate and config. */
static void
render(lt_sitebed *x) {
  static const char *const north[] = {"n1", "n2"}, *const south[] = {"s1"};
  char ca[300], tls[300], cert[PATH_MAX], key[PATH_MAX], cafile[PATH_MAX];
  cr_assert_eq(lark_creds_ensure(x->data, "admin", LARK_ROLE_ADMIN, NULL, NULL),
               0, "%s", lark_cfg_error());
  x->leaf_port = lark_free_port();
  snprintf(x->hub_url, sizeof x->hub_url, "nats-leaf://127.0.0.1:%d",
           x->leaf_port);
  x->leaf[0].name = "north";
  x->leaf[1].name = "south";
  for (int i = 0; i < LT_SITES; i++) {
    x->leaf[i].port = lark_free_port();
    snprintf(x->leaf[i].url, sizeof x->leaf[i].url, "nats://127.0.0.1:%d",
             x->leaf[i].port);
  }
  add_site(x, 0, north, 2);
  add_site(x, 1, south, 1);
  snprintf(ca, sizeof ca, "%s/test-ca", x->data);
  snprintf(tls, sizeof tls, "%s/tls/leaf-hub", x->data);
  cr_assert_eq(lt_test_cert(ca, tls, "hub"), 0);
  cr_assert(lark_hub_leaf_tls(x->data, cert, key, cafile));
  snprintf(x->conf, sizeof x->conf, "%s/broker/hub.conf", x->data);
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  o.run_dir = x->data;
  o.leaf_port = x->leaf_port;
  o.leaf_cert = cert;
  o.leaf_key = key;
  o.leaf_ca = cafile;
  cr_assert_eq(lark_render_conf("single", &o, x->conf), 0, "%s",
               lark_cfg_error());
}

/* nats-server's path, from $PATH, for execv. */
static void
server_path(char *out, size_t cap) {
  char dirs[4096], *save = NULL;
  const char *path = getenv("PATH");
  snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin");
  for (char *d = strtok_r(dirs, ":", &save); d;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(out, cap, "%s/nats-server", d);
    if (access(out, X_OK) == 0)
      return;
  }
  cr_assert_fail("nats-server not on PATH");
}

void
lt_leaf_start(lt_sitebed *x, int i) {
  char bin[512], c[] = "-c", conf[400], log[400], ports[400];
  char *argv[] = {bin, c, conf, NULL};
  server_path(bin, sizeof bin);
  snprintf(conf, sizeof conf, "%s/sites/%s/leaf.conf", x->data,
           x->leaf[i].name);
  snprintf(log, sizeof log, "%s/sites/%s/leaf.log", x->data, x->leaf[i].name);
  x->leaf[i].pid = lt_spawn(argv, log);
  cr_assert_gt(x->leaf[i].pid, 0);
  snprintf(ports, sizeof ports, "%s/sites/%s/run/nats-server_%d.ports", x->data,
           x->leaf[i].name, (int)x->leaf[i].pid);
  cr_assert_eq(lt_wait_file(ports, 10), 1, "site %s did not start: see %s",
               x->leaf[i].name, log);
}

void
lt_leaf_stop(lt_sitebed *x, int i) {
  if (x->leaf[i].pid > 0)
    lt_kill(x->leaf[i].pid, SIGTERM);
  x->leaf[i].pid = 0;
}

int
lt_site_connect(lt_sitebed *x, int i, const char *name, bus_conn **out) {
  char creds[400], inbox[80];
  bus_conn_opts o;
  snprintf(creds, sizeof creds, "%s/sites/%s/creds/%s.nk", x->data,
           x->leaf[i].name, name);
  snprintf(inbox, sizeof inbox, "_INBOX_%s", name);
  bus_conn_opts_init(&o);
  o.url = x->leaf[i].url;
  o.creds = creds;
  o.inbox_prefix = inbox;
  o.js_wait_ms = 500;
  o.name = name;
  return bus_conn_open(out, &o);
}

int
lt_leaf_ready(lt_sitebed *x, int i, const char *node, int ms) {
  bus_conn *c = NULL;
  for (int t = 0; t < ms; t += 100) {
    if (!c && lt_site_connect(x, i, node, &c) < 0) {
      lt_sleep_ms(100);
      continue;
    }
    bus_slice sl;
    bus_consumer *k = NULL;
    bus_slice_init(&sl, node);
    if (bus_consumer_open(c, &sl.opts, &k) == 0) {
      bus_consumer_close(k);
      bus_conn_close(c);
      return 0;
    }
    lt_sleep_ms(100);
  }
  bus_conn_close(c);
  return -1;
}

void
lt_sitebed_up(lt_sitebed *x, int start) {
  memset(x, 0, sizeof *x);
  lt_tmpdir(x->data, sizeof x->data, "sites");
  render(x);
  if (!start)
    return;
  cr_assert_eq(lt_natsd_start(&x->hub, x->conf, NULL), 0);
  char creds[400];
  bus_conn_opts o;
  lark_creds_path(x->data, "admin", creds, sizeof creds);
  bus_conn_opts_init(&o);
  o.url = x->hub.url;
  o.creds = creds;
  o.js_wait_ms = 2000;
  cr_assert_eq(bus_conn_open(&x->admin, &o), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(x->admin, 2000), 0, "%s", bus_last_error());
  static const char *const nodes[] = {"n1", "n2", "s1"};
  for (size_t i = 0; i < 3; i++)
    cr_assert_eq(bus_node_stream_ensure(x->admin, nodes[i], NULL), 0, "%s",
                 bus_last_error());
  bus_conn_publish(x->admin, "lark.node.n1.pod.a", "a1", 2);
  bus_conn_publish(x->admin, "lark.node.n1.pod.b", "b1", 2);
  bus_conn_publish(x->admin, "lark.node.n2.pod.c", "c2", 2);
  bus_conn_publish(x->admin, "lark.node.s1.pod.secret", "s1", 2);
  for (int i = 0; i < LT_SITES; i++)
    lt_leaf_start(x, i);
  cr_assert_eq(lt_leaf_ready(x, 0, "n1", 15000), 0, "north never linked");
  cr_assert_eq(lt_leaf_ready(x, 1, "s1", 15000), 0, "south never linked");
}

void
lt_sitebed_down(lt_sitebed *x) {
  for (int i = 0; i < LT_SITES; i++)
    lt_leaf_stop(x, i);
  bus_conn_close(x->admin);
  if (x->hub.pid > 0)
    lt_natsd_stop(&x->hub);
  if (getenv("LARK_KEEP"))
    fprintf(stderr, "sitebed: kept %s\n", x->data);
  else
    lt_rmtree(x->data);
}
