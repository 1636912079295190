/*
 * main.c - lark-gateway: the platform over HTTP (docs/gateway.md).
 *
 *   lark-gateway --url URL --creds FILE --data DIR [--name gateway]
 *                [--log-level L]
 *                [--http ADDR:PORT --token-file FILE [--token-user NAME]]
 *                [--https ADDR:PORT --tls-cert F --tls-key F --client-ca F]
 *                [--www DIR] [--max-body BYTES] [--port-file F]
 *
 * A view service like the others (its view: gw_view_def, in --data) with
 * an HTTP server started once the view is open and stopped before it
 * closes; its frame is svc_main_run's, with the connection's inbox set
 * to its principal's between the settings and the connect. The flags are
 * checked before anything starts: plain HTTP only on a loopback address and
 * only behind a token file no one else may read; HTTPS only with its
 * certificate, key and the CA of its clients.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http.h"

static const char *const streams[] = {"LARK_EVENTS", NULL};

static const char usage[] =
    "usage: lark-gateway --url URL --creds FILE --data DIR [--name NAME]\n"
    "                    [--log-level error|warn|info|debug]\n"
    "                    [--http ADDR:PORT --token-file FILE "
    "[--token-user NAME]]\n"
    "                    [--https ADDR:PORT --tls-cert FILE --tls-key FILE\n"
    "                     --client-ca FILE]\n"
    "                    [--www DIR] [--max-body BYTES] [--port-file FILE]\n"
    "\n"
    "The platform over HTTP: REST objects with watch and ?at=, the audit\n"
    "tail, logs, /metrics and the dashboard (docs/gateway.md).\n"
    "  --http        plain HTTP, loopback addresses only, behind the token\n"
    "  --token-file  the login token (its first line; mode 0600)\n"
    "  --token-user  the user the token acts as (default admin)\n"
    "  --https       HTTPS; clients by role-user certificates of --client-ca\n"
    "  --www         the dashboard's files (default $LARK_WWW, else\n"
    "                <exe dir>/../share/larkbus/www)\n"
    "  --max-body    the largest request body (default 1048576)\n"
    "  --port-file   written once bound: \"http PORT\" and \"https PORT\" "
    "lines\n";

static int
take_str(const char *v, void *out) {
  *(const char **)out = v;
  return 0;
}

static int
take_size(const char *v, void *out) {
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (*end || *v == '-' || n == 0 || n > (1ull << 30))
    return -1;
  *(size_t *)out = (size_t)n;
  return 0;
}

/* --www, $LARK_WWW, or <exe dir>/../share/larkbus/www, resolved; "" when
 * there is none (every page is then 404). */
static void
find_www(gw_http *h) {
  char want[PATH_MAX] = "", exe[PATH_MAX];
  const char *w = h->cfg.www ? h->cfg.www : getenv("LARK_WWW");
  ssize_t n;
  if (w && *w)
    snprintf(want, sizeof want, "%s", w);
  else if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
      *slash = 0;
    snprintf(want, sizeof want, "%.*s/../share/larkbus/www",
             (int)(sizeof want - 24), exe);
  }
  if (!want[0] || !realpath(want, h->www))
    h->www[0] = 0;
}

/* What the flags allow; a message and -1 when they do not. */
static int
check(gw_http *h) {
  gw_http_cfg *c = &h->cfg;
  if (!c->http && !c->https)
    return fprintf(stderr, "lark-gateway: give --http or --https\n%s", usage),
           -1;
  if (c->http && !gw_addr_loopback(c->http))
    return fprintf(stderr,
                   "lark-gateway: --http %s refused: plain HTTP listens on "
                   "loopback only (127.0.0.1, ::1, localhost); use --https "
                   "beyond it\n",
                   c->http),
           -1;
  if (c->http && !c->token_file)
    return fprintf(stderr, "lark-gateway: --http needs --token-file\n"), -1;
  if (c->token_file && gw_token_load(h) < 0)
    return fprintf(stderr, "lark-gateway: %s\n", bus_last_error()), -1;
  if (!bus_name_valid(c->token_user, GW_USER_MAX))
    return fprintf(stderr, "lark-gateway: --token-user: not a valid name\n"),
           -1;
  if (c->https && gw_tls_load(h) < 0)
    return fprintf(stderr, "lark-gateway: %s\n", bus_last_error()), -1;
  find_www(h);
  return 0;
}

