/*
 * gateway.c - lark-gateway under `larkctl up`: the platform over HTTP on
 * loopback, behind a login token, as notebook servers do.
 *
 * Each `up` writes a fresh token (32 random bytes, hex) to
 * <data>/gateway/token, mode 0600 in a 0700 directory, and starts
 *   lark-gateway --url URL --creds <data>/creds/gateway.nk
 *                --data <data>/views/gateway --http 127.0.0.1:PORT
 *                --token-file <data>/gateway/token --token-user USER
 *                --port-file <data>/run/gateway.port
 * (PORT 0 unless --gateway-port: any free port) as principal "gateway",
 * the one that may send commands for others; the token's actor is the
 * user `up` made credentials for. Its process is "gateway", its log
 * <data>/logs/lark-gateway.log; restarted by the supervisor with the same
 * token (a port of 0 may then change: --gateway-port keeps it). The token
 * travels only in that file and in the dashboard line `larkctl up` prints;
 * never on a command line, where any local user's ps would show it. Once the
 * gateway has written its port file, lark_up_gateway_url gives the line's
 * address.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"

/* <data>/<sub> into out; truncation is refused. */
static int
path_of(const lark_up *u, const char *sub, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s/%s", u->data, sub);
  return n < 0 || (size_t)n >= cap
             ? dpl_fail(BUS_EINVAL, "path too long under %s", u->data)
             : 0;
}

/* A fresh token into u->gw_token and <data>/gateway/token (0600). */
static int
write_token(lark_up *u) {
  unsigned char raw[32];
  char path[PATH_MAX], line[sizeof u->gw_token + 1];
  if (sodium_init() < 0)
    return dpl_fail(BUS_EINVAL, "no source of randomness for the token");
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(u->gw_token, sizeof u->gw_token, raw, sizeof raw);
  sodium_memzero(raw, sizeof raw);
  int rc = path_of(u, "gateway", path, sizeof path);
  if (rc == 0 && lark_mkdirs(path, 0700) < 0)
    rc = dpl_fail(-errno, "cannot make %s: %s", path, strerror(errno));
  if (rc == 0 && chmod(path, 0700) < 0)
    rc = dpl_fail(-errno, "cannot restrict %s: %s", path, strerror(errno));
  if (rc == 0)
    rc = path_of(u, "gateway/token", path, sizeof path);
  snprintf(line, sizeof line, "%s\n", u->gw_token);
  if (rc == 0 && (rc = dpl_write_atomic(path, line, strlen(line))) < 0)
    rc = dpl_fail(rc, "cannot write %s", path);
  sodium_memzero(line, sizeof line);
  return rc;
}

int
lark_up_gateway_start(lark_up *u, char *list, size_t cap) {
  char path[PATH_MAX + 64], v[64];
  u->gw_proc = NULL;
  if (u->no_gateway || !lark_bin_exists(u->bin_dir, LARK_GATEWAY_BINARY))
    return 0;
  int rc = write_token(u);
  if (rc == 0)
    rc =
        path_of(u, "run/gateway.port", u->gw_port_file, sizeof u->gw_port_file);
  if (rc < 0)
    return rc;
  unlink(u->gw_port_file); /* the last run's port */
  /* named as its principal, not lark-*: lark_up_wait_ready asks the
   * lark-* services for their status; the gateway is ready when it has
   * bound its port (lark_up_gateway_url) */
  lark_proc *k = lark_up_add_service(u, LARK_GATEWAY_NAME, LARK_GATEWAY_BINARY,
                                     LARK_GATEWAY_BINARY, NULL);
  if (!k)
    return dpl_fail(BUS_EINVAL, "too many processes to supervise");
  lark_proc_arg(k, "--http");
  snprintf(v, sizeof v, "127.0.0.1:%d", u->gateway_port);
  lark_proc_arg(k, v);
  lark_proc_arg(k, "--token-file");
  snprintf(path, sizeof path, "%s/gateway/token", u->data);
  lark_proc_arg(k, path);
  lark_proc_arg(k, "--token-user");
  lark_proc_arg(k, u->user);
  lark_proc_arg(k, "--port-file");
  lark_proc_arg(k, u->gw_port_file);
  if (lark_proc_start(k) < 0)
    return dpl_fail(-errno, "cannot start %s: %s", k->name, strerror(errno));
  u->gw_proc = k;
  size_t len = strlen(list);
  if (!strcmp(list, "none"))
    len = 0;
  snprintf(list + len, len < cap ? cap - len : 0, "%s%s", len ? ", " : "",
           k->name);
  return 0;
}

/* The "http PORT\n" line of the gateway's port file; 0 while there is
 * none (a line without its newline may still be being written). */
static int
http_port(const char *path) {
  char buf[256];
  if (lark_read_text(path, buf, sizeof buf) < 0)
    return 0;
  for (char *l = buf, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
    int port, end = 0;
    *nl = 0;
    if (sscanf(l, "http %d%n", &port, &end) == 1 && !l[end] && port > 0 &&
        port < 65536)
      return port;
  }
  return 0;
}

int
lark_up_gateway_url(lark_up *u, char *out, size_t cap) {
  out[0] = 0;
  if (!u->gw_proc)
    return 0;
  int port = 0;
  int64_t deadline = bus_mono_ms() + 60000;
  while (!(port = http_port(u->gw_port_file)) && !lark_sup_stopping() &&
         bus_mono_ms() < deadline) {
    lark_sup_reap(&u->sup);
    lark_sup_restart_due(&u->sup);
    bus_sleep_ms(100);
  }
  if (!port)
    return dpl_fail(BUS_ETIMEOUT,
                    "lark-gateway wrote no port to %s within 60 s (see "
                    "%s/logs/" LARK_GATEWAY_BINARY ".log)",
                    u->gw_port_file, u->data);
  snprintf(out, cap, "http://127.0.0.1:%d/?token=%s", port, u->gw_token);
  return 0;
}
