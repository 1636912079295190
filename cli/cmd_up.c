/*
 * cmd_up.c - `larkctl up`: the whole platform on this machine.
 *
 * Order: lock the data directory, make the credentials (never rotating a
 * key), render the broker's config, start nats-server (one, or three in a
 * cluster), learn its port from the ports file, write <data>/url, create
 * the streams in-process, then start every service and edge runtime whose
 * binary sits next to larkctl. Only then is the `ready` line printed.
 *
 * Invariants:
 * - One `up` per data directory: an flock on <data>/run/up.lock, held for
 *   the life of the process and released by the kernel however it ends,
 *   so a stale lock file never blocks a new run.
 * - Children run in their own process group (a ^C reaches only us, and we
 *   stop them in order: services first, then the broker) and get SIGTERM
 *   if we die (PR_SET_PDEATHSIG), so no nats-server is left behind.
 * - A child that exits is restarted with a backoff that doubles from 1 s
 *   to 30 s (back to 1 s after a minute of good running), and the restart
 *   is printed. A restarted broker keeps the port it first got.
 * - Between fork and exec the child calls only async-signal-safe
 *   functions: every string is prepared before the fork.
 *
 * With --relay (root only) the pod network runs too: each local node is
 * its own cluster c<i> with the pod range A.B.<i>.0/24 (raw+netns), a
 * relay hub listens beside the broker, and one `lark-relay node` per
 * node dials it. The hub starts once the signer's SSH CA exists; its
 * port, picked at the first start, is kept for restarts (the relays were
 * told it). Domain certificates named by --domain are requested for
 * every node before the relays start and renewed when half their
 * validity has passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "brokercfg.h"
#include "cli.h"
#include "signer.h"

enum { MAX_KIDS = 80, MAX_ARGS = 24, MAX_SERVERS = 3, MAX_DOMAINS = 8 };
enum { BACKOFF_MIN_MS = 1000, BACKOFF_MAX_MS = 30000, GRACE_MS = 5000 };

typedef struct child {
  char name[BUS_NAME_MAX + 1];
  char args[MAX_ARGS][PATH_MAX];
  char *argv[MAX_ARGS + 1];
  int argc;
  char log[PATH_MAX];
  int broker;
  pid_t pid;
  int restarts, backoff_ms;
  int64_t started_ms, due_ms; /* due_ms: restart time, 0 when running */
} child;

enum { DATA_MAX = 2048 }; /* leaves room below PATH_MAX for what follows */

typedef struct up_ctx {
  char data[DATA_MAX];
  char bin_dir[PATH_MAX];
  int nodes, port, cluster;
  const char *listen;
  /* --relay */
  int relay;
  unsigned pod_a, pod_b; /* local pods in pod_a.pod_b.<node>.0/24 */
  const char *domains[MAX_DOMAINS];
  int ndomains;
  char hub[96]; /* HOST:PORT the node relays dial */
  int64_t certs_checked_ms;
  int lock_fd;
  child kids[MAX_KIDS];
  size_t nkids;
  char url[1024];
} up_ctx;

static const char usage_line[] =
    "larkctl up [--data DIR] [--nodes N] [--port P] [--cluster] "
    "[--listen ADDR] [--relay [--pod-cidr A.B.0.0/16] [--domain D]...]";

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static int64_t
mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------- children */

