/*
 * cmd_up.c - `larkctl up`: the whole platform on this machine, through
 * the deploy part (deploy/deploy.h, "larkctl up").
 *
 * Order: lock the data directory, make the credentials (never rotating a
 * key), render the broker's config, start nats-server (one, or three in a
 * cluster), learn its port, write <data>/url, create the streams
 * in-process, then start every service and edge runtime whose binary
 * sits next to larkctl, with --relay the pod network, and lark-gateway
 * (unless --no-gateway) on 127.0.0.1 behind a fresh login token. With
 * --sites N, the nodes sit behind N local edge sites, each its own leaf
 * nats-server dialling the hub (every server of it with --cluster;
 * deploy/sites_up.c). Once
 * every service answers and the gateway has bound its port, the line
 *   dashboard: http://127.0.0.1:PORT/?token=TOKEN
 * is printed (as notebook servers print theirs: a click opens it), then
 * the `ready` line. Ctrl-C stops the services, then the broker.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "deploy.h"
#include "devices.h"

static const char usage_line[] =
    "larkctl up [--data DIR] [--nodes N] [--port P] [--cluster] "
    "[--listen ADDR] [--device-file FILE] "
    "[--relay [--pod-cidr A.B.0.0/16] [--domain D]...] "
    "[--gateway-port P | --no-gateway] [--sites N]";

/* "A.B.0.0/16" into u->pod_a, u->pod_b. */
static int
parse_pod_net(const char *s, lark_up *u) {
  unsigned a, b;
  char tail[8];
  if (sscanf(s, "%3u.%3u.0.0/%7s", &a, &b, tail) != 3 || strcmp(tail, "16") ||
      a > 255 || b > 255)
    return -1;
  u->pod_a = a;
  u->pod_b = b;
  return 0;
}

static int
parse_args(int argc, char **argv, lark_up *u) {
  int pod_net = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--cluster") || !strcmp(a, "--relay") ||
        !strcmp(a, "--no-gateway")) {
      *(a[2] == 'c'   ? &u->cluster
        : a[2] == 'r' ? &u->relay
                      : &u->no_gateway) = 1;
      continue;
    }
    if (i + 1 >= argc)
      return -1;
    char *end;
    long v = strtol(argv[i + 1], &end, 10);
    if (!strcmp(a, "--listen") || !strcmp(a, "--device-file")) {
      *(a[2] == 'l' ? &u->listen : &u->device_file) = argv[++i];
      continue;
    }
    if (!strcmp(a, "--domain")) {
      if (u->ndomains == LARK_MAX_DOMAINS || !bus_name_valid(argv[i + 1], 40))
        return -1;
      u->domains[u->ndomains++] = argv[++i];
      continue;
    }
    if (!strcmp(a, "--pod-cidr")) {
      if (parse_pod_net(argv[++i], u) < 0)
        return -1;
      pod_net = 1;
      continue;
    }
    if (*end || v < 0)
      return -1;
    if (!strcmp(a, "--nodes") && v <= 32)
      u->nodes = (int)v;
    else if (!strcmp(a, "--port") && v < 65534)
      u->port = (int)v;
    else if (!strcmp(a, "--gateway-port") && v < 65536)
      u->gateway_port = (int)v;
    else if (!strcmp(a, "--sites") && v <= 16)
      u->sites = (int)v;
    else
      return -1;
    i++;
  }
  if (u->no_gateway && u->gateway_port)
    return -1;
  return (u->ndomains || pod_net) && !u->relay ? -1 : 0;
}

/*
 * The device file as the nodes will read it (the same parser), made
 * absolute for them: a bad file stops `up` before anything starts, with
 * the line it is on, rather than failing every node it is shared to.
 */
static int
check_device_file(lark_up *u) {
  static char path[PATH_MAX];
  char err[1024];
  edge_devices d;
  if (!u->device_file)
    return CLI_OK;
  if (!realpath(u->device_file, path))
    return cli_fail("up", 0, "device file %s: %s", u->device_file,
                    strerror(errno));
  if (edge_devices_load(path, &d, err, sizeof err))
    return cli_fail("up", 0, "device file %s", err);
  int robots = 0;
  for (int i = 0; i < d.n; i++)
    robots += d.v[i].kind != EDGE_DEV_CAMERA;
  printf("larkctl up: %d robot%s and %d camera%s from %s, shared among %d "
         "node%s\n",
         robots, robots == 1 ? "" : "s", d.n - robots,
         d.n - robots == 1 ? "" : "s", path, u->nodes,
         u->nodes == 1 ? "" : "s");
  edge_devices_free(&d);
  u->device_file = path;
  return CLI_OK;
}

/* Credentials, brokers, streams: everything before the services. */
static int
start_base(lark_up *u, lark_cli *cli) {
  char user[BUS_NAME_MAX + 1];
  int made = 0;
  bus_conn *c = NULL;
  if (lark_up_prepare(u, cli->data) < 0 ||
      lark_up_creds(u, &made, user, sizeof user) < 0)
    return cli_fail("up", 0, "%s", lark_cfg_error());
  if (made)
    printf("larkctl up: created %d credential%s in %s/creds (user %s)\n", made,
           made > 1 ? "s" : "", u->data, user);
  if (lark_up_brokers(u) < 0 || lark_up_connect(u, &c) < 0)
    return cli_fail("up", 0, "%s", lark_cfg_error());
  bus_streams_opts so;
  bus_streams_opts_init(&so);
  so.replicas = u->cluster ? LARK_MAX_SERVERS : 1;
  int rc = cli_init_streams(c, &so, cli->output);
  bus_conn_close(c);
  return rc;
}

static int
run(lark_up *u, lark_cli *cli) {
  char services[1024], dashboard[256];
  int rc = check_device_file(u);
  if (rc == CLI_OK)
    rc = start_base(u, cli);
  if (rc == CLI_OK &&
      (lark_up_services_start(u, services, sizeof services) < 0 ||
       (u->relay && lark_up_pod_network(u, services, sizeof services) < 0) ||
       lark_up_gateway_start(u, services, sizeof services) < 0 ||
       lark_up_wait_ready(u) < 0 ||
       lark_up_gateway_url(u, dashboard, sizeof dashboard) < 0))
    rc = cli_fail("up", 0, "%s", lark_cfg_error());
  if (rc != CLI_OK || lark_sup_stopping())
    return rc;
  if (dashboard[0])
    printf("dashboard: %s\n", dashboard);
  printf("larkbus ready: %s, services: %s; data %s\n", u->url, services,
         u->data);
  fflush(stdout);
  lark_up_supervise(u);
  printf("larkctl up: stopping\n");
  fflush(stdout);
  return rc;
}

int
cmd_up(int argc, char **argv, lark_cli *cli) {
  lark_up *u = calloc(1, sizeof *u);
  if (!u)
    return cli_fail("up", 0, "out of memory");
  lark_up_init(u);
  if (parse_args(argc, argv, u) < 0) {
    free(u);
    return cli_usage(usage_line);
  }
  if (u->relay && geteuid() != 0) {
    free(u);
    return cli_fail("up", 0,
                    "--relay needs root (it gives pods network namespaces "
                    "and captures their connections with nftables): run it "
                    "as root, or without --relay");
  }
  lark_sup_catch_signals();
  int rc = run(u, cli);
  lark_up_stop(u);
  free(u);
  return rc;
}
