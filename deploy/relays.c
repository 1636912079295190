/*
 * relays.c - the pod network under `larkctl up --relay` (root only): each
 * local node is its own cluster c<i> with the pod range A.B.<i>.0/24
 * (raw+netns), a relay hub listens beside the broker, and one `lark-relay
 * node` per node dials it. The hub starts once the signer's SSH CA exists;
 * its port, picked at the first start, is kept for restarts (the relays
 * were told it). Domain certificates named by --domain are requested for
 * every node before the relays start and renewed when half their
 * validity has passed.
 *
 * Files: <data>/relay/hostkey (0600) and hostkey.pub, the hub's SSH host
 * key made once; <data>/run/relay-hub.port; <data>/relay/node-<i>/certs/,
 * each node relay's domain certificates; logs relay-hub.log,
 * relay-node-<i>.log and relay-certs.log.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"
#include "signer.h"

/*
 * The hub's SSH host key, made once: <data>/relay/hostkey (0600) and
 * hostkey.pub, which the node relays pin. The public file is written
 * first, so a present private file means both are complete.
 */
static int
host_key(lark_up *u) {
  char key[PATH_MAX], pub[PATH_MAX + 8], line[256];
  char *priv = NULL;
  size_t len = 0;
  uint8_t pk[crypto_sign_PUBLICKEYBYTES];
  snprintf(key, sizeof key, "%s/relay/hostkey", u->data);
  snprintf(pub, sizeof pub, "%s.pub", key);
  if (access(key, R_OK) == 0 && access(pub, R_OK) == 0)
    return 0;
  uint8_t *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
  if (sodium_init() < 0 || !sk)
    return dpl_fail(BUS_EINVAL, "cannot make the hub's host key");
  crypto_sign_keypair(pk, sk);
  int rc = signer_ssh_private_format(pk, sk, "lark-relay-hub", &priv, &len);
  sodium_free(sk); /* wipes */
  if (!rc)
    rc = signer_ssh_pub_format(pk, "lark-relay-hub", line, sizeof line - 1);
  if (!rc) {
    strcat(line, "\n");
    rc = bus_file_write(pub, line, strlen(line), 0644);
  }
  if (!rc)
    rc = bus_file_write(key, priv, len, 0600);
  sodium_free(priv);
  if (rc)
    return dpl_fail_bus(rc, "cannot write %s", key);
  return 0;
}

