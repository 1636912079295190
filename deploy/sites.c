/*
 * sites.c - edge sites: leaf-node servers at the edge that dial the hub,
 * and the nodes behind them (deploy.h, "sites", lays out the directory).
 *
 * Invariants:
 * - What a site may do is rendered, never written by hand: the hub's user
 *   of role site (accounts.c, from the policy's site rows) and the site's
 *   own accounts file both come from the registry and the site's member
 *   list, in one lark_regen_accounts, so they cannot disagree. A node the
 *   registry no longer holds drops out of both, and its seed is removed
 *   from the site's directory.
 * - A node belongs to one site at most: lark_site_add refuses a node that
 *   another site lists.
 * - The site's seed and its nodes' seeds are written mode 0600 and wiped
 *   from memory once written; tls/ is the caller's (cli/cmd_site.c asks
 *   the signer for the certificate) and is never rewritten here.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"

typedef char name_t[BUS_NAME_MAX + 1];

/* A site's settings, as its `site` file holds them. */
typedef struct site_cfg {
  char hub[512], listen[128], dir[PATH_MAX];
  int port;
} site_cfg;

void
lark_site_opts_init(lark_site_opts *o) {
  memset(o, 0, sizeof *o);
}

int
lark_site_path(const char *data, const char *site, const char *sub, char *out,
               size_t cap) {
  int n = snprintf(out, cap, "%s/sites/%s%s%s", data, site, sub ? "/" : "",
                   sub ? sub : "");
  if (n < 0 || (size_t)n >= cap)
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
  return 0;
}

int
lark_hub_leaf_tls(const char *data, char cert[PATH_MAX], char key[PATH_MAX],
                  char ca[PATH_MAX]) {
  snprintf(cert, PATH_MAX, "%s/tls/leaf-hub/cert.pem", data);
  snprintf(key, PATH_MAX, "%s/tls/leaf-hub/key.pem", data);
  snprintf(ca, PATH_MAX, "%s/tls/leaf-hub/ca.pem", data);
  return !access(cert, R_OK) && !access(key, R_OK) && !access(ca, R_OK);
}

int
lark_hub_leaf_port(const char *data, int make) {
  return lark_hub_leaf_port_of(data, 0, make);
}

int
lark_hub_leaf_urls(const char *data, const char *host, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < LARK_MAX_SERVERS; i++) {
    int port = lark_hub_leaf_port_of(data, i, 0);
    if (port <= 0)
      break;
    int n = snprintf(out + len, cap - len, "%snats-leaf://%s:%d",
                     len ? "," : "", host, port);
    if (n < 0 || (size_t)n >= cap - len)
      return dpl_fail(BUS_EINVAL, "too many leaf listeners for %zu bytes", cap);
    len += (size_t)n;
  }
  return len > 0;
}

int
lark_hub_leaf_port_of(const char *data, int idx, int make) {
  char path[PATH_MAX], buf[32];
  if (idx == 0)
    snprintf(path, sizeof path, "%s/broker/leaf.port", data);
  else
    snprintf(path, sizeof path, "%s/broker/leaf-%d.port", data, idx + 1);
  int port = lark_read_text(path, buf, sizeof buf) > 0 ? atoi(buf) : 0;
  if (port > 0 || !make)
    return port > 0 ? port : 0;
  if ((port = lark_free_port()) <= 0)
    return dpl_fail(BUS_EINVAL, "no free port for the leaf listener");
  int n = snprintf(buf, sizeof buf, "%d\n", port);
  int rc = dpl_write_atomic(path, buf, (size_t)n);
  return rc < 0 ? rc : port;
}

/* ---------------------------------------------------------- settings */

