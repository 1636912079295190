/*
 * cmd_site.c - `larkctl site add | list`: edge sites, leaf-node servers
 * that dial the hub (deploy.h, "sites").
 *
 *   larkctl site add SITE [--nodes A,B] [--hub nats-leaf://HOST:PORT,...]
 *                         [--listen ADDR] [--port P] [--dir PATH]
 *   larkctl site list
 *
 * add makes what the site needs under <data>/sites/SITE/: its client
 * certificate from the platform CA (the signer must be running, as for
 * `larkctl cert request`), and, when missing, the hub's leaf listener's
 * server certificate. Both are of the signer's role gateway (a server's,
 * client and server use, names by --host): the other X.509 roles carry
 * the platform's private extension, whose 2.25.<UUID> OID Go's x509, and
 * so nats-server, refuses to parse ("malformed extension OID field").
 * Then the site's and its nodes' credentials and
 * configs (lark_site_add), and asks running servers to reload. Adding
 * again adds nodes and keeps every key and certificate. The hub's URLs
 * default to this data directory's broker host and each server's leaf
 * port; with several (a hub cluster), the site dials any of them and
 * another when the one it is on goes, and the hub's certificate names
 * every URL's host.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "deploy.h"

#define USAGE                                                                  \
  "larkctl site add SITE [--nodes A,B] [--hub nats-leaf://HOST:PORT,...] "     \
  "[--listen ADDR] [--port P] [--dir PATH]\n"                                  \
  "       larkctl site list"

enum { MAX_NODES = 256 };
#define CERT_VALID "30d"
#define CERT_RENEW_S (15 * 86400)

/* The signer's CA certificate into path. */
static int
write_ca(lark_cli *cli, const char *path) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  bus_packbuf b;
  bus_packbuf_init(&b);
  char key[33], pem[8192] = "";
  bus_event_new_id(key);
  bus_map m;
  bus_map_begin(&m, &b.pk);
  bus_map_str(&m, "key", key);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object reply;
  int rc = bus_map_end(&m) < 0
               ? CLI_ERR
               : cli_call(cli, c, "cert", "ca", &b.sb, &z, &reply);
  if (rc == CLI_OK && (!bus_obj_str(&reply, "pem", pem, sizeof pem)[0] ||
                       bus_file_write(path, pem, strlen(pem), 0644) < 0))
    rc = cli_fail("site add", 0, "cannot write the CA to %s", path);
  msgpack_zone_destroy(&z);
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
  return rc;
}

#define MAX_HOSTS 8

/* Is dir/cert.pem younger than half its validity (the signer issues 30
 * days at most; `up` adds its sites again each run) and issued for every
 * one of hosts (dir/hosts lists those it names)? */
static int
cert_fits(const char *dir, const char *hosts) {
  char path[PATH_MAX + 8], have[1024] = "";
  struct stat st;
  snprintf(path, sizeof path, "%s/cert.pem", dir);
  if (stat(path, &st) < 0 || time(NULL) - st.st_mtime >= CERT_RENEW_S)
    return 0;
  snprintf(path, sizeof path, "%s/hosts", dir);
  lark_read_text(path, have, sizeof have);
  have[strcspn(have, "\n")] = 0;
  return lark_list_covers(have, hosts);
}

/* dir/{cert,key,ca}.pem for name with role (and hosts, a gateway's
 * names, comma-separated), unless the one there fits (cert_fits): a hub
 * given a server on another host gets a certificate naming it too. */
