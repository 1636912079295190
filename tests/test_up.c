/*
 * test_up.c - the built larkctl ($LARK_BIN_DIR/larkctl): `up` starts the
 * platform on a port the server picks, `init` is idempotent, `status`
 * answers, a second `up` on the same data directory is refused, and
 * SIGINT stops everything, leaving no nats-server behind. Keys survive a
 * second run. `up --device-file` shares one file's robots and cameras
 * among its nodes, each registering its share; a bad file stops `up`
 * before anything starts.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "natsd.h"
#include "wait.h"

typedef struct up_proc {
  pid_t pid;
  int out; /* its stdout */
  char lines[8192];
  size_t len;
} up_proc;

static char larkctl[512];
static pid_t running_up[2]; /* stopped by fini when an assertion fails */

static void
stop_running_up(void) {
  for (int i = 0; i < 2; i++)
    if (running_up[i] > 0) {
      kill(running_up[i], SIGINT);
      waitpid(running_up[i], NULL, 0);
    }
}

static void
find_larkctl(void) {
  const char *dir = getenv("LARK_BIN_DIR");
  cr_assert(dir, "LARK_BIN_DIR is not set (run through ctest)");
  snprintf(larkctl, sizeof larkctl, "%s/larkctl", dir);
  cr_assert_eq(access(larkctl, X_OK), 0, "%s is missing", larkctl);
}

/* Run larkctl --data DIR args...; its stdout (and stderr when merge)
 * into out. */