static int
cfg_load(const char *data, const char *site, site_cfg *c) {
  char path[PATH_MAX], *text = NULL, *save = NULL;
  memset(c, 0, sizeof *c);
  int rc = lark_site_path(data, site, "site", path, sizeof path);
  if (rc < 0 || (rc = dpl_read_all(path, &text, NULL)) < 0)
    return rc;
  for (char *l = strtok_r(text, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    char *v = strchr(l, ' ');
    if (!v)
      continue;
    *v++ = 0;
    if (!strcmp(l, "hub"))
      snprintf(c->hub, sizeof c->hub, "%s", v);
    else if (!strcmp(l, "listen"))
      snprintf(c->listen, sizeof c->listen, "%s", v);
    else if (!strcmp(l, "dir"))
      snprintf(c->dir, sizeof c->dir, "%s", v);
    else if (!strcmp(l, "port"))
      c->port = atoi(v);
  }
  free(text);
  if (!c->hub[0] || !c->listen[0] || !c->dir[0])
    return dpl_fail(BUS_EMALFORMED, "%s: needs hub, listen and dir", path);
  return 0;
}

static int
cfg_save(const char *data, const char *site, const site_cfg *c) {
  char path[PATH_MAX], text[PATH_MAX + 1024];
  int rc = lark_site_path(data, site, "site", path, sizeof path);
  if (rc < 0)
    return rc;
  int n = snprintf(text, sizeof text, "hub %s\nlisten %s\nport %d\ndir %s\n",
                   c->hub, c->listen, c->port, c->dir);
  return dpl_write_atomic(path, text, (size_t)n);
}

int
lark_site_client_url(const char *data, const char *site, char *out,
                     size_t cap) {
  site_cfg c;
  int rc = cfg_load(data, site, &c);
  if (rc < 0)
    return rc;
  if (c.port <= 0)
    return dpl_fail(BUS_EINVAL, "site %s has no fixed port", site);
  snprintf(out, cap, "nats://%s:%d", c.listen, c.port);
  return 0;
}

/* New settings: o over what the site had (or the defaults). */
static int
cfg_merge(const char *data, const char *site, const lark_site_opts *o,
          site_cfg *c) {
  if (cfg_load(data, site, c) < 0) {
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1");
    c->port = -1;
    lark_site_path(data, site, NULL, c->dir, sizeof c->dir);
  }
  const char *v[] = {o->hub_url, o->listen, o->dir};
  for (size_t i = 0; i < 3; i++)
    if (v[i] && (strpbrk(v[i], "\"\\\r\n") || !*v[i]))
      return dpl_fail(BUS_EINVAL, "bad site setting '%s'", v[i]);
  if (o->hub_url)
    snprintf(c->hub, sizeof c->hub, "%s", o->hub_url);
  if (o->listen)
    snprintf(c->listen, sizeof c->listen, "%s", o->listen);
  if (o->dir)
    snprintf(c->dir, sizeof c->dir, "%s", o->dir);
  if (o->port)
    c->port = o->port;
  if (!c->hub[0])
    return dpl_fail(BUS_EINVAL, "site %s: the hub's leaf URL is required",
                    site);
  return 0;
}

/* ---------------------------------------------------------- members */

/* The names a site lists (its `nodes` file); *out malloc'd. */
static int
members_load(const char *data, const char *site, name_t **out, size_t *n) {
  char path[PATH_MAX], *text = NULL, *save = NULL;
  *out = NULL;
  *n = 0;
  int rc = lark_site_path(data, site, "nodes", path, sizeof path);
  if (rc < 0)
    return rc;
  if ((rc = dpl_read_all(path, &text, NULL)) == -ENOENT)
    return 0;
  if (rc < 0)
    return dpl_fail(rc, "cannot read %s: %s", path, strerror(-rc));
  size_t cap = 0;
  for (char *l = strtok_r(text, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    if (!bus_name_valid(l, BUS_NAME_MAX))
      continue;
    if (*n == cap) {
      name_t *v = realloc(*out, (cap = cap ? 2 * cap : 16) * sizeof *v);
      if (!v) {
        rc = -ENOMEM;
        break;
      }
      *out = v;
    }
    snprintf((*out)[(*n)++], sizeof(name_t), "%s", l);
  }
  free(text);
  return rc == -ENOMEM ? rc : 0;
}

static int
members_save(const char *data, const char *site, name_t *v, size_t n) {
  char path[PATH_MAX];
  sbuf b = {0};
  int rc = lark_site_path(data, site, "nodes", path, sizeof path);
  for (size_t i = 0; i < n; i++)
    dpl_sb_printf(&b, "%s\n", v[i]);
  if (rc == 0)
    rc = b.oom ? -ENOMEM : dpl_write_atomic(path, b.p ? b.p : "", b.len);
  free(b.p);
  return rc;
}

static int
has_name(name_t *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i], name))
      return 1;
  return 0;
}