static int
ensure_cert(lark_cli *cli, const char *dir, const char *role, const char *name,
            const char *hosts) {
  char prefix[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 16];
  if (cert_fits(dir, hosts))
    return CLI_OK;
  if (lark_mkdirs(dir, 0700) < 0)
    return cli_fail("site add", 0, "%s", lark_cfg_error());
  snprintf(prefix, sizeof prefix, "%s/req", dir);
  char hostbuf[1024];
  const char *argv[11 + 2 * MAX_HOSTS] = {
      "cert", "request", "--role",   role,    "--name",
      name,   "--valid", CERT_VALID, "--out", prefix};
  int argc = 10;
  snprintf(hostbuf, sizeof hostbuf, "%s", hosts ? hosts : "");
  const char *p = hostbuf, *h;
  size_t n;
  while (argc < 10 + 2 * MAX_HOSTS && lark_list_next(&p, &h, &n)) {
    hostbuf[h - hostbuf + (ptrdiff_t)n] = 0; /* the comma after it */
    argv[argc++] = "--host";
    argv[argc++] = h;
  }
  int rc = cmd_cert(argc, (char **)argv, cli); /* it only reads them */
  if (rc != CLI_OK)
    return cli_fail("site add", 0,
                    "no certificate for %s %s: is lark-signer running?", role,
                    name);
  snprintf(a, sizeof a, "%s/req.key", dir);
  snprintf(b, sizeof b, "%s/key.pem", dir);
  if (rename(a, b) < 0)
    return cli_fail("site add", 0, "cannot rename %s", a);
  snprintf(a, sizeof a, "%s/req.pem", dir);
  snprintf(b, sizeof b, "%s/ca.pem", dir);
  if ((rc = write_ca(cli, b)) != CLI_OK)
    return rc;
  snprintf(b, sizeof b, "%s/cert.pem", dir);
  if (rename(a, b) < 0)
    return cli_fail("site add", 0, "cannot rename %s", a);
  snprintf(b, sizeof b, "%s/hosts", dir);
  const char *named = hosts ? hosts : "";
  return bus_file_write(b, named, strlen(named), 0644) < 0
             ? cli_fail("site add", 0, "cannot write %s", b)
             : CLI_OK;
}

/* nats-leaf://<broker host>:<leaf port> of every hub server of this data
 * directory, comma-separated. */
static int
default_hub(lark_cli *cli, char *out, size_t cap) {
  char path[PATH_MAX], url[1024] = "", host[256];
  snprintf(path, sizeof path, "%s/url", cli->data);
  const char *p = url, *first;
  size_t n = 0;
  if (lark_read_text(path, url, sizeof url) <= 0 ||
      !lark_list_next(&p, &first, &n) ||
      lark_url_host(first, strcspn(first, ",\n"), host, sizeof host) < 0 ||
      lark_hub_leaf_urls(cli->data, host, out, cap) <= 0)
    return cli_fail("site add", 0,
                    "the hub of %s has no leaf listener yet: give --hub, or "
                    "run `larkctl up --sites N` (it opens one)",
                    cli->data);
  return CLI_OK;
}

/* The host of each nats-leaf://[user@]HOST:PORT URL of urls (comma-
 * separated) into out, comma-separated. */
static void
url_hosts(const char *urls, char *out, size_t cap) {
  size_t len = 0, n;
  const char *p = urls, *u;
  char host[256];
  out[0] = 0;
  while (len < cap && lark_list_next(&p, &u, &n))
    if (lark_url_host(u, n, host, sizeof host) == 0)
      len +=
          (size_t)snprintf(out + len, cap - len, "%s%s", len ? "," : "", host);
}

static int
split_nodes(char *list, const char **out, size_t *n) {
  char *save = NULL;
  *n = 0;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (*n == MAX_NODES)
      return -1;
    else
      out[(*n)++] = t;
  return 0;
}