/* "host:port", IPv6 in brackets. */
static void
host_port(const char *host, int port, char *out, size_t cap) {
  snprintf(out, cap, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static int
start_hub(lark_up *u, const char *ca) {
  char path[PATH_MAX + 64], pf[PATH_MAX], listen[96];
  const char *dial = !strcmp(u->listen, "0.0.0.0") ? "127.0.0.1"
                     : !strcmp(u->listen, "::")    ? "::1"
                                                   : u->listen;
  lark_proc *k = lark_sup_add(&u->sup, "relay-hub", "relay-hub");
  if (!k)
    return dpl_fail(BUS_EINVAL, "too many processes");
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
    lark_proc_arg(k, args[i]);
  if (lark_proc_start(k) < 0)
    return dpl_fail(BUS_EINVAL, "cannot start the relay hub: %s",
                    strerror(errno));
  if (lark_wait_file(pf, k, 30000) < 0)
    return dpl_fail(BUS_EINVAL, "the relay hub did not start: see %s", k->log);
  FILE *f = fopen(pf, "re");
  int port = 0;
  if (f) {
    if (fscanf(f, "%d", &port) != 1)
      port = 0;
    fclose(f);
  }
  if (port <= 0)
    return dpl_fail(BUS_EINVAL, "the relay hub wrote no port: see %s", k->log);
  /* a restart keeps the port the relays were given */
  host_port(u->listen, port, k->args[3], sizeof k->args[3]);
  host_port(dial, port, u->hub, sizeof u->hub);
  return 0;
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
request_cert(lark_up *u, int node, const char *domain) {
  char cl[16], name[BUS_NAME_MAX + 1], out[PATH_MAX];
  snprintf(cl, sizeof cl, "c%d", node);
  snprintf(name, sizeof name, "relay-node-%d-%s", node, domain);
  snprintf(out, sizeof out, "%s/relay/node-%d/certs/%s", u->data, node, domain);
  const char *args[] = {"cert",    "request",   "--role", "domain", "--domain",
                        domain,    "--cluster", cl,       "--name", name,
                        "--valid", CERT_VALID,  "--out",  out,      NULL};
  return lark_up_larkctl(u, args, "relay-certs.log");
}

int
lark_up_refresh_certs(lark_up *u) {
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
  u->certs_checked_ms = bus_mono_ms();
  return failed;
}

static int
start_node_relays(lark_up *u) {
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
    lark_proc *k = lark_sup_add(&u->sup, name, name);
    if (!k)
      return dpl_fail(BUS_EINVAL, "too many processes");
    const char *args[] = {path,    "node", "--cluster", cl,    "--node",  node,
                          "--hub", u->hub, "--hub-key", key,   "--certs", certs,
                          "--url", u->url, "--creds",   creds, NULL};
    for (size_t a = 0; args[a]; a++)
      lark_proc_arg(k, args[a]);
    if (u->wrelay_port[i]) { /* its node's weights fetches (services.c) */
      char wl[32];
      snprintf(wl, sizeof wl, "127.0.0.1:%d", u->wrelay_port[i]);
      lark_proc_arg(k, "--weights-listen");
      lark_proc_arg(k, wl);
    }
    if (lark_proc_start(k) < 0)
      return dpl_fail(BUS_EINVAL, "cannot start %s: %s", name, strerror(errno));
  }
  return 0;
}

/*
 * --relay, after the services: the hub (once the signer's SSH CA exists),
 * the domain certificates, then one node relay per node. Appends the new
 * children's names to list.
 */
int
lark_up_pod_network(lark_up *u, char *list, size_t cap) {
  static const char *const need[] = {"lark-relay", "lark-signer", "lark-ipam",
                                     LARK_EDGE_BINARY, NULL};
  char ca[PATH_MAX + 64], path[PATH_MAX + 64];
  for (size_t i = 0; need[i]; i++)
    if (!lark_bin_exists(u->bin_dir, need[i]))
      return dpl_fail(BUS_EINVAL, "--relay needs %s next to larkctl (in %s)",
                      need[i], u->bin_dir);
  for (int i = 1; i <= u->nodes; i++) {
    snprintf(path, sizeof path, "%s/relay/node-%d/certs", u->data, i);
    if (lark_mkdirs(path, 0700) < 0)
      return dpl_fail(BUS_EINVAL, "%s", lark_cfg_error());
  }
  int rc = host_key(u);
  if (rc != 0)
    return rc;
  snprintf(ca, sizeof ca, "%s/views/lark-signer/ca.pub", u->data);
  if (lark_wait_file(ca, NULL, 60000) < 0)
    return dpl_fail(BUS_EINVAL,
                    "the signer made no SSH CA (%s): see %s/logs/"
                    "lark-signer.log",
                    ca, u->data);
  size_t first = u->sup.n;
  if ((rc = start_hub(u, ca)) != 0)
    return rc;
  /* the signer may take a moment to answer after making its CA */
  for (int t = 0; t < 20 && u->ndomains && lark_up_refresh_certs(u) &&
                  !lark_sup_stopping();
       t++)
    bus_sleep_ms(500);
  if ((rc = start_node_relays(u)) != 0)
    return rc;
  size_t len = strlen(list);
  for (size_t i = first; i < u->sup.n; i++)
    len += (size_t)snprintf(list + len, len < cap ? cap - len : 0, ", %s",
                            u->sup.procs[i].name);
  printf("larkctl up: pod network: hub %s (host key %s/relay/hostkey.pub)",
         u->hub, u->data);
  for (int i = 1; i <= u->nodes; i++)
    printf("; node-%d cluster c%d pods %u.%u.%d.0/24", i, i, u->pod_a, u->pod_b,
           i);
  printf("; domain certificates in %s/relay/<node>/certs\n", u->data);
  fflush(stdout);
  return 0;
}
