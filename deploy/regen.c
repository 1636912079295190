/*
 * regen.c - the registry made real: the hub's accounts and every site's
 * files rendered again from it, and the servers that run here reloaded.
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

int
lark_reload_servers(const char *data, int *count) {
  char run[PATH_MAX], path[PATH_MAX + 64];
  int n = 0;
  int rc = lark_data_path(data, "run", run, sizeof run);
  if (rc < 0)
    return rc;
  for (int i = 1; i <= LARK_MAX_SERVERS; i++) {
    snprintf(path, sizeof path, "%s/lark-%d.pid", run, i);
    pid_t pid = dpl_read_pid(path);
    if (pid <= 0 || !dpl_is_nats_server(pid))
      continue;
    if (kill(pid, SIGHUP) < 0)
      return dpl_fail(-errno, "cannot signal nats-server %d: %s", (int)pid,
                      strerror(errno));
    n++;
  }
  int sites = 0;
  rc = lark_sites_reload(data, &sites);
  if (count)
    *count = n + sites;
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