static child *
child_add(up_ctx *u, const char *name, const char *log_name) {
  if (u->nkids == MAX_KIDS)
    return NULL;
  child *k = &u->kids[u->nkids++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  char log[sizeof k->log]; /* k lives inside u: no overlapping snprintf */
  snprintf(log, sizeof log, "%s/logs/%s.log", u->data, log_name);
  memcpy(k->log, log, sizeof log);
  k->backoff_ms = BACKOFF_MIN_MS;
  return k;
}

static void
child_arg(child *k, const char *a) {
  if (k->argc >= MAX_ARGS)
    return;
  size_t n = strnlen(a, PATH_MAX - 1);
  memcpy(k->args[k->argc], a, n);
  k->args[k->argc][n] = 0;
  k->argv[k->argc] = k->args[k->argc];
  k->argc++;
  k->argv[k->argc] = NULL;
}

static int
child_start(child *k) {
  int fd = open(k->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return -errno;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (null >= 0)
      dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(k->argv[0], k->argv);
    _exit(127);
  }
  close(fd);
  k->pid = pid;
  k->started_ms = mono_ms();
  k->due_ms = 0;
  return 0;
}

static void
describe_exit(int status, char *out, size_t cap) {
  if (WIFEXITED(status))
    snprintf(out, cap, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
  else
    snprintf(out, cap, "status %d", status);
}

/* A child exited: schedule its restart with backoff. */
static void
child_died(child *k, int status) {
  char how[64];
  int64_t now = mono_ms();
  describe_exit(status, how, sizeof how);
  if (now - k->started_ms > 60000)
    k->backoff_ms = BACKOFF_MIN_MS;
  k->pid = 0;
  k->due_ms = now + k->backoff_ms;
  k->restarts++;
  printf("larkctl up: %s exited (%s); restart %d in %d.%d s (log %s)\n",
         k->name, how, k->restarts, k->backoff_ms / 1000,
         k->backoff_ms % 1000 / 100, k->log);
  fflush(stdout);
  k->backoff_ms =
      k->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : k->backoff_ms * 2;
}

static void
reap(up_ctx *u) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
    for (size_t i = 0; i < u->nkids; i++)
      if (u->kids[i].pid == pid) {
        if (stop_flag)
          u->kids[i].pid = 0;
        else
          child_died(&u->kids[i], status);
      }
}

static void
restart_due(up_ctx *u) {
  int64_t now = mono_ms();
  for (size_t i = 0; i < u->nkids; i++) {
    child *k = &u->kids[i];
    if (k->pid || !k->due_ms || now < k->due_ms)
      continue;
    if (child_start(k) < 0) {
      k->due_ms = now + k->backoff_ms;
      continue;
    }
    printf("larkctl up: %s restarted (pid %d)\n", k->name, (int)k->pid);
    fflush(stdout);
  }
}

/* Signal every running child of one kind, then wait up to grace_ms for
 * them and SIGKILL what is left. */
static void
stop_kind(up_ctx *u, int broker, int sig, int grace_ms) {
  int64_t end = mono_ms() + grace_ms;
  for (size_t i = 0; i < u->nkids; i++)
    if (u->kids[i].broker == broker && u->kids[i].pid > 0)
      kill(u->kids[i].pid, sig);
  for (;;) {
    int left = 0;
    for (size_t i = 0; i < u->nkids; i++) {
      child *k = &u->kids[i];
      if (k->broker != broker || k->pid <= 0)
        continue;
      if (waitpid(k->pid, NULL, WNOHANG) == k->pid)
        k->pid = 0;
      else if (mono_ms() >= end) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, NULL, 0);
        k->pid = 0;
      } else
        left++;
    }
    if (!left)
      return;
    sleep_ms(50);
  }
}

static void
stop_all(up_ctx *u) {
  stop_flag = 1;
  stop_kind(u, 0, SIGTERM, GRACE_MS);
  stop_kind(u, 1, SIGTERM, 2 * GRACE_MS);
}

/* --------------------------------------------------------------- setup */

static int
lock_data(up_ctx *u) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/run/up.lock", u->data);
  u->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (u->lock_fd < 0)
    return cli_fail("up", 0, "cannot open %s: %s", path, strerror(errno));
  if (flock(u->lock_fd, LOCK_EX | LOCK_NB) < 0) {
    char pid[32] = "?";
    ssize_t n = pread(u->lock_fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 1] = 0;
    pid[strcspn(pid, "\n")] = 0;
    return cli_fail("up", 0,
                    "already running for %s (pid %s): stop it first, or "
                    "use another --data",
                    u->data, pid);
  }
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
  if (ftruncate(u->lock_fd, 0) < 0 || pwrite(u->lock_fd, buf, (size_t)n, 0) < 0)
    return cli_fail("up", 0, "cannot write %s: %s", path, strerror(errno));
  return CLI_OK;
}

