/*
 * regen.c - the registry made real: the hub's accounts and every site's
 * files rendered again from it, and the servers that run here reloaded
 * and waited for until each says it applied the reload.
 *
 * This sits above accounts.c (the accounts text) and sites.c (a site's
 * directory): a change of the registry (a node added, rotated, deleted;
 * a site added) goes through here, so the hub's users, its site users
 * and the sites' own accounts are always made from one reading of it.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy-int.h"

int
lark_regen_accounts(const char *data) {
  char dir[PATH_MAX], path[PATH_MAX];
  lark_principal *p = NULL;
  size_t n = 0;
  int rc = lark_data_path(data, "broker", dir, sizeof dir);
  if (rc < 0 || (rc = lark_mkdirs(dir, 0700)) < 0)
    return rc;
  if (snprintf(path, sizeof path, "%s/accounts.conf", dir) >= (int)sizeof path)
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
  rc = lark_creds_load(data, &p, &n);
  if (rc == 0)
    rc = lark_sites_mark(data, p, n);
  if (rc == 0)
    rc = lark_render_accounts(p, n, path);
  if (rc == 0) /* the sites' accounts and their leaf users' nodes agree */
    rc = lark_sites_render(data, p, n);
  free(p);
  return rc;
}

/* ------------------------------------------------------------ reload */

/*
 * A reload is over when the server says so: nats-server logs "Reloaded
 * server configuration" once it has applied the new configuration (its
 * users and accounts), or "Failed to reload server configuration" and
 * keeps the old one. Until then a new connection may be refused even with
 * credentials the reload keeps (nats-server 2.15 was seen refusing the
 * admin's own key), so a caller that goes on to connect must not return
 * before it. The servers read are those `larkctl up` runs, whose output
 * it keeps in <data>/logs; one whose log is not there is signalled only.
 */
#define RELOAD_WAIT_MS 30000

typedef struct reloading {
  pid_t pid;
  off_t from; /* the log's size before the signal; -1: no log to read */
  int done;
  char log[PATH_MAX + 2 * BUS_NAME_MAX];
} reloading;

typedef struct reload_set {
  reloading *v;
  size_t n, cap;
} reload_set;

/* The server whose pid file is pid_path and whose output is log, if a
 * nats-server runs there. */
static int
add_server(reload_set *s, const char *pid_path, const char *log) {
  pid_t pid = dpl_read_pid(pid_path);
  if (pid <= 0 || !dpl_is_nats_server(pid))
    return 0;
  if (bus_grow(&s->v, s->n, &s->cap, sizeof *s->v, 4))
    return dpl_fail(-ENOMEM, "out of memory");
  reloading *r = &s->v[s->n++];
  memset(r, 0, sizeof *r);
  r->pid = pid;
  snprintf(r->log, sizeof r->log, "%s", log);
  return 0;
}

/* The hub's servers (<data>/run/lark-<i>.pid, logs/nats-server-<i>.log)
 * and the local sites' leaf servers (sites/<site>/run/leaf-<site>.pid,
 * logs/leaf-<site>.log). */
static int
find_servers(const char *data, reload_set *s) {
  char pid[PATH_MAX + 2 * BUS_NAME_MAX], log[PATH_MAX + 2 * BUS_NAME_MAX];
  char(*sites)[BUS_NAME_MAX + 1] = NULL;
  size_t ns = 0;
  int rc = 0;
  for (int i = 1; rc == 0 && i <= LARK_MAX_SERVERS; i++) {
    snprintf(pid, sizeof pid, "%s/run/lark-%d.pid", data, i);
    snprintf(log, sizeof log, "%s/logs/nats-server-%d.log", data, i);
    rc = add_server(s, pid, log);
  }
  if (rc == 0)
    rc = lark_sites_list(data, &sites, &ns);
  for (size_t i = 0; rc == 0 && i < ns; i++) {
    snprintf(pid, sizeof pid, "%s/sites/%s/run/leaf-%s.pid", data, sites[i],
             sites[i]);
    snprintf(log, sizeof log, "%s/logs/leaf-%s.log", data, sites[i]);
    rc = add_server(s, pid, log);
  }
  free(sites);
  return rc;
}

/* What r's log says since the signal: 1 reloaded, 0 not yet, or the
 * failure (the server's line in the error). */
static int
log_says(const reloading *r) {
  FILE *f = fopen(r->log, "re");
  struct stat st;
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  if (!f)
    return 0;
  off_t from = fstat(fileno(f), &st) == 0 && st.st_size < r->from
                   ? 0 /* made anew (the server restarted) */
                   : r->from;
  if (fseeko(f, from, SEEK_SET) == 0)
    while (rc == 0 && getline(&line, &cap, f) > 0) {
      line[strcspn(line, "\n")] = 0;
      if (strstr(line, "Reloaded server configuration"))
        rc = 1;
      else if (strstr(line, "Failed to reload server configuration"))
        rc = dpl_fail(BUS_EINVAL, "nats-server %d did not reload: %s",
                      (int)r->pid, line);
    }
  free(line);
  fclose(f);
  return rc;
}

/* Every server of s signalled, then each waited for until it says it
 * has reloaded (or failed to), is gone, or RELOAD_WAIT_MS passed. */
static int
reload_all(reload_set *s) {
  struct stat st;
  for (size_t i = 0; i < s->n; i++) {
    reloading *r = &s->v[i];
    r->from = stat(r->log, &st) == 0 ? st.st_size : -1;
    r->done = r->from < 0; /* no log to read: signalled only */
    if (kill(r->pid, SIGHUP) < 0)
      return dpl_fail(-errno, "cannot signal nats-server %d: %s", (int)r->pid,
                      strerror(errno));
  }
  for (int64_t end = bus_mono_ms() + RELOAD_WAIT_MS;; bus_sleep_ms(10)) {
    const reloading *late = NULL;
    for (size_t i = 0; i < s->n; i++) {
      reloading *r = &s->v[i];
      int rc = r->done ? 1 : log_says(r);
      if (rc < 0)
        return rc;
      if (rc == 0 && kill(r->pid, 0) < 0)
        return dpl_fail(BUS_EINVAL, "nats-server %d ended while reloading",
                        (int)r->pid);
      if (!(r->done = rc) && !late)
        late = r;
    }
    if (!late)
      return 0;
    if (bus_mono_ms() > end)
      return dpl_fail(BUS_ETIMEOUT,
                      "nats-server %d did not say within %d s that it "
                      "reloaded (its log: %s)",
                      (int)late->pid, RELOAD_WAIT_MS / 1000, late->log);
  }
}

int
lark_reload_servers(const char *data, int *count) {
  reload_set s = {0};
  int rc = find_servers(data, &s);
  if (rc == 0)
    rc = reload_all(&s);
  if (count)
    *count = rc == 0 ? (int)s.n : 0;
  free(s.v);
  return rc;
}

/* A site's members and settings saved (sites.c), then everything made
 * again from the registry. */
int
lark_site_add(const char *data, const char *site, const char *const *nodes,
              size_t n, const lark_site_opts *o, int *added_out) {
  int rc = dpl_site_put(data, site, nodes, n, o, added_out);
  return rc < 0 ? rc : lark_regen_accounts(data);
}
