/*
 * sitebed.c - the edge sites' test bed (see sitebed.h).
 */
#include "sitebed.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "deploy.h"
#include "proc.h"
#include "sitehub.h"
#include "wait.h"

/* Credentials, both sites, the hub's certificate and config. */
static void
render(lt_sitebed *x) {
  static const char *const north[] = {"n1", "n2"}, *const south[] = {"s1"};
  static const char *const *const nodes[LT_SITES] = {north, south};
  static const size_t n[LT_SITES] = {2, 1};
  x->leaf_port = lark_free_port();
  snprintf(x->hub_url, sizeof x->hub_url, "nats-leaf://127.0.0.1:%d",
           x->leaf_port);
  cr_assert_eq(lt_hub_render(x->data, x->leaf_port, x->conf, sizeof x->conf), 0,
               "%s", bus_last_error());
  x->leaf[0].name = "north";
  x->leaf[1].name = "south";
  for (int i = 0; i < LT_SITES; i++) {
    x->leaf[i].port = lark_free_port();
    snprintf(x->leaf[i].url, sizeof x->leaf[i].url, "nats://127.0.0.1:%d",
             x->leaf[i].port);
    cr_assert_eq(lt_site_render(x->data, x->leaf[i].name, nodes[i], n[i],
                                x->hub_url, x->leaf[i].port),
                 0, "%s", bus_last_error());
  }
}

void
lt_leaf_start(lt_sitebed *x, int i) {
  char log[400];
  snprintf(log, sizeof log, "%s/sites/%s/leaf.log", x->data, x->leaf[i].name);
  x->leaf[i].pid = lt_site_leaf_start(x->data, x->leaf[i].name, log);
  cr_assert_gt(x->leaf[i].pid, 0, "%s", bus_last_error());
}

void
lt_leaf_stop(lt_sitebed *x, int i) {
  if (x->leaf[i].pid > 0)
    lt_kill(x->leaf[i].pid, SIGTERM);
  x->leaf[i].pid = 0;
}

int
lt_site_connect(lt_sitebed *x, int i, const char *name, bus_conn **out) {
  return lt_site_node_connect(x->data, x->leaf[i].name, name, x->leaf[i].url,
                              500, out);
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
  cr_assert_eq(lt_hub_start(x->data, x->conf, &x->hub, &x->admin, 2000, 2000),
               0, "%s", bus_last_error());
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
