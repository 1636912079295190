/*
 * up.c - the platform on one machine, as `larkctl up` brings it up: its
 * data directory, the lock that allows one `up` per directory, the
 * credentials every part needs, and the supervision loop. The broker
 * servers are started by brokers.c, the services and edges by
 * services.c, the pod network by relays.c; cli/cmd_up.c calls them in
 * order and prints the `ready` line.
 *
 * Invariants:
 * - One `up` per data directory: an flock on <data>/run/up.lock, held for
 *   the life of the process and released by the kernel however it ends,
 *   so a stale lock file never blocks a new run.
 * - Credentials are made once and never rotated (creds.c); the accounts
 *   file is rendered again from the registry at every start.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "deploy-int.h"

void
lark_up_init(lark_up *u) {
  memset(u, 0, sizeof *u);
  u->listen = "127.0.0.1";
  u->port = 4222;
  u->pod_a = 10;
  u->pod_b = 88;
  u->lock_fd = -1;
  u->sup.data = u->data;
}

static int
make_dirs(lark_up *u, const char *data) {
  static const char *const subs[] = {"creds", "broker", "run", "logs",
                                     "views", "store",  NULL};
  char path[PATH_MAX + 16], abs[PATH_MAX];
  if (lark_mkdirs(data, 0700) < 0 || !realpath(data, abs))
    return dpl_fail(BUS_EINVAL, "cannot use data directory %s: %s", data,
                    lark_cfg_error()[0] ? lark_cfg_error() : strerror(errno));
  if (strlen(abs) >= sizeof u->data)
    return dpl_fail(BUS_EINVAL, "data directory path too long: %s", abs);
  memcpy(u->data, abs, strlen(abs) + 1);
  for (size_t i = 0; subs[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", u->data, subs[i]);
    int rc = lark_mkdirs(path, 0700);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int
lock_data(lark_up *u) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/run/up.lock", u->data);
  u->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (u->lock_fd < 0)
    return dpl_fail(BUS_EINVAL, "cannot open %s: %s", path, strerror(errno));
  if (flock(u->lock_fd, LOCK_EX | LOCK_NB) < 0) {
    char pid[32] = "?";
    ssize_t n = pread(u->lock_fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 1] = 0;
    pid[strcspn(pid, "\n")] = 0;
    return dpl_fail(BUS_EINVAL,
                    "already running for %s (pid %s): stop it first, or "
                    "use another --data",
                    u->data, pid);
  }
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
  if (ftruncate(u->lock_fd, 0) < 0 || pwrite(u->lock_fd, buf, (size_t)n, 0) < 0)
    return dpl_fail(BUS_EINVAL, "cannot write %s: %s", path, strerror(errno));
  return 0;
}

int
lark_up_prepare(lark_up *u, const char *data) {
  int rc = make_dirs(u, data);
  if (rc == 0)
    rc = lock_data(u);
  if (rc == 0)
    rc = lark_bin_dir(u->bin_dir, sizeof u->bin_dir);
  return rc;
}

/* The user's own principal: $USER made into a valid name, else "user"
 * (also for a $USER that names the admin or the gateway principal). */
static void
user_name(char *out, size_t cap) {
  const char *u = getenv("USER");
  size_t n = 0;
  for (; u && *u && n + 1 < cap && n < BUS_NAME_MAX; u++) {
    char c = *u >= 'A' && *u <= 'Z' ? (char)(*u - 'A' + 'a') : *u;
    out[n++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
  }
  out[n] = 0;
  if (!bus_name_valid(out, BUS_NAME_MAX) || !strcmp(out, "admin") ||
      !strcmp(out, LARK_GATEWAY_NAME))
    snprintf(out, cap, "user");
}

static int
ensure_one(lark_up *u, const char *name, lark_role role, int *made) {
  int created = 0;
  if (lark_creds_ensure(u->data, name, role, NULL, &created) < 0)
    return dpl_fail(BUS_EINVAL, "credentials for %s: %s", name,
                    lark_cfg_error());
  *made += created;
  return 0;
}

int
lark_up_creds(lark_up *u, int *made_out, char *user, size_t cap) {
  char node[32];
  int made = 0, rc = ensure_one(u, "admin", LARK_ROLE_ADMIN, &made);
  for (size_t i = 0; rc == 0 && lark_service_names[i]; i++)
    rc = ensure_one(u, lark_service_names[i], LARK_ROLE_SERVICE, &made);
  if (rc == 0)
    rc = ensure_one(u, LARK_GATEWAY_NAME, LARK_ROLE_GATEWAY, &made);
  user_name(user, cap);
  snprintf(u->user, sizeof u->user, "%s", user);
  if (rc == 0)
    rc = ensure_one(u, user, LARK_ROLE_USER, &made);
  for (int i = 1; rc == 0 && i <= u->nodes; i++) {
    snprintf(node, sizeof node, "node-%d", i);
    rc = ensure_one(u, node, LARK_ROLE_NODE, &made);
  }
  if (u->relay && rc == 0)
    rc = ensure_one(u, "relay-hub", LARK_ROLE_RELAY_HUB, &made);
  for (int i = 1; u->relay && rc == 0 && i <= u->nodes; i++) {
    char cl[16];
    int created = 0;
    snprintf(node, sizeof node, "relay-node-%d", i);
    snprintf(cl, sizeof cl, "c%d", i); /* as start_node_relays */
    if (lark_creds_ensure_relay(u->data, node, cl, NULL, &created) < 0)
      rc = dpl_fail(BUS_EINVAL, "credentials for %s: %s", node,
                    lark_cfg_error());
    made += created;
  }
  *made_out = made;
  return rc < 0 ? rc : lark_regen_accounts(u->data);
}

void
lark_up_supervise(lark_up *u) {
  while (!lark_sup_stopping()) {
    bus_sleep_ms(100);
    lark_sup_reap(&u->sup);
    lark_sup_restart_due(&u->sup);
    if (u->ndomains && bus_mono_ms() - u->certs_checked_ms > 60000)
      lark_up_refresh_certs(u);
  }
}

void
lark_up_stop(lark_up *u) {
  lark_sup_stop_all(&u->sup);
  if (u->lock_fd >= 0)
    close(u->lock_fd);
  u->lock_fd = -1;
}
