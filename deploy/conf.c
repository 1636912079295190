/*
 * conf.c - nats-server configs rendered from the templates in
 * broker-config/ (single, cluster, leaf).
 *
 * Templates are copied line by line; comment lines are left alone, and an
 * unknown placeholder or a missing value fails the render. A value may
 * hold no quote, backslash or carriage return, so none can end a string
 * of the config early. The rendered text is wiped from memory once
 * written: it holds the route password and a site's seed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"

#ifndef LARK_SOURCE_DIR
#define LARK_SOURCE_DIR "."
#endif

const char *
lark_template_dir(void) {
  static char buf[PATH_MAX];
  const char *env = getenv("LARK_BROKER_CONFIG_DIR");
  if (env && *env)
    return env;
  snprintf(buf, sizeof buf, "%s/broker-config/single.conf.in", LARK_SOURCE_DIR);
  if (access(buf, R_OK) == 0) {
    snprintf(buf, sizeof buf, "%s/broker-config", LARK_SOURCE_DIR);
    return buf;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
      *slash = 0;
    if (snprintf(buf, sizeof buf, "%s/../share/larkbus/broker-config", exe) <
        (int)sizeof buf)
      return buf;
  }
  return "broker-config";
}

void
lark_broker_opts_init(lark_broker_opts *o) {
  memset(o, 0, sizeof *o);
  o->server_name = "lark-1";
  o->listen = "127.0.0.1";
  o->port = -1;
  o->max_payload = BUS_MAX_PAYLOAD;
  o->accounts_file = "accounts.conf";
  o->cluster_name = "lark";
  o->route_user = "lark-route";
}

typedef struct var {
  const char *name;
  const char *value;
  int optional; /* no value: the line is left out */
} var;

enum { NVARS = 18 };

static int
safe_value(const char *v) {
  return !strpbrk(v, "\"\\\r");
}

static void
routes_text(const lark_broker_opts *o, sbuf *b) {
  for (size_t i = 0; i < o->n_routes; i++)
    dpl_sb_printf(b, "    \"nats-route://%s:%s@%s:%d\"%s", o->route_user,
                  o->route_password ? o->route_password : "", o->listen,
                  o->route_ports[i], i + 1 < o->n_routes ? "\n" : "");
}

/*
 * The hub's leaf-node listener for edge sites. No users of its own: a
 * site logs in as its nkey user of the accounts file (role site), whose
 * rules confine the connection to the site's nodes. With a certificate,
 * TLS is required and the site must show a certificate from the platform
 * CA. no_advertise: a site dials the URL it was given (the hub's public
 * address, or whatever path the site has) and learns no other from the
 * hub, whose listen address may be unreachable from it. default_js_domain
 * maps
 * LARK to the hub's own (unnamed) JetStream domain: without it the hub
 * denies $JS.API.> on a leaf connection whose server runs no JetStream,
 * and the sites' nodes could not reach their streams (nats-server 2.10+
 * warns that the option is for compatibility; a named domain instead
 * would change every node's API prefix).
 */
/* A leaf server's remote URLs: o->hub_url, comma-separated, as a quoted
 * list ("a", "b"); each part checked as any value is. */
static int
hub_urls_text(const lark_broker_opts *o, sbuf *b) {
  if (!o->hub_url)
    return 0;
  const char *p = o->hub_url, *it;
  size_t n;
  while (lark_list_next(&p, &it, &n)) {
    char url[512];
    snprintf(url, sizeof url, "%.*s", (int)(n < sizeof url ? n : 0), it);
    if (!url[0] || !safe_value(url))
      return dpl_fail(BUS_EINVAL,
                      "hub URL '%.*s' is empty, too long, or has "
                      "a quote, backslash or carriage return",
                      (int)n, it);
    dpl_sb_printf(b, "%s\"%s\"", b->len ? ", " : "", url);
  }
  return 0;
}

static int
leaf_text(const lark_broker_opts *o, sbuf *b) {
  if (o->leaf_port <= 0) {
    dpl_sb_add(b, "# no leaf-node listener");
    return 0;
  }
  if (!o->leaf_cert != !o->leaf_key || !o->leaf_cert != !o->leaf_ca)
    return dpl_fail(BUS_EINVAL, "leaf TLS needs cert, key and CA together");
  const char *tls[] = {o->leaf_cert, o->leaf_key, o->leaf_ca};
  for (size_t i = 0; i < 3; i++)
    if (tls[i] && !safe_value(tls[i]))
      return dpl_fail(BUS_EINVAL, "leaf TLS path %s has a quote", tls[i]);
  dpl_sb_printf(b,
                "default_js_domain: { LARK: \"\" }\n"
                "leafnodes {\n  host: \"%s\"\n  port: %d\n"
                "  no_advertise: true\n",
                o->listen, o->leaf_port);
  if (o->leaf_cert)
    dpl_sb_printf(b,
                  "  tls {\n    cert_file: \"%s\"\n    key_file: \"%s\"\n"
                  "    ca_file: \"%s\"\n    verify: true\n    timeout: 2\n"
                  "  }\n",
                  o->leaf_cert, o->leaf_key, o->leaf_ca);
  dpl_sb_add(b, "}");
  return 0;
}