static int
make_dirs(up_ctx *u, const char *data) {
  static const char *const subs[] = {"creds", "broker", "run", "logs",
                                     "views", "store",  NULL};
  char path[PATH_MAX + 16], abs[PATH_MAX];
  if (lark_mkdirs(data, 0700) < 0 || !realpath(data, abs))
    return cli_fail("up", 0, "cannot use data directory %s: %s", data,
                    lark_cfg_error()[0] ? lark_cfg_error() : strerror(errno));
  if (strlen(abs) >= sizeof u->data)
    return cli_fail("up", 0, "data directory path too long: %s", abs);
  memcpy(u->data, abs, strlen(abs) + 1);
  for (size_t i = 0; subs[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", u->data, subs[i]);
    if (lark_mkdirs(path, 0700) < 0)
      return cli_fail("up", 0, "%s", lark_cfg_error());
  }
  return CLI_OK;
}

/* The user's own principal: $USER made into a valid name, else "user". */
static void
user_name(char *out, size_t cap) {
  const char *u = getenv("USER");
  size_t n = 0;
  for (; u && *u && n + 1 < cap && n < BUS_NAME_MAX; u++) {
    char c = *u >= 'A' && *u <= 'Z' ? (char)(*u - 'A' + 'a') : *u;
    out[n++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
  }
  out[n] = 0;
  if (!bus_name_valid(out, BUS_NAME_MAX) || !strcmp(out, "admin"))
    snprintf(out, cap, "user");
}

static int
ensure_one(up_ctx *u, const char *name, lark_role role, int *made) {
  int created = 0;
  if (lark_creds_ensure(u->data, name, role, NULL, &created) < 0)
    return cli_fail("up", 0, "credentials for %s: %s", name, lark_cfg_error());
  *made += created;
  return CLI_OK;
}

static int
make_creds(up_ctx *u) {
  char user[BUS_NAME_MAX + 1], node[32];
  int made = 0, rc = ensure_one(u, "admin", LARK_ROLE_ADMIN, &made);
  for (size_t i = 0; rc == CLI_OK && lark_service_names[i]; i++)
    rc = ensure_one(u, lark_service_names[i], LARK_ROLE_SERVICE, &made);
  user_name(user, sizeof user);
  if (rc == CLI_OK)
    rc = ensure_one(u, user, LARK_ROLE_USER, &made);
  for (int i = 1; rc == CLI_OK && i <= u->nodes; i++) {
    snprintf(node, sizeof node, "node-%d", i);
    rc = ensure_one(u, node, LARK_ROLE_NODE, &made);
  }
  if (u->relay && rc == CLI_OK)
    rc = ensure_one(u, "relay-hub", LARK_ROLE_RELAY_HUB, &made);
  for (int i = 1; u->relay && rc == CLI_OK && i <= u->nodes; i++) {
    char cl[16];
    int created = 0;
    snprintf(node, sizeof node, "relay-node-%d", i);
    snprintf(cl, sizeof cl, "c%d", i); /* as start_node_relays */
    if (lark_creds_ensure_relay(u->data, node, cl, NULL, &created) < 0)
      rc = cli_fail("up", 0, "credentials for %s: %s", node, lark_cfg_error());
    made += created;
  }
  if (rc != CLI_OK)
    return rc;
  if (lark_regen_accounts(u->data) < 0)
    return cli_fail("up", 0, "%s", lark_cfg_error());
  if (made)
    printf("larkctl up: created %d credential%s in %s/creds (user %s)\n", made,
           made > 1 ? "s" : "", u->data, user);
  return CLI_OK;
}

/* A free TCP port on loopback (bound, then released). */
static int
free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* The cluster's route password, made once per data directory. */
static int
route_password(up_ctx *u, char out[33]) {
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
render_broker(up_ctx *u, int idx, int nservers, const int *routes,
              const char *pw, char *conf, size_t cap) {
  char name[24], store[PATH_MAX], run[PATH_MAX];
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
  if (lark_render_conf(nservers > 1 ? "cluster" : "single", &o, conf) < 0)
    return cli_fail("up", 0, "cannot render %s: %s", conf, lark_cfg_error());
  return CLI_OK;
}

/* nats-server's path: $LARK_NATS_SERVER, else the first one on $PATH. */
static int
find_server(char *out, size_t cap) {
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
start_brokers(up_ctx *u, int nservers) {
  int routes[MAX_SERVERS];
  char pw[33] = "", conf[PATH_MAX], log[32], server[PATH_MAX];
  if (find_server(server, sizeof server) < 0)
    return cli_fail("up", 0,
                    "nats-server not found on PATH (install it "
                    "with ops/setup, or set LARK_NATS_SERVER)");
  for (int i = 0; i < nservers && nservers > 1; i++)
    if ((routes[i] = free_port()) <= 0)
      return cli_fail("up", 0, "no free port for the cluster's routes");
  if (nservers > 1 && route_password(u, pw) < 0)
    return cli_fail("up", 0, "cannot write the route password");
  for (int i = 0; i < nservers; i++) {
    int rc = render_broker(u, i, nservers, nservers > 1 ? routes : NULL, pw,
                           conf, sizeof conf);
    if (rc != CLI_OK)
      return rc;
    snprintf(log, sizeof log, "nats-server-%d", i + 1);
    child *k = child_add(u, log, log);
    k->broker = 1;
    child_arg(k, server);
    child_arg(k, "-c");
    child_arg(k, conf);
    if (child_start(k) < 0)
      return cli_fail("up", 0, "cannot start nats-server: %s", strerror(errno));
  }
  return CLI_OK;
}

/* Client port of pid from its ports file: {"nats":["nats://h:p"],...}
 * (2.9.10 names it "nats"; later versions may say "client"). */
static int
read_port(const up_ctx *u, pid_t pid) {
  char path[PATH_MAX + 64], buf[2048];
  snprintf(path, sizeof path, "%s/run/nats-server_%d.ports", u->data, (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strstr(buf, "\"nats\"");
  if (!p)
    p = strstr(buf, "\"client\"");
  if (!p || !(p = strstr(p, "nats://")) || !(p = strchr(p + 7, ':')))
    return -1;
  return atoi(p + 1);
}

/* Wait for every broker's ports file; learn the ports and the URL. */
static int
wait_brokers(up_ctx *u) {
  size_t len = 0;
  u->url[0] = 0;
  for (size_t i = 0; i < u->nkids; i++) {
    child *k = &u->kids[i];
    int port = -1;
    for (int t = 0; t < 300 && port < 0 && !stop_flag; t++) {
      if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
        k->pid = 0;
        return cli_fail("up", 0, "nats-server exited at start: see %s", k->log);
      }
      if ((port = read_port(u, k->pid)) < 0)
        sleep_ms(50);
    }
    if (port <= 0)
      return cli_fail("up", 0, "nats-server did not start: see %s", k->log);
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    child_arg(k, "-p"); /* a restart keeps the port */
    child_arg(k, p);
    len += (size_t)snprintf(u->url + len, sizeof u->url - len, "%snats://%s:%d",
                            len ? "," : "", u->listen, port);
  }
  return CLI_OK;
}

static int
write_url(up_ctx *u) {
  char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/url", u->data);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f || fprintf(f, "%s\n", u->url) < 0 || fclose(f) != 0 ||
      rename(tmp, path) < 0)
    return cli_fail("up", 0, "cannot write %s: %s", path, strerror(errno));
  return CLI_OK;
}

/* Connect as admin (retrying while the broker starts) and make the
 * streams; a cluster needs a few seconds to elect its JetStream leader. */
static int
init_streams(up_ctx *u, lark_cli *cli) {
  char creds[PATH_MAX];
  bus_conn_opts co;
  bus_conn *c = NULL;
  int rc = -1;
  lark_creds_path(u->data, "admin", creds, sizeof creds);
  bus_conn_opts_init(&co);
  co.url = u->url;
  co.creds = creds;
  co.name = "larkctl-up";
  for (int t = 0; t < 60 && rc < 0 && !stop_flag; t++)
    if ((rc = bus_conn_open(&c, &co)) < 0)
      sleep_ms(250);
  if (rc < 0)
    return cli_fail("up", rc, "cannot connect to %s", u->url);
  for (int t = 0; t < 120 && !stop_flag; t++) {
    rc = lark_stream_info(c, bus_stream_names[0], NULL, NULL, NULL);
    if (rc == 0 || rc == BUS_ENOT_FOUND)
      break;
    sleep_ms(250);
  }
  bus_streams_opts so;
  bus_streams_opts_init(&so);
  so.replicas = u->cluster ? 3 : 1;
  rc = cli_init_streams(c, &so, cli->output);
  bus_conn_close(c);
  return rc;
}

static child *
add_service(up_ctx *u, const char *name, const char *bin, const char *node) {
  char path[PATH_MAX + 64];
  child *k = child_add(u, name, name);
  if (!k)
    return NULL;
  snprintf(path, sizeof path, "%s/%s", u->bin_dir, bin);
  child_arg(k, path);
  child_arg(k, "--url");
  child_arg(k, u->url);
  child_arg(k, "--creds");
  lark_creds_path(u->data, name, path, sizeof path);
  child_arg(k, path);
  child_arg(k, "--data");
  snprintf(path, sizeof path, "%s/views/%s", u->data, name);
  child_arg(k, path);
  if (node) {
    child_arg(k, "--node");
    child_arg(k, node);
  }
  return k;
}

/* With --relay, node i is cluster c<i>, labelled so, with its pod range. */
static void
edge_pod_network(up_ctx *u, child *k, int i) {
  char v[64];
  if (!k || !u->relay)
    return;
  snprintf(v, sizeof v, "c%d", i);
  child_arg(k, "--cluster");
  child_arg(k, v);
  snprintf(v, sizeof v, "rlark.io/cluster=c%d", i);
  child_arg(k, "--labels");
  child_arg(k, v);
  snprintf(v, sizeof v, "%u.%u.%d.0/24", u->pod_a, u->pod_b, i);
  child_arg(k, "--pod-cidr");
  child_arg(k, v);
}

/* Start what exists next to larkctl; list the names in out. */
static int
start_services(up_ctx *u, char *out, size_t cap) {
  size_t first = u->nkids, len = 0;
  char node[32];
  for (size_t i = 0; lark_up_services[i]; i++)
    if (lark_bin_exists(u->bin_dir, lark_up_services[i]))
      add_service(u, lark_up_services[i], lark_up_services[i], NULL);
  for (int i = 1;
       i <= u->nodes && lark_bin_exists(u->bin_dir, LARK_EDGE_BINARY); i++) {
    snprintf(node, sizeof node, "node-%d", i);
    edge_pod_network(u, add_service(u, node, LARK_EDGE_BINARY, node), i);
  }
  snprintf(out, cap, "none");
  for (size_t i = first; i < u->nkids; i++) {
    if (child_start(&u->kids[i]) < 0)
      return cli_fail("up", 0, "cannot start %s: %s", u->kids[i].name,
                      strerror(errno));
    len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s",
                            i > first ? ", " : "", u->kids[i].name);
  }
  return CLI_OK;
}

/*
 * Ready means answering: every service started here answers its status
 * request (it serves its commands before its status, so an answer means
 * both are served). Waits up to a minute, while the supervisor's restarts
 * go on; says which services stayed silent.
 */
static int
wait_services(up_ctx *u) {
  char creds[PATH_MAX], silent[512] = "";
  bus_conn_opts co;
  bus_conn *c = NULL;
  bus_conn_opts_init(&co);
  lark_creds_path(u->data, "admin", creds, sizeof creds);
  co.url = u->url;
  co.creds = creds;
  co.name = "larkctl-up";
  int rc = bus_conn_open(&c, &co);
  if (rc < 0)
    return cli_fail("up", rc, "cannot connect to %s", u->url);
  int64_t deadline = mono_ms() + 60000;
  do {
    size_t len = 0;
    silent[0] = 0;
    for (size_t i = 0; i < u->nkids && !stop_flag; i++) {
      const child *k = &u->kids[i];
      bus_status st;
      if (k->broker || strncmp(k->name, "lark-", 5) ||
          bus_status_query(c, k->name + 5, 500, &st) == 0)
        continue;
      len += (size_t)snprintf(silent + len,
                              len < sizeof silent ? sizeof silent - len : 0,
                              "%s%s", len ? ", " : "", k->name);
    }
    if (!silent[0] || stop_flag)
      break;
    reap(u);
    restart_due(u);
    sleep_ms(200);
  } while (mono_ms() < deadline);
  bus_conn_close(c);
  if (silent[0] && !stop_flag)
    return cli_fail("up", 0,
                    "no status answer after 60 s from: %s (see their "
                    "logs in %s/logs)",
                    silent, u->data);
  return CLI_OK;
}

/* ----------------------------------------------------------- pod network */

/* Write path whole (mode) through a temporary file and rename. */
static int
write_whole(const char *path, const void *data, size_t len, mode_t mode) {
  char tmp[PATH_MAX + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return -errno;
  int rc = 0;
  const char *p = data;
  for (size_t off = 0; !rc && off < len;) {
    ssize_t w = write(fd, p + off, len - off);
    if (w < 0 && errno != EINTR)
      rc = -errno;
    else if (w > 0)
      off += (size_t)w;
  }
  if (!rc && fsync(fd) < 0)
    rc = -errno;
  close(fd);
  if (!rc && rename(tmp, path) < 0)
    rc = -errno;
  if (rc)
    unlink(tmp);
  return rc;
}

/*
 * The hub's SSH host key, made once: <data>/relay/hostkey (0600) and
 * hostkey.pub, which the node relays pin. The public file is written
 * first, so a present private file means both are complete.
 */
static int
host_key(up_ctx *u) {
  char key[PATH_MAX], pub[PATH_MAX + 8], line[256];
  char *priv = NULL;
  size_t len = 0;
  uint8_t pk[crypto_sign_PUBLICKEYBYTES];
  snprintf(key, sizeof key, "%s/relay/hostkey", u->data);
  snprintf(pub, sizeof pub, "%s.pub", key);
  if (access(key, R_OK) == 0 && access(pub, R_OK) == 0)
    return CLI_OK;
  uint8_t *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
  if (sodium_init() < 0 || !sk)
    return cli_fail("up", 0, "cannot make the hub's host key");
  crypto_sign_keypair(pk, sk);
  int rc = signer_ssh_private_format(pk, sk, "lark-relay-hub", &priv, &len);
  sodium_free(sk); /* wipes */
  if (!rc)
    rc = signer_ssh_pub_format(pk, "lark-relay-hub", line, sizeof line - 1);
  if (!rc) {
    strcat(line, "\n");
    rc = write_whole(pub, line, strlen(line), 0644);
  }
  if (!rc)
    rc = write_whole(key, priv, len, 0600);
  sodium_free(priv);
  if (rc)
    return cli_fail("up", rc, "cannot write %s", key);
  return CLI_OK;
}

/* Whether child k has exited (and is then marked for a restart). */
static int
child_gone(child *k) {
  int status;
  if (waitpid(k->pid, &status, WNOHANG) != k->pid)
    return 0;
  child_died(k, status);
  return 1;
}

/* Wait up to ms for path to exist, while k (may be NULL) runs. */
static int
wait_file(const char *path, child *k, int ms) {
  for (int t = 0; t < ms / 100 && !stop_flag; t++) {
    if (access(path, R_OK) == 0)
      return 0;
    if (k && k->pid && child_gone(k))
      return -1;
    sleep_ms(100);
  }
  return access(path, R_OK) == 0 ? 0 : -1;
}

/* "host:port", IPv6 in brackets. */
static void
host_port(const char *host, int port, char *out, size_t cap) {
  snprintf(out, cap, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static int
start_hub(up_ctx *u, const char *ca) {
  char path[PATH_MAX + 64], pf[PATH_MAX], listen[96];
  const char *dial = !strcmp(u->listen, "0.0.0.0") ? "127.0.0.1"
                     : !strcmp(u->listen, "::")    ? "::1"
                                                   : u->listen;
  child *k = child_add(u, "relay-hub", "relay-hub");
  if (!k)
    return cli_fail("up", 0, "too many processes");
  snprintf(pf, sizeof pf, "%s/run/relay-hub.port", u->data);
  unlink(pf);
  host_port(u->listen, 0, listen, sizeof listen);
  snprintf(path, sizeof path, "%s/lark-relay", u->bin_dir);
  const char *args[] = {path,      "hub",        "--listen",    listen,  "--ca",
                        ca,        "--host-key", NULL,          "--url", u->url,
                        "--creds", NULL,         "--port-file", pf,      NULL};
  char key[PATH_MAX], creds[PATH_MAX];
  snprintf(key, sizeof key, "%s/relay/hostkey", u->data);
  lark_creds_path(u->data, "relay-hub", creds, sizeof creds);
  args[7] = key;
  args[11] = creds;
  for (size_t i = 0; args[i]; i++)
    child_arg(k, args[i]);
  if (child_start(k) < 0)
    return cli_fail("up", 0, "cannot start the relay hub: %s", strerror(errno));
  if (wait_file(pf, k, 30000) < 0)
    return cli_fail("up", 0, "the relay hub did not start: see %s", k->log);
  FILE *f = fopen(pf, "re");
  int port = 0;
  if (f) {
    if (fscanf(f, "%d", &port) != 1)
      port = 0;
    fclose(f);
  }
  if (port <= 0)
    return cli_fail("up", 0, "the relay hub wrote no port: see %s", k->log);
  /* a restart keeps the port the relays were given */
  host_port(u->listen, port, k->args[3], sizeof k->args[3]);
  host_port(dial, port, u->hub, sizeof u->hub);
  return CLI_OK;
}

/*
 * Domain certificates for every node relay: a certificate missing or
 * older than half its validity is requested again, by running `larkctl
 * cert request` (as admin) into <data>/relay/node-<i>/certs/<domain>;
 * the relay looks at its directory every 10 s. Returns how many failed.
 */
#define CERT_VALID "24h"
#define CERT_RENEW_S (12 * 3600)

static int
request_cert(up_ctx *u, int node, const char *domain) {
  char bin[PATH_MAX + 16], cl[16], name[BUS_NAME_MAX + 1], out[PATH_MAX],
      log[PATH_MAX + 32];
  snprintf(bin, sizeof bin, "%s/larkctl", u->bin_dir);
  snprintf(cl, sizeof cl, "c%d", node);
  snprintf(name, sizeof name, "relay-node-%d-%s", node, domain);
  snprintf(out, sizeof out, "%s/relay/node-%d/certs/%s", u->data, node, domain);
  snprintf(log, sizeof log, "%s/logs/relay-certs.log", u->data);
  const char *argv[] = {bin,      "--data", u->data,    "cert",    "request",
                        "--role", "domain", "--domain", domain,    "--cluster",
                        cl,       "--name", name,       "--valid", CERT_VALID,
                        "--out",  out,      NULL};
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
      dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  close(fd);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int
refresh_certs(up_ctx *u) {
  char path[PATH_MAX + 64];
  int failed = 0;
  time_t now = time(NULL);
  for (int i = 1; i <= u->nodes; i++)
    for (int d = 0; d < u->ndomains; d++) {
      struct stat st;
      snprintf(path, sizeof path, "%s/relay/node-%d/certs/%s-cert.pub", u->data,
               i, u->domains[d]);
      if (stat(path, &st) == 0 && now - st.st_mtime < CERT_RENEW_S)
        continue;
      if (request_cert(u, i, u->domains[d]) < 0)
        failed++;
      else
        printf("larkctl up: domain %s certificate for node-%d: %s\n",
               u->domains[d], i, path);
    }
  fflush(stdout);
  u->certs_checked_ms = mono_ms();
  return failed;
}

static int
start_node_relays(up_ctx *u) {
  char path[PATH_MAX + 64], cl[16], node[32], key[PATH_MAX], certs[PATH_MAX],
      creds[PATH_MAX];
  snprintf(path, sizeof path, "%s/lark-relay", u->bin_dir);
  snprintf(key, sizeof key, "%s/relay/hostkey.pub", u->data);
  for (int i = 1; i <= u->nodes; i++) {
    snprintf(cl, sizeof cl, "c%d", i);
    snprintf(node, sizeof node, "node-%d", i);
    snprintf(certs, sizeof certs, "%s/relay/node-%d/certs", u->data, i);
    snprintf(creds, sizeof creds, "%s/creds/relay-node-%d.nk", u->data, i);
    char name[48];
    snprintf(name, sizeof name, "relay-%s", node);
    child *k = child_add(u, name, name);
    if (!k)
      return cli_fail("up", 0, "too many processes");
    const char *args[] = {path,    "node", "--cluster", cl,    "--node",  node,
                          "--hub", u->hub, "--hub-key", key,   "--certs", certs,
                          "--url", u->url, "--creds",   creds, NULL};
    for (size_t a = 0; args[a]; a++)
      child_arg(k, args[a]);
    if (child_start(k) < 0)
      return cli_fail("up", 0, "cannot start %s: %s", name, strerror(errno));
  }
  return CLI_OK;
}

/*
 * --relay, after the services: the hub (once the signer's SSH CA exists),
 * the domain certificates, then one node relay per node. Appends the new
 * children's names to list.
 */
static int
start_pod_network(up_ctx *u, char *list, size_t cap) {
  static const char *const need[] = {"lark-relay", "lark-signer", "lark-ipam",
                                     LARK_EDGE_BINARY, NULL};
  char ca[PATH_MAX + 64], path[PATH_MAX + 64];
  for (size_t i = 0; need[i]; i++)
    if (!lark_bin_exists(u->bin_dir, need[i]))
      return cli_fail("up", 0, "--relay needs %s next to larkctl (in %s)",
                      need[i], u->bin_dir);
  for (int i = 1; i <= u->nodes; i++) {
    snprintf(path, sizeof path, "%s/relay/node-%d/certs", u->data, i);
    if (lark_mkdirs(path, 0700) < 0)
      return cli_fail("up", 0, "%s", lark_cfg_error());
  }
  int rc = host_key(u);
  if (rc != CLI_OK)
    return rc;
  snprintf(ca, sizeof ca, "%s/views/lark-signer/ca.pub", u->data);
  if (wait_file(ca, NULL, 60000) < 0)
    return cli_fail("up", 0,
                    "the signer made no SSH CA (%s): see %s/logs/"
                    "lark-signer.log",
                    ca, u->data);
  size_t first = u->nkids;
  if ((rc = start_hub(u, ca)) != CLI_OK)
    return rc;
  /* the signer may take a moment to answer after making its CA */
  for (int t = 0; t < 20 && u->ndomains && refresh_certs(u) && !stop_flag; t++)
    sleep_ms(500);
  if ((rc = start_node_relays(u)) != CLI_OK)
    return rc;
  size_t len = strlen(list);
  for (size_t i = first; i < u->nkids; i++)
    len += (size_t)snprintf(list + len, len < cap ? cap - len : 0, ", %s",
                            u->kids[i].name);
  printf("larkctl up: pod network: hub %s (host key %s/relay/hostkey.pub)",
         u->hub, u->data);
  for (int i = 1; i <= u->nodes; i++)
    printf("; node-%d cluster c%d pods %u.%u.%d.0/24", i, i, u->pod_a, u->pod_b,
           i);
  printf("; domain certificates in %s/relay/<node>/certs\n", u->data);
  fflush(stdout);
  return CLI_OK;
}

/* "A.B.0.0/16" into u->pod_a, u->pod_b. */
static int
parse_pod_net(const char *s, up_ctx *u) {
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
parse_args(int argc, char **argv, up_ctx *u) {
  u->listen = "127.0.0.1";
  u->port = 4222;
  u->pod_a = 10;
  u->pod_b = 88;
  int pod_net = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--cluster") || !strcmp(a, "--relay")) {
      *(a[2] == 'c' ? &u->cluster : &u->relay) = 1;
      continue;
    }
    if (i + 1 >= argc)
      return -1;
    char *end;
    long v = strtol(argv[i + 1], &end, 10);
    if (!strcmp(a, "--listen")) {
      u->listen = argv[++i];
      continue;
    }
    if (!strcmp(a, "--domain")) {
      if (u->ndomains == MAX_DOMAINS || !bus_name_valid(argv[i + 1], 40))
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
    else
      return -1;
    i++;
  }
  return (u->ndomains || pod_net) && !u->relay ? -1 : 0;
}

static void
supervise(up_ctx *u) {
  while (!stop_flag) {
    sleep_ms(100);
    reap(u);
    restart_due(u);
    if (u->ndomains && mono_ms() - u->certs_checked_ms > 60000)
      refresh_certs(u);
  }
}

static int
run(up_ctx *u, lark_cli *cli) {
  char services[1024];
  int rc = make_dirs(u, cli->data);
  if (rc == CLI_OK)
    rc = lock_data(u);
  if (rc == CLI_OK && lark_bin_dir(u->bin_dir, sizeof u->bin_dir) < 0)
    rc = cli_fail("up", 0, "%s", lark_cfg_error());
  if (rc == CLI_OK)
    rc = make_creds(u);
  if (rc == CLI_OK)
    rc = start_brokers(u, u->cluster ? 3 : 1);
  if (rc == CLI_OK)
    rc = wait_brokers(u);
  if (rc == CLI_OK)
    rc = write_url(u);
  if (rc == CLI_OK)
    rc = init_streams(u, cli);
  if (rc == CLI_OK)
    rc = start_services(u, services, sizeof services);
  if (rc == CLI_OK && u->relay)
    rc = start_pod_network(u, services, sizeof services);
  if (rc == CLI_OK)
    rc = wait_services(u);
  if (rc != CLI_OK || stop_flag)
    goto out;
  printf("larkbus ready: %s, services: %s; data %s\n", u->url, services,
         u->data);
  fflush(stdout);
  supervise(u);
  printf("larkctl up: stopping\n");
  fflush(stdout);
out:
  stop_all(u);
  return rc;
}

int
cmd_up(int argc, char **argv, lark_cli *cli) {
  up_ctx *u = calloc(1, sizeof *u);
  if (!u)
    return cli_fail("up", 0, "out of memory");
  u->lock_fd = -1;
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
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int rc = run(u, cli);
  if (u->lock_fd >= 0)
    close(u->lock_fd);
  free(u);
  return rc;
}
