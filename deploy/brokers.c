/*
 * brokers.c - the broker servers `larkctl up` runs: one nats-server, or
 * three in a cluster, each rendered from broker-config/ into
 * <data>/broker/lark-<i>.conf, its pid in <data>/run/lark-<i>.pid (written
 * by the server, read by lark_reload_servers), its log in
 * <data>/logs/nats-server-<i>.log. The client port is learnt from the
 * server's ports file and kept across restarts; the URL goes to
 * <data>/url, which larkctl reads when given none.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy-int.h"

/* The cluster's route password, made once per data directory. */
static int
route_password(lark_up *u, char out[33]) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/broker/route.pw", u->data);
  FILE *f = fopen(path, "re");
  if (f) {
    int ok = fscanf(f, "%32s", out) == 1 && strlen(out) == 32;
    fclose(f);
    if (ok)
      return 0;
  }
  lark_random_password(out);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, out, 32) != 32) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static int
render_broker(lark_up *u, int idx, int nservers, const int *routes,
              const char *pw, char *conf, size_t cap) {
  char name[24], store[PATH_MAX], run[PATH_MAX];
  char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX];
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  snprintf(name, sizeof name, "lark-%d", idx + 1);
  snprintf(store, sizeof store, "%s/store/%s", u->data, name);
  snprintf(run, sizeof run, "%s/run", u->data);
  snprintf(conf, cap, "%s/broker/%s.conf", u->data, name);
  o.server_name = name;
  o.listen = u->listen;
  o.port = u->port > 0 ? u->port + idx : -1;
  o.store_dir = store;
  o.run_dir = run;
  o.cluster_port = routes ? routes[idx] : 0;
  o.route_ports = routes;
  o.n_routes = routes ? (size_t)nservers : 0;
  o.route_password = pw;
  dpl_up_hub_leaf(u, idx, &o, cert, key, ca);
  if (lark_render_conf(nservers > 1 ? "cluster" : "single", &o, conf) < 0)
    return dpl_fail(BUS_EINVAL, "cannot render %s: %s", conf, lark_cfg_error());
  return 0;
}

int
dpl_up_render_hub(lark_up *u, int idx) {
  char conf[PATH_MAX], pw[33] = "";
  if (u->nservers > 1 && route_password(u, pw) < 0)
    return dpl_fail(BUS_EINVAL, "cannot read the route password");
  return render_broker(u, idx, u->nservers > 1 ? u->nservers : 1,
                       u->nservers > 1 ? u->routes : NULL, pw, conf,
                       sizeof conf);
}

/* nats-server's path: $LARK_NATS_SERVER, else the first one on $PATH. */
int
dpl_find_server(char *out, size_t cap) {
  const char *env = getenv("LARK_NATS_SERVER");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return access(out, X_OK);
  }
  const char *path = getenv("PATH");
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/usr/local/sbin",
           path ? path : "/usr/bin");
  char *save = NULL;
  for (char *d = strtok_r(dirs, ":", &save); d;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(out, cap, "%s/nats-server", d);
    if (access(out, X_OK) == 0)
      return 0;
  }
  return -1;
}

static int
start_brokers(lark_up *u, int nservers) {
  int routes[LARK_MAX_SERVERS];
  char pw[33] = "", conf[PATH_MAX], log[32], server[PATH_MAX];
  if (dpl_find_server(server, sizeof server) < 0)
    return dpl_fail(BUS_EINVAL, "nats-server not found on PATH (install it "
                                "with ops/setup, or set LARK_NATS_SERVER)");
  for (int i = 0; i < nservers && nservers > 1; i++)
    if ((routes[i] = u->routes[i] = lark_free_port()) <= 0)
      return dpl_fail(BUS_EINVAL, "no free port for the cluster's routes");
  u->nservers = nservers;
  if (nservers > 1 && route_password(u, pw) < 0)
    return dpl_fail(BUS_EINVAL, "cannot write the route password");
  for (int i = 0; i < nservers; i++) {
    int rc = render_broker(u, i, nservers, nservers > 1 ? routes : NULL, pw,
                           conf, sizeof conf);
    if (rc != 0)
      return rc;
    snprintf(log, sizeof log, "nats-server-%d", i + 1);
    lark_proc *k = lark_sup_add(&u->sup, log, log);
    k->broker = 1;
    lark_proc_arg(k, server);
    lark_proc_arg(k, "-c");
    lark_proc_arg(k, conf);
    if (lark_proc_start(k) < 0)
      return dpl_fail(BUS_EINVAL, "cannot start nats-server: %s",
                      strerror(errno));
  }
  return 0;
}