/* The site other than site that lists node, into out; 1 if one does. */
static int
other_site_of(const char *data, const char *site, const char *node,
              name_t out) {
  name_t *sites = NULL, *m = NULL;
  size_t ns = 0, nm = 0;
  int found = 0;
  if (lark_sites_list(data, &sites, &ns) < 0)
    return 0;
  for (size_t i = 0; i < ns && !found; i++) {
    if (!strcmp(sites[i], site) || members_load(data, sites[i], &m, &nm) < 0)
      continue;
    if ((found = has_name(m, nm, node)))
      snprintf(out, sizeof(name_t), "%s", sites[i]);
    free(m);
  }
  free(sites);
  return found;
}

static int
by_name(const void *a, const void *b) {
  return strcmp(a, b);
}

int
lark_sites_list(const char *data, name_t **out, size_t *n) {
  char dir[PATH_MAX], path[PATH_MAX + 320];
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  snprintf(dir, sizeof dir, "%s/sites", data);
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 0 : dpl_fail(-errno, "cannot read %s", dir);
  for (struct dirent *e; (e = readdir(d));) {
    snprintf(path, sizeof path, "%s/%s/site", dir, e->d_name);
    if (!bus_name_valid(e->d_name, BUS_NAME_MAX) || access(path, F_OK))
      continue;
    if (*n == cap) {
      name_t *v = realloc(*out, (cap = cap ? 2 * cap : 8) * sizeof *v);
      if (!v) {
        closedir(d);
        return -ENOMEM;
      }
      *out = v;
    }
    memcpy((*out)[(*n)++], e->d_name, strlen(e->d_name) + 1);
  }
  closedir(d);
  if (*n)
    qsort(*out, *n, sizeof **out, by_name);
  return 0;
}

size_t
lark_site_nodes(const char *data, const char *site, const lark_principal *p,
                size_t n, name_t *names, size_t cap) {
  name_t *m = NULL;
  size_t nm = 0, k = 0;
  if (members_load(data, site, &m, &nm) < 0)
    return 0;
  for (size_t i = 0; i < nm; i++)
    for (size_t j = 0; j < n; j++)
      if (p[j].role == LARK_ROLE_NODE && !strcmp(p[j].name, m[i])) {
        if (k < cap)
          snprintf(names[k], sizeof(name_t), "%s", m[i]);
        k++;
        break;
      }
  free(m);
  return k;
}

int
lark_sites_mark(const char *data, lark_principal *p, size_t n) {
  name_t *sites = NULL, *m = NULL;
  size_t ns = 0, nm = 0;
  int rc = lark_sites_list(data, &sites, &ns);
  for (size_t i = 0; i < n; i++)
    p[i].site[0] = 0;
  for (size_t s = 0; rc == 0 && s < ns; s++) {
    if ((rc = members_load(data, sites[s], &m, &nm)) < 0)
      break;
    for (size_t i = 0; i < n; i++)
      if (p[i].role == LARK_ROLE_NODE && has_name(m, nm, p[i].name))
        snprintf(p[i].site, sizeof p[i].site, "%s", sites[s]);
    free(m);
  }
  free(sites);
  return rc;
}

/* ------------------------------------------------------------- add */

/* node into site's member list (made a node principal when missing);
 * *added is raised when it was not there. */
static int
add_member(const char *data, const char *site, name_t **m, size_t *nm,
           const char *node, int *added) {
  name_t other;
  int rc = lark_creds_ensure(data, node, LARK_ROLE_NODE, NULL, NULL);
  if (rc < 0)
    return rc;
  if (has_name(*m, *nm, node))
    return 0;
  if (other_site_of(data, site, node, other))
    return dpl_fail(BUS_EEXISTS, "node %s is in site %s already", node, other);
  name_t *v = realloc(*m, (*nm + 1) * sizeof *v);
  if (!v)
    return -ENOMEM;
  *m = v;
  snprintf(v[(*nm)++], sizeof(name_t), "%s", node);
  (*added)++;
  return 0;
}