static int
start(svc *s, bus_view *v, void *ud) {
  gw_http *h = ud;
  if (!h->www[0])
    SVC_LOG(s, SVC_WARN, "-", 0,
            "no dashboard files (--www, $LARK_WWW): "
            "pages answer 404");
  return gw_http_start(h, s, v);
}

static void
stop(svc *s, bus_view *v, void *ud) {
  (void)s, (void)v;
  gw_http_stop(ud);
}

/*
 * The gateway's replies come to _INBOX_<its principal> (the credentials'
 * name: gateway.nk is "gateway"), the prefix its broker policy allows and
 * by which the services record it as the `via` of the events its
 * commands cause. NULL (libbus's default) without credentials.
 */
static const char *
principal_inbox(const svc *s, char *out, size_t cap) {
  if (!s->creds)
    return NULL;
  const char *base = strrchr(s->creds, '/');
  base = base ? base + 1 : s->creds;
  size_t n = strcspn(base, ".");
  if (!n || n > BUS_NAME_MAX)
    return NULL;
  snprintf(out, cap, "_INBOX_%.*s", (int)n, base);
  return out;
}

/* Once connected: a view that disagrees with its embedded views (an OS
 * crash) is removed first, so it is rebuilt from sequence 1. */
static int
run(svc *s, void *ud) {
  const svc_view_opts *o = ud;
  if (gw_view_prepare(s->data) < 0) {
    SVC_LOG(s, SVC_ERROR, "-", 0, "%s: %s", s->data, bus_last_error());
    return -1;
  }
  return svc_run_view(s, o);
}

int
main(int argc, char **argv) {
  static gw_http h;
  static svc s;
  h.cfg.token_user = "admin";
  h.cfg.max_body = 1u << 20;
  const svc_flag flags[] = {{"--http", NULL, take_str, &h.cfg.http},
                            {"--https", NULL, take_str, &h.cfg.https},
                            {"--token-file", NULL, take_str, &h.cfg.token_file},
                            {"--token-user", NULL, take_str, &h.cfg.token_user},
                            {"--tls-cert", NULL, take_str, &h.cfg.tls_cert},
                            {"--tls-key", NULL, take_str, &h.cfg.tls_key},
                            {"--client-ca", NULL, take_str, &h.cfg.client_ca},
                            {"--www", NULL, take_str, &h.cfg.www},
                            {"--max-body", NULL, take_size, &h.cfg.max_body},
                            {"--port-file", NULL, take_str, &h.cfg.port_file},
                            {0}};
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return fputs(usage, stderr), 2; /* as the services answer it */
  if (svc_own_flags(&argc, argv, flags)) {
    fprintf(stderr, "lark-gateway: --max-body takes a byte count (1 to "
                    "1073741824)\n");
    return 2;
  }
  if (check(&h))
    return 2;
  svc_view_opts o = {.ud = &h, .view = &h.view, .start = start, .stop = stop};
  gw_view_def(&o.def);
  int rc = svc_init(&s, "gateway", argc, argv);
  if (rc)
    return rc;
  char inbox[BUS_NAME_MAX + 16];
  s.inbox = principal_inbox(&s, inbox, sizeof inbox);
  svc_signals(&s);
  rc = svc_connect(&s, streams) < 0 ? -1 : run(&s, &o);
  svc_close(&s);
  SVC_LOG(&s, SVC_INFO, "-", 0, "stopped");
  gw_tls_free(&h);
  return rc ? 1 : 0;
}