int
lark_ports_file_port(const char *path) {
  char buf[2048];
  if (lark_read_text(path, buf, sizeof buf) < 0)
    return -1;
  char *p = strstr(buf, "\"nats\"");
  if (!p)
    p = strstr(buf, "\"client\"");
  if (!p || !(p = strstr(p, "nats://")) || !(p = strchr(p + 7, ':')))
    return -1;
  return atoi(p + 1);
}

/* Client port of broker pid, from its ports file under <data>/run. */
static int
read_port(const lark_up *u, pid_t pid) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/run/nats-server_%d.ports", u->data, (int)pid);
  return lark_ports_file_port(path);
}

/* Wait for every broker's ports file; learn the ports and the URL. */
static int
wait_brokers(lark_up *u) {
  size_t len = 0;
  u->url[0] = 0;
  for (size_t i = 0; i < u->sup.n; i++) {
    lark_proc *k = &u->sup.procs[i];
    int port = -1;
    for (int t = 0; t < 300 && port < 0 && !lark_sup_stopping(); t++) {
      if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
        k->pid = 0;
        return dpl_fail(BUS_EINVAL, "nats-server exited at start: see %s",
                        k->log);
      }
      if ((port = read_port(u, k->pid)) < 0)
        bus_sleep_ms(50);
    }
    if (port <= 0)
      return dpl_fail(BUS_EINVAL, "nats-server did not start: see %s", k->log);
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    lark_proc_arg(k, "-p"); /* a restart keeps the port */
    lark_proc_arg(k, p);
    len += (size_t)snprintf(u->url + len, sizeof u->url - len, "%snats://%s:%d",
                            len ? "," : "", u->listen, port);
  }
  return 0;
}

static int
write_url(lark_up *u) {
  char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/url", u->data);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f || fprintf(f, "%s\n", u->url) < 0 || fclose(f) != 0 ||
      rename(tmp, path) < 0)
    return dpl_fail(BUS_EINVAL, "cannot write %s: %s", path, strerror(errno));
  return 0;
}

/* Every broker server started, its port learnt and the URL written. */
int
lark_up_brokers(lark_up *u) {
  int rc = start_brokers(u, u->cluster ? LARK_MAX_SERVERS : 1);
  if (rc == 0)
    rc = wait_brokers(u);
  if (rc == 0)
    rc = write_url(u);
  return rc;
}

/* Connect as admin (retrying while the broker starts), then wait until
 * JetStream answers: a cluster needs a few seconds to elect its leader. */
int
lark_up_connect(lark_up *u, bus_conn **out) {
  char creds[PATH_MAX];
  bus_conn_opts co;
  bus_conn *c = NULL;
  int rc = -1;
  lark_creds_path(u->data, "admin", creds, sizeof creds);
  bus_conn_opts_init(&co);
  co.url = u->url;
  co.creds = creds;
  co.name = "larkctl-up";
  for (int t = 0; t < 60 && rc < 0 && !lark_sup_stopping(); t++)
    if ((rc = bus_conn_open(&c, &co)) < 0)
      bus_sleep_ms(250);
  if (rc < 0)
    return dpl_fail_bus(rc, "cannot connect to %s", u->url);
  for (int t = 0; t < 120 && !lark_sup_stopping(); t++) {
    rc = lark_stream_info(c, bus_stream_names[0], NULL, NULL, NULL, NULL);
    if (rc == 0 || rc == BUS_ENOT_FOUND)
      break;
    bus_sleep_ms(250);
  }
  *out = c;
  return 0;
}