static const char *
var_get(const var *vars, const char *name, size_t len, int *known) {
  *known = 0;
  for (size_t i = 0; i < NVARS && vars[i].name; i++)
    if (strlen(vars[i].name) == len && !strncmp(vars[i].name, name, len)) {
      *known = vars[i].optional ? 2 : 1;
      return vars[i].value;
    }
  return NULL;
}

/*
 * Copy one template line into b with its placeholders replaced. A line
 * whose placeholder is optional and has no value is left out whole.
 */
static int
subst_line(const char *line, size_t len, const var *vars, sbuf *b) {
  const char *p = line, *end = line + len;
  size_t start = b->len;
  while (p < end) {
    const char *at = memchr(p, '@', (size_t)(end - p));
    const char *close = at ? memchr(at + 1, '@', (size_t)(end - at - 1)) : 0;
    if (!close) {
      dpl_sb_addn(b, p, (size_t)(end - p));
      break;
    }
    dpl_sb_addn(b, p, (size_t)(at - p));
    int known;
    size_t nlen = (size_t)(close - at - 1);
    const char *v = var_get(vars, at + 1, nlen, &known);
    if (known == 2 && !v) {
      b->len = start;
      if (b->p)
        b->p[start] = 0;
      return 0;
    }
    if (!known || !v)
      return dpl_fail(BUS_EINVAL, "%s placeholder @%.*s@",
                      known ? "no value for" : "unknown", (int)nlen, at + 1);
    dpl_sb_add(b, v);
    p = close + 1;
  }
  return 0;
}

static int
subst(const char *text, const var *vars, sbuf *b) {
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    size_t skip = strspn(line, " \t");
    int rc = 0;
    if (line[skip] == '#')
      dpl_sb_addn(b, line, len);
    else
      rc = subst_line(line, len, vars, b);
    if (rc < 0)
      return rc;
    line += len;
  }
  return b->oom ? -ENOMEM : 0;
}

static int
check_values(const var *vars) {
  for (size_t i = 0; i < NVARS && vars[i].name; i++) {
    const char *v = vars[i].value;
    if (v && strcmp(vars[i].name, "ROUTES") &&
        strcmp(vars[i].name, "LEAFNODES") && strcmp(vars[i].name, "HUB_URLS") &&
        !safe_value(v))
      return dpl_fail(BUS_EINVAL,
                      "value of %s has a quote, backslash or "
                      "carriage return",
                      vars[i].name);
  }
  return 0;
}

int
lark_render_conf(const char *name, const lark_broker_opts *o,
                 const char *path) {
  char tpath[PATH_MAX], port[24], cport[24], payload[24];
  char *text = NULL;
  sbuf routes = {0}, leaf = {0}, hubs = {0}, out = {0};
  const char *dir = o->template_dir ? o->template_dir : lark_template_dir();
  snprintf(tpath, sizeof tpath, "%s/%s.conf.in", dir, name);
  int rc = dpl_read_all(tpath, &text, NULL);
  if (rc < 0) {
    rc = dpl_fail(rc,
                  "cannot read template %s: %s (set "
                  "LARK_BROKER_CONFIG_DIR)",
                  tpath, strerror(-rc));
    goto out;
  }
  snprintf(port, sizeof port, "%d", o->port);
  snprintf(cport, sizeof cport, "%d", o->cluster_port);
  snprintf(payload, sizeof payload, "%ld", o->max_payload);
  routes_text(o, &routes);
  if ((rc = leaf_text(o, &leaf)) < 0 || (rc = hub_urls_text(o, &hubs)) < 0)
    goto out;
  const var vars[NVARS] = {
      {"SERVER_NAME", o->server_name, 0},
      {"LISTEN", o->listen, 0},
      {"PORT", port, 0},
      {"MAX_PAYLOAD", payload, 0},
      {"STORE_DIR", o->store_dir, 1},
      {"RUN_DIR", o->run_dir, 0},
      {"ACCOUNTS_FILE", o->accounts_file, 0},
      {"LEAFNODES", leaf.p, 0},
      {"CLUSTER_NAME", o->cluster_name, 0},
      {"CLUSTER_PORT", o->cluster_port > 0 ? cport : NULL, 0},
      {"ROUTE_USER", o->route_user, 0},
      {"ROUTE_PASSWORD", o->route_password, 0},
      {"ROUTES", o->n_routes ? routes.p : NULL, 0},
      {"HUB_URLS", hubs.p, 0},
      {"LEAF_SEED", o->leaf_seed, 0},
      {"LEAF_CERT", o->leaf_cert, 0},
      {"LEAF_KEY", o->leaf_key, 0},
      {"LEAF_CA", o->leaf_ca, 0},
  };
  if ((rc = check_values(vars)) < 0 || (rc = subst(text, vars, &out)) < 0)
    goto out;
  rc = dpl_write_atomic(path, out.p, out.len);
out:
  free(text);
  free(routes.p);
  free(leaf.p);
  free(hubs.p);
  if (out.p)
    sodium_memzero(out.p, out.len);
  free(out.p);
  return rc;
}