static int
run2(const char *data, const char *const *args, char *out, size_t cap,
     int merge) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    const char *argv[16] = {larkctl, "--data", data};
    int n = 3;
    for (int i = 0; args[i] && n < 15; i++)
      argv[n++] = args[i];
    argv[n] = NULL;
    dup2(fds[1], 1);
    if (merge)
      dup2(fds[1], 2);
    close(fds[0]);
    execv(larkctl, (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], out + len, cap - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int
run(const char *data, const char *const *args, char *out, size_t cap) {
  return run2(data, args, out, cap, 1);
}

/* larkctl --data DIR up --port 0 [extra...] */
static void
up_start(up_proc *u, const char *data, const char *const *extra) {
  int fds[2];
  memset(u, 0, sizeof *u);
  cr_assert_eq(pipe(fds), 0);
  u->pid = fork();
  if (u->pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    const char *argv[16] = {larkctl, "--data", data, "up", "--port", "0"};
    for (int i = 0; extra && extra[i] && i < 9; i++)
      argv[6 + i] = extra[i];
    execv(larkctl, (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  u->out = fds[0];
  running_up[running_up[0] > 0] = u->pid;
}

/* Read up's stdout until a line holds `want`; 1 when seen. */
static int
up_wait_for(up_proc *u, const char *want, int timeout_ms) {
  int64_t end = lt_now_ms() + timeout_ms;
  while (!strstr(u->lines, want)) {
    int left = (int)(end - lt_now_ms());
    struct pollfd p = {u->out, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) <= 0)
      return 0;
    if (u->len + 1 >= sizeof u->lines)
      u->len = 0;
    ssize_t r = read(u->out, u->lines + u->len, sizeof u->lines - 1 - u->len);
    if (r <= 0)
      return 0;
    u->len += (size_t)r;
    u->lines[u->len] = 0;
  }
  return 1;
}

/* SIGINT, then its exit status (or -1 after timeout_ms). */
static int
up_stop(up_proc *u, int timeout_ms) {
  int status = 0;
  kill(u->pid, SIGINT);
  int64_t end = lt_now_ms() + timeout_ms;
  while (waitpid(u->pid, &status, WNOHANG) == 0) {
    if (lt_now_ms() > end) {
      kill(u->pid, SIGKILL);
      waitpid(u->pid, NULL, 0);
      close(u->out);
      return -1;
    }
    usleep(20000);
  }
  close(u->out);
  for (int i = 0; i < 2; i++)
    if (running_up[i] == u->pid)
      running_up[i] = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static pid_t
server_pid(const char *data) {
  char path[512];
  long pid = 0;
  snprintf(path, sizeof path, "%s/run/lark-1.pid", data);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%ld", &pid) != 1)
      pid = 0;
    fclose(f);
  }
  return (pid_t)pid;
}

static void
slurp(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  cr_assert(f, "%s", path);
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  fclose(f);
}

/* status -o json once: `ready` was printed only when every service
 * answered, so every expected service must be up at once; the exit code
 * must agree with the report. */
static void
check_status(const char *data) {
  static char out[65536];
  const char *const args[] = {"status", "-o", "json", NULL};
  int rc = run2(data, args, out, sizeof out, 0);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert(j, "status output is not JSON: %s", out);
  cr_expect_eq(rc, 0, "a service did not answer right after ready: %s", out);
  json_t *streams = json_object_get(j, "streams");
  cr_assert_eq(json_array_size(streams), 6, "%s", out);
  cr_assert(json_is_integer(json_object_get(j, "node_streams")), "%s", out);
  cr_assert_geq(json_integer_value(json_object_get(j, "node_streams")), 0);
  size_t i;
  json_t *s;
  json_array_foreach(streams, i, s)
      cr_assert(json_is_true(json_object_get(s, "exists")), "%s", out);
  cr_assert_eq(rc == 0, json_is_true(json_object_get(j, "ok")), "%s", out);
  json_t *svcs = json_object_get(j, "services");
  json_array_foreach(svcs, i,
                     s) if (json_is_true(json_object_get(s, "expected")))
      cr_expect_str_eq(json_string_value(json_object_get(s, "state")), "up",
                       "%s", out);
  json_decref(j);
}

/* `node add` on a running platform: the broker reloads and the new node
 * connects at once with its own credentials, and finds its stream. */
static void
add_node(const char *data) {
  static char out[8192];
  char url[512], creds[512];
  const char *const add[] = {"node", "add", "gpu-9", NULL};
  const char *const list[] = {"node", "list", NULL};
  cr_assert_eq(run(data, add, out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "reloaded"), "%s", out);
  cr_assert_eq(run(data, list, out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "gpu-9"), "%s", out);
  snprintf(url, sizeof url, "%s/url", data);
  slurp(url, out, sizeof out);
  out[strcspn(out, "\n")] = 0;
  snprintf(creds, sizeof creds, "%s/creds/gpu-9.nk", data);
  bus_conn_opts o;
  bus_conn *c = NULL;
  bus_conn_opts_init(&o);
  o.url = out;
  o.creds = creds;
  o.inbox_prefix = "_INBOX_gpu-9";
  o.js_wait_ms = 500;
  int rc = -1;
  for (int i = 0; i < 50 && rc < 0; i++)
    if ((rc = bus_conn_open(&c, &o)) < 0)
      usleep(100000);
  cr_assert_eq(rc, 0, "gpu-9 after reload: %s", bus_last_error());
  /* its stream was made by node add: the node opens its slice at once,
   * before the scheduler has heard of it */
  bus_slice sl;
  bus_consumer *k = NULL;
  cr_assert_eq(bus_slice_init(&sl, "gpu-9"), 0);
  rc = bus_consumer_open(c, &sl.opts, &k);
  cr_assert_eq(rc, 0, "gpu-9's slice: %s %s", bus_err_name(rc),
               bus_last_error());
  bus_consumer_close(k);
  bus_conn_close(c);
}

Test(up, runs_inits_refuses_twice_and_stops_clean, .timeout = 240,
     .fini = stop_running_up) {
  static char out[65536], users1[8192], users2[8192];
  char data[256], url[512];
  up_proc u, u2;
  find_larkctl();
  lt_tmpdir(data, sizeof data, "up");
  up_start(&u, data, NULL);
  cr_assert(up_wait_for(&u, "ready", 90000), "no ready line: %s", u.lines);
  cr_assert(strstr(u.lines, "larkbus ready: nats://127.0.0.1:"), "%s", u.lines);
  check_status(data);
  snprintf(url, sizeof url, "%s/url", data);
  slurp(url, out, sizeof out);
  cr_assert(!strncmp(out, "nats://127.0.0.1:", 17), "%s", out);
  pid_t server = server_pid(data);
  cr_assert_gt(server, 0);
  cr_assert_eq(kill(server, 0), 0);

  const char *const init[] = {"init", NULL};
  cr_assert_eq(run(data, init, out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "LARK_EVENTS"), "%s", out);
  cr_assert_null(strstr(out, "created"), "%s", out);
  cr_assert_null(strstr(out, "updated"), "%s", out);
  const char *const init_json[] = {"init", "-o", "json", NULL};
  cr_assert_eq(run(data, init_json, out, sizeof out), 0, "%s", out);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert(j && json_array_size(j) == 6, "%s", out);
  json_decref(j);

  check_status(data);
  add_node(data);

  /* One `up` per data directory. */
  const char *const again[] = {"up", "--port", "0", NULL};
  cr_assert_eq(run(data, again, out, sizeof out), 1, "%s", out);
  cr_assert(strstr(out, "already running"), "%s", out);

  cr_assert_eq(up_stop(&u, 60000), 0, "up did not stop cleanly: %s", u.lines);
  cr_assert_eq(kill(server, 0), -1, "nats-server %d is left", (int)server);
  cr_assert_eq(errno, ESRCH);

  /* A second run keeps every key. */
  snprintf(url, sizeof url, "%s/creds/users", data);
  slurp(url, users1, sizeof users1);
  up_start(&u2, data, NULL);
  cr_assert(up_wait_for(&u2, "ready", 90000), "second run: %s", u2.lines);
  slurp(url, users2, sizeof users2);
  cr_assert_str_eq(users1, users2);
  server = server_pid(data);
  cr_assert_eq(up_stop(&u2, 60000), 0, "%s", u2.lines);
  cr_assert_eq(kill(server, 0), -1);
  lt_rmtree(data);
}

/* The names of the devices node registered, as the scheduler describes
 * it ("r1,r3"), or "" until it has. */
static const char *
node_devices(const char *data, const char *node) {
  static char out[65536], names[256];
  const char *const args[] = {"describe", "node", node, "-o", "json", NULL};
  names[0] = 0;
  if (run2(data, args, out, sizeof out, 0) != 0)
    return names;
  json_t *j = json_loads(out, 0, NULL), *d;
  json_t *devs = json_object_get(
      json_object_get(json_object_get(json_object_get(j, "object"), "resource"),
                      "spec"),
      "devices");
  size_t i;
  json_array_foreach(devs, i, d) {
    size_t n = strlen(names);
    snprintf(names + n, sizeof names - n, "%s%s", n ? "," : "",
             json_string_value(json_object_get(d, "name")));
  }
  json_decref(j);
  return names;
}

Test(up, device_file_is_shared_among_the_nodes, .timeout = 180,
     .fini = stop_running_up) {
  static char out[8192];
  char data[256], file[512], bad[512], url[512];
  find_larkctl();
  lt_tmpdir(data, sizeof data, "updev");
  snprintf(file, sizeof file, "%s/devices.yaml", data);
  snprintf(bad, sizeof bad, "%s/bad.yaml", data);
  FILE *f = fopen(file, "w");
  cr_assert(f);
  fputs("cameras:\n"
        "  - {name: c1, source: pattern, width: 64, height: 48}\n"
        "robots:\n"
        "  - {name: r1, kind: ros, launch: [sleep, '100']}\n"
        "  - {name: r2, kind: ros2, launch: [sleep, '100'], rosDomainId: 3}\n"
        "  - {name: r3, kind: ros, launch: [sleep, '100']}\n",
        f);
  fclose(f);
  f = fopen(bad, "w");
  cr_assert(f);
  fputs("robots:\n  - {name: r1, kind: ros3, launch: [x]}\n", f);
  fclose(f);

  /* a bad file: refused with its line before anything starts */
  const char *const refused[] = {"up", "--port",        "0", "--nodes",
                                 "2",  "--device-file", bad, NULL};
  cr_expect_eq(run(data, refused, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "bad.yaml: line 2: robot r1: kind must be ros or "
                        "ros2"),
            "%s", out);
  snprintf(url, sizeof url, "%s/url", data);
  cr_expect_neq(access(url, F_OK), 0, "a broker was started");

  /* robots first, then cameras: r1 r2 r3 c1; node 1 of 2 takes r1 r3 */
  up_proc u;
  const char *const extra[] = {"--nodes", "2", "--device-file", file, NULL};
  up_start(&u, data, extra);
  cr_assert(up_wait_for(&u, "ready", 90000), "no ready line: %s", u.lines);
  cr_expect(strstr(u.lines, "3 robots and 1 camera"), "%s", u.lines);
  const char *want[2] = {"r1,r3", "r2,c1"}, *nodes[2] = {"node-1", "node-2"};
  for (int n = 0; n < 2; n++) {
    const char *got = "";
    for (int w = 0; w < 100 && strcmp(got, want[n]); w++, usleep(200000))
      got = node_devices(data, nodes[n]);
    cr_expect_str_eq(got, want[n], "%s registered %s", nodes[n], got);
  }
  cr_assert_eq(up_stop(&u, 60000), 0, "%s", u.lines);
  lt_rmtree(data);
}

/* --relay runs the pod network, which needs root; without root it says
 * so before touching anything. The pod network's flags need --relay. The
 * pod network itself is tested end to end in test_pod_network.c. */
Test(up, relay_needs_root_and_its_flags_need_relay, .timeout = 30) {
  static char out[8192];
  char data[256];
  find_larkctl();
  lt_tmpdir(data, sizeof data, "uprelay");
  const char *const domain_alone[] = {"up", "--domain", "d1", NULL};
  cr_assert_eq(run(data, domain_alone, out, sizeof out), 2, "%s", out);
  cr_assert(strstr(out, "--relay"), "%s", out);
  const char *const cidr_bad[] = {"up", "--relay", "--pod-cidr", "10.88.1.0/24",
                                  NULL};
  cr_assert_eq(run(data, cidr_bad, out, sizeof out), 2, "%s", out);

  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
      _exit(126);
    execl(larkctl, larkctl, "--data", data, "up", "--relay", "--port", "0",
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s",
            status, out);
  cr_assert(strstr(out, "--relay needs root"), "%s", out);
  char lock[300];
  snprintf(lock, sizeof lock, "%s/run/up.lock", data);
  cr_assert_neq(access(lock, F_OK), 0, "it went on after refusing");
  lt_rmtree(data);
}