int
dpl_site_put(const char *data, const char *site, const char *const *nodes,
             size_t n, const lark_site_opts *o, int *added_out) {
  char dir[PATH_MAX];
  site_cfg c;
  name_t *m = NULL;
  size_t nm = 0;
  int added = 0;
  if (!bus_name_valid(site, BUS_NAME_MAX))
    return dpl_fail(BUS_ENAME, "invalid site name '%s': use a-z, 0-9 and '-'",
                    site);
  for (size_t i = 0; i < n; i++)
    if (!bus_name_valid(nodes[i], BUS_NAME_MAX))
      return dpl_fail(BUS_ENAME, "invalid node name '%s'", nodes[i]);
  int rc = lark_site_path(data, site, NULL, dir, sizeof dir);
  if (rc < 0 || (rc = cfg_merge(data, site, o, &c)) < 0 ||
      (rc = lark_mkdirs(dir, 0700)) < 0 ||
      (rc = lark_creds_ensure(data, site, LARK_ROLE_SITE, NULL, NULL)) < 0 ||
      (rc = members_load(data, site, &m, &nm)) < 0)
    return rc;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = add_member(data, site, &m, &nm, nodes[i], &added);
  if (rc == 0)
    rc = members_save(data, site, m, nm);
  if (rc == 0)
    rc = cfg_save(data, site, &c);
  free(m);
  if (added_out)
    *added_out = added;
  return rc;
}

int
lark_site_forget(const char *data, const char *node, char *site, size_t cap) {
  name_t *sites = NULL, *m = NULL;
  size_t ns = 0, nm = 0;
  int rc = lark_sites_list(data, &sites, &ns), left = 0;
  if (site && cap)
    site[0] = 0;
  for (size_t i = 0; rc == 0 && i < ns; i++) {
    if ((rc = members_load(data, sites[i], &m, &nm)) < 0)
      break;
    size_t k = 0;
    for (size_t j = 0; j < nm; j++)
      if (strcmp(m[j], node))
        memmove(m[k++], m[j], sizeof(name_t));
    if (k < nm) {
      rc = members_save(data, sites[i], m, k);
      left = 1;
      if (site && cap)
        snprintf(site, cap, "%s", sites[i]);
    }
    free(m);
    m = NULL;
  }
  free(sites);
  return rc < 0 ? rc : left;
}

/* ---------------------------------------------------------- render */

/* node's seed from the registry's creds/ into the site's creds/ (0600). */
static int
copy_seed(const char *data, const char *site, const char *node) {
  char from[PATH_MAX], to[PATH_MAX], seed[BUS_NKEY_SEED_LEN + 1];
  int rc = lark_creds_path(data, node, from, sizeof from);
  if (rc < 0 || (rc = lark_site_path(data, site, "creds", to, sizeof to)) < 0)
    return rc;
  if (strlen(to) + strlen(node) + 5 >= sizeof to)
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
  strcat(strcat(strcat(to, "/"), node), ".nk");
  if ((rc = dpl_seed_read(from, seed)) == 0 &&
      (rc = bus_nkey_write(to, seed)) < 0)
    dpl_fail(rc, "cannot write %s: %s", to, bus_last_error());
  sodium_memzero(seed, sizeof seed);
  return rc;
}

/* The site's creds/: a seed for each of its nodes and nothing else (a
 * node that left the site, or the registry, loses its file here). */
static int
render_seeds(const char *data, const char *site, name_t *v, size_t n) {
  char dir[PATH_MAX], path[PATH_MAX + 320];
  int rc = lark_site_path(data, site, "creds", dir, sizeof dir);
  if (rc < 0 || (rc = lark_mkdirs(dir, 0700)) < 0)
    return rc;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = copy_seed(data, site, v[i]);
  DIR *d = opendir(dir);
  for (struct dirent *e; rc == 0 && d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".nk"))
      continue;
    e->d_name[len - 3] = 0;
    if (has_name(v, n, e->d_name))
      continue;
    snprintf(path, sizeof path, "%s/%s.nk", dir, e->d_name);
    if (unlink(path) < 0 && errno != ENOENT)
      rc = dpl_fail(-errno, "cannot remove %s: %s", path, strerror(errno));
  }
  if (d)
    closedir(d);
  return rc;
}

