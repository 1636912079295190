/*
 * main.c - lark-relay: the cross-cluster relay's command.
 *
 *   lark-relay hub --listen HOST:PORT --ca CA.PUB --host-key KEY
 *                  [--revoked KRL] [--allow DOMAIN=IP:PORT]...
 *                  [--url NATS_URL [--creds FILE]]
 *                  [--port-file FILE] [--reload-ms N]
 *   lark-relay check --ca CA.PUB [--revoked KRL] [--role ROLE] CERT.PUB
 *   lark-relay node --cluster C --node N --hub HOST:PORT --hub-key KEY.PUB
 *                   --certs DIR --url NATS_URL [--creds FILE]
 *                   [--capture-port P]            (see node.h)
 *
 * hub serves until SIGINT or SIGTERM (exit 0); SIGHUP re-reads the KRL.
 * With --url it follows the routes (which then decide instead of --allow)
 * and cert.revoked events, and carries channels to node relays.
 * PORT 0 picks a free port, written to --port-file once listening.
 * check prints "ok <domain> <serial>" or the reason for a refusal (exit
 * 1). One log line per event goes to stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmdline.h"
#include "hub.h"
#include "node.h"
#include "revoked.h"

static volatile sig_atomic_t stop_flag, reload_flag;

static void
on_signal(int sig) {
  if (sig == SIGHUP)
    reload_flag = 1;
  else
    stop_flag = 1;
}

static int
usage(void) {
  fprintf(stderr,
          "usage: lark-relay hub --listen HOST:PORT --ca CA.PUB --host-key KEY"
          " [--revoked KRL] [--allow DOMAIN=IP:PORT]..."
          " [--url NATS_URL [--creds FILE]] [--port-file FILE]"
          " [--reload-ms N]\n"
          "       lark-relay check --ca CA.PUB [--revoked KRL] [--role ROLE]"
          " CERT.PUB\n"
          "       lark-relay node --cluster C --node N --hub HOST:PORT"
          " --hub-key KEY.PUB --certs DIR --url NATS_URL [--creds FILE]"
          " [--capture-port P]\n");
  return 2;
}

/* The hub's bus connection for --url (retrying until the broker is
 * up); NULL without --url. */
static int
hub_bus(const char *url, const char *creds, bus_conn **out) {
  bus_conn_opts co;
  *out = NULL;
  if (!url)
    return 0;
  bus_conn_opts_init(&co);
  co.url = url;
  co.creds = creds;
  co.name = "lark-relay-hub";
  co.retry_on_failed_connect = 1;
  co.inbox_own = 1; /* replies only to its own inbox (broker-config) */
  /* the followers' fetches on an empty consumer last about this long,
   * and so does the hub's stop */
  co.js_wait_ms = 1000;
  return bus_conn_open(out, &co);
}

static int
cmd_hub(int argc, char **argv) {
  relay_hub_opts o;
  static relay_allow allow;
  const char *url = NULL, *creds = NULL;
  relay_hub_opts_init(&o);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      return usage();
    i++;
    if (!strcmp(a, "--listen") &&
        relay_cmd_hostport(argv[i], 0, 0, &o.host, &o.port))
      return usage();
    else if (!strcmp(a, "--ca"))
      o.ca_path = v;
    else if (!strcmp(a, "--host-key"))
      o.host_key = v;
    else if (!strcmp(a, "--revoked"))
      o.revoked = v;
    else if (!strcmp(a, "--port-file"))
      o.port_file = v;
    else if (!strcmp(a, "--reload-ms"))
      o.reload_ms = atoi(v);
    else if (!strcmp(a, "--url"))
      url = v;
    else if (!strcmp(a, "--creds"))
      creds = v;
    else if (!strcmp(a, "--allow") && relay_allow_add(&allow, v)) {
      fprintf(stderr, "lark-relay: --allow %s: want DOMAIN=IP:PORT\n", v);
      return 2;
    } else if (strcmp(a, "--listen") && strcmp(a, "--allow"))
      return usage();
  }
  if (!o.ca_path || !o.host_key)
    return usage();
  o.policy = relay_allow_policy;
  o.policy_ud = &allow;
  o.log = relay_cmd_log;
  relay_cmd_signals(on_signal, 1);
  int rc = hub_bus(url, creds, &o.bus);
  if (!rc)
    rc = relay_hub_run(&o, &stop_flag, &reload_flag);
  if (rc)
    fprintf(stderr, "lark-relay: hub: %s: %s\n", bus_strerror(rc),
            bus_last_error());
  bus_conn_close(o.bus);
  return rc ? 1 : 0;
}

static int
read_line(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int ok = fgets(out, (int)cap, f) != NULL;
  fclose(f);
  return ok ? 0 : -1;
}

static int
cmd_check(int argc, char **argv) {
  const char *ca = NULL, *krl = NULL, *role = "domain", *cert = NULL;
  for (int i = 2; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--ca"))
      ca = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--revoked"))
      krl = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--role"))
      role = argv[++i];
    else if (!cert && argv[i][0] != '-')
      cert = argv[i];
    else
      return usage();
  }
  static char line[65536];
  uint8_t pk[32], *blob = NULL;
  size_t n;
  char why[256] = "";
  sshwire_krl *rev = NULL;
  relay_cert c;
  if (!ca || !cert)
    return usage();
  int rc = relay_ca_load(ca, pk);
  if (rc)
    snprintf(why, sizeof why, "%s: not an ssh-ed25519 public key", ca);
  else if (read_line(cert, line, sizeof line) ||
           relay_cert_decode(line, strlen(line), &blob, &n))
    rc = BUS_EMALFORMED,
    snprintf(why, sizeof why, "%s: not a certificate", cert);
  else if (!krl ||
           !(rc = relay_revoked_load_file(krl, pk, &rev, why, sizeof why))) {
    relay_check chk = {
        .ca_pk = pk, .now = (uint64_t)time(NULL), .role = role, .revoked = rev};
    rc = relay_cert_check(&chk, blob, n, &c, why, sizeof why);
  }
  if (rc)
    printf("refused: %s\n", why);
  else
    printf("ok %s %llu\n", c.domain, (unsigned long long)c.serial);
  sshwire_krl_free(rev);
  free(blob);
  return rc ? 1 : 0;
}

static const struct {
  const char *name;
  int (*fn)(int, char **);
} cmds[] = {{"hub", cmd_hub}, {"check", cmd_check}, {"node", relay_cmd_node}};

int
main(int argc, char **argv) {
  for (size_t i = 0; argc > 1 && i < sizeof cmds / sizeof cmds[0]; i++)
    if (!strcmp(argv[1], cmds[i].name))
      return cmds[i].fn(argc, argv);
  return usage();
}