static int
site_add(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"--nodes", "--hub", "--listen",
                                      "--port",  "--dir", NULL};
  const char *v[5] = {0}, *site = NULL, *nodes[MAX_NODES];
  char list[4096] = "", hub[512], hosts[1024], dir[PATH_MAX + 8];
  size_t n = 0;
  lark_site_opts o;
  lark_site_opts_init(&o);
  if (cli_take_args(argc, argv, 2, flags, v, &site, 1) != 1 || !site ||
      (v[3] && (o.port = atoi(v[3])) <= 0))
    return cli_usage(USAGE);
  snprintf(list, sizeof list, "%s", v[0] ? v[0] : "");
  if (split_nodes(list, nodes, &n) < 0)
    return cli_fail("site add", 0, "more than %d nodes at once", MAX_NODES);
  if (!bus_name_valid(site, BUS_NAME_MAX))
    return cli_fail("site add", 0, "invalid site name '%s'", site);
  int rc = v[1] ? CLI_OK : default_hub(cli, hub, sizeof hub);
  o.hub_url = v[1] ? v[1] : hub;
  o.listen = v[2];
  o.dir = v[4];
  url_hosts(o.hub_url, hosts, sizeof hosts);
  snprintf(dir, sizeof dir, "%s/tls/leaf-hub", cli->data);
  if (rc == CLI_OK)
    rc = ensure_cert(cli, dir, "gateway", "leaf-hub", hosts);
  lark_site_path(cli->data, site, "tls", dir, sizeof dir);
  if (rc == CLI_OK)
    rc = ensure_cert(cli, dir, "gateway", site, NULL);
  if (rc != CLI_OK)
    return rc;
  int added = 0, reloaded = 0;
  if (lark_site_add(cli->data, site, nodes, n, &o, &added) < 0 ||
      lark_reload_servers(cli->data, &reloaded) < 0)
    return cli_fail("site add", 0, "%s", lark_cfg_error());
  lark_site_path(cli->data, site, NULL, dir, sizeof dir);
  printf("site %s: %d node%s added; %s dials %s\n", site, added,
         added == 1 ? "" : "s", dir, o.hub_url);
  printf("at the site: copy %s there (as its dir), then nats-server -c "
         "leaf.conf; reloaded %d server%s here\n",
         dir, reloaded, reloaded == 1 ? "" : "s");
  return CLI_OK;
}

static int
site_list(lark_cli *cli) {
  char(*sites)[BUS_NAME_MAX + 1] = NULL, (*names)[BUS_NAME_MAX + 1] = NULL;
  lark_principal *p = NULL;
  size_t ns = 0, n = 0;
  if (lark_sites_list(cli->data, &sites, &ns) < 0 ||
      lark_creds_load(cli->data, &p, &n) < 0)
    return cli_fail("site list", 0, "%s", lark_cfg_error());
  names = calloc(n ? n : 1, sizeof *names);
  json_t *a = json_array();
  if (cli->output != CLI_OUT_JSON)
    printf("%-24s %s\n", "SITE", "NODES");
  for (size_t i = 0; names && i < ns; i++) {
    size_t k = lark_site_nodes(cli->data, sites[i], p, n, names, n);
    json_t *nodes = json_array();
    for (size_t j = 0; j < k; j++)
      json_array_append_new(nodes, json_string(names[j]));
    char *joined = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&joined, &len);
    for (size_t j = 0; f && j < k; j++)
      fprintf(f, "%s%s", j ? "," : "", names[j]);
    if (f)
      fclose(f);
    if (cli->output == CLI_OUT_JSON)
      json_array_append_new(
          a, json_pack("{s:s, s:o}", "name", sites[i], "nodes", nodes));
    else {
      printf("%-24s %s\n", sites[i], joined && *joined ? joined : "<none>");
      json_decref(nodes);
    }
    free(joined);
  }
  if (cli->output == CLI_OUT_JSON)
    cli_put_json(a, NULL);
  json_decref(a);
  free(names);
  free(sites);
  free(p);
  return CLI_OK;
}

int
cmd_site(int argc, char **argv, lark_cli *cli) {
  if (argc >= 3 && !strcmp(argv[1], "add"))
    return site_add(argc, argv, cli);
  if (argc == 2 && !strcmp(argv[1], "list"))
    return site_list(cli);
  return cli_usage(USAGE);
}