static int
render_accounts(const char *data, const char *site, const lark_principal *p,
                size_t n) {
  char path[PATH_MAX];
  int rc = lark_site_path(data, site, "accounts.conf", path, sizeof path);
  if (rc < 0)
    return rc;
  char *text = dpl_accounts_text(p, n, site);
  if (!text)
    return -ENOMEM;
  rc = dpl_write_atomic(path, text, strlen(text));
  free(text);
  return rc;
}

/* leaf.conf: the settings, the site's seed, paths as they are at the
 * site (its `dir`). */
static int
render_leaf(const char *data, const char *site, const site_cfg *c) {
  char conf[PATH_MAX], nk[PATH_MAX], run[PATH_MAX + 8], name[BUS_NAME_MAX + 8];
  char cert[PATH_MAX + 16], key[PATH_MAX + 16], ca[PATH_MAX + 16];
  char seed[BUS_NKEY_SEED_LEN + 1];
  lark_broker_opts o;
  int rc = lark_site_path(data, site, "leaf.conf", conf, sizeof conf);
  if (rc < 0 || (rc = lark_creds_path(data, site, nk, sizeof nk)) < 0 ||
      (rc = dpl_seed_read(nk, seed)) < 0)
    return rc;
  snprintf(name, sizeof name, "leaf-%s", site);
  snprintf(run, sizeof run, "%s/run", c->dir);
  snprintf(cert, sizeof cert, "%s/tls/cert.pem", c->dir);
  snprintf(key, sizeof key, "%s/tls/key.pem", c->dir);
  snprintf(ca, sizeof ca, "%s/tls/ca.pem", c->dir);
  lark_broker_opts_init(&o);
  o.server_name = name;
  o.listen = c->listen;
  o.port = c->port;
  o.run_dir = run;
  o.hub_url = c->hub;
  o.leaf_seed = seed;
  o.leaf_cert = cert;
  o.leaf_key = key;
  o.leaf_ca = ca;
  rc = lark_render_conf("leaf", &o, conf);
  sodium_memzero(seed, sizeof seed);
  return rc;
}

static int
render_site(const char *data, const char *site, const lark_principal *p,
            size_t n) {
  char run[PATH_MAX];
  site_cfg c;
  name_t *v = NULL;
  size_t cap = n ? n : 1;
  int rc = cfg_load(data, site, &c);
  if (rc < 0)
    return rc;
  if (!(v = calloc(cap, sizeof *v)))
    return -ENOMEM;
  size_t k = lark_site_nodes(data, site, p, n, v, cap);
  if ((rc = lark_site_path(data, site, "run", run, sizeof run)) == 0 &&
      (rc = lark_mkdirs(run, 0700)) == 0 &&
      (rc = render_seeds(data, site, v, k < cap ? k : cap)) == 0 &&
      (rc = render_accounts(data, site, p, n)) == 0)
    rc = render_leaf(data, site, &c);
  free(v);
  return rc;
}

int
lark_sites_render(const char *data, const lark_principal *p, size_t n) {
  name_t *sites = NULL;
  size_t ns = 0;
  int rc = lark_sites_list(data, &sites, &ns);
  for (size_t i = 0; rc == 0 && i < ns; i++)
    if ((rc = render_site(data, sites[i], p, n)) < 0)
      dpl_fail(rc, "site %s: %s", sites[i], lark_cfg_error());
  free(sites);
  return rc;
}

/* ------------------------------------------------ the hub's listener */

/* 1 when the hub should listen for sites: --sites, or sites made before. */
static int
wants_leaf(lark_up *u) {
  char(*names)[BUS_NAME_MAX + 1] = NULL;
  size_t n = 0;
  if (u->sites > 0)
    return 1;
  int any = lark_sites_list(u->data, &names, &n) == 0 && n > 0;
  free(names);
  return any;
}

void
dpl_up_hub_leaf(lark_up *u, int idx, lark_broker_opts *o, char *cert, char *key,
                char *ca) {
  if (!wants_leaf(u))
    return;
  int port = lark_hub_leaf_port_of(u->data, idx, 1);
  if (port <= 0)
    return;
  o->leaf_port = port;
  if (lark_hub_leaf_tls(u->data, cert, key, ca)) {
    o->leaf_cert = cert;
    o->leaf_key = key;
    o->leaf_ca = ca;
  }
}
