/*
 * main.c - lark-signer: the platform's CA on the command path.
 *
 *   lark-signer --url URL --creds FILE --data DIR [--workers N (16)]
 *               [--default-valid DUR] [--max-valid DUR]
 *
 * Commands on lark.cmd.<user>.cert.<verb>: sign and revoke (user admin
 * only), list, show and ca (anyone). A sign appends cert.issued and
 * replies with the certificate; a revoke replies once cert.revoked is
 * stored. The view (DIR/view) is fed by the service loop; after each
 * batch that applied a revocation the CRL and KRL under DIR are rewritten
 * from the committed view, so a revocation reaches the files within one
 * poll (200 ms). Commands run in N worker threads (bus_verbs_serve); the
 * view is only read there.
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "signer.h"
#include "svc.h"

#define NS 1000000000LL
#define MAX_WORKERS 32

static const char *const streams[] = {"LARK_EVENTS", NULL};

typedef struct app {
  svc s;
  bus_view *view;
  signer_ca *ca;
  signer_hook hook;
  signer_limits limits;
  bus_view_def def;
  int workers;
  char viewdir[4096];
} app;

/* The verbs' ud: what they need (env, first), and the app to log in. */
typedef struct app_env {
  signer_env env;
  app *a;
} app_env;

static void
on_cmd(const bus_cmd *cmd, int rc, void *ud) {
  app *a = ((const app_env *)ud)->a;
  SVC_LOG(&a->s, rc ? SVC_INFO : SVC_DEBUG, "lark.cmd.cert", 0, "%s by %s: %s",
          cmd->verb, cmd->user, rc ? bus_strerror(rc) : "ok");
}

static void
rewrite(app *a) {
  int rc = signer_write_revocations(a->view, a->ca, a->s.data);
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.ev.cert.>", 0,
            "writing crl.pem and revoked_keys: %s", bus_strerror(rc));
}

static void
on_batch(const bus_view_stats *st, void *ud) {
  app *a = ud;
  if (a->hook.dirty) {
    a->hook.dirty = 0;
    rewrite(a);
    SVC_LOG(&a->s, SVC_INFO, "lark.ev.cert.>", st->applied_seq,
            "revocation list rewritten");
  }
  svc_log_applied(&a->s, st, &a->s.logged_seq);
}

static int
serve_and_run(app *a) {
  app_env env = {{.ca = a->ca, .limits = &a->limits}, a};
  bus_verbs verbs = signer_verbs;
  verbs.on_done = on_cmd;
  bus_cmd_server *q = NULL;
  int rc = bus_verbs_serve(a->s.conn, &verbs, a->view, &env, a->workers, &q);
  if (!rc) {
    bus_service_opts so;
    svc_service_opts(&a->s, &so, &a->def);
    so.name = "signer";
    so.on_batch = on_batch;
    so.ud = a;
    SVC_LOG(&a->s, SVC_INFO, "lark.ev.cert.>", 0, "running, %d workers",
            a->workers);
    rc = bus_service_run(a->s.conn, a->view, &so);
  }
  bus_cmd_server_stop(q);
  return rc;
}

static int
run(svc *s, void *ud) {
  app *a = ud;
  (void)s;
  int created = 0, published = 0;
  int rc = signer_ca_open(a->s.data, &a->ca, &created);
  if (rc) {
    SVC_LOG(&a->s, SVC_ERROR, "-", 0, "CA in %s: %s (%s)", a->s.data,
            bus_strerror(rc), bus_last_error());
    return rc;
  }
  SVC_LOG(&a->s, SVC_INFO, "-", 0, "CA %s: x509 %s ssh %s",
          created ? "made" : "loaded", signer_ca_x509_fp(a->ca),
          signer_ca_ssh_fp(a->ca));
  signer_view_def(&a->def);
  a->def.ud = &a->hook;
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  snprintf(a->viewdir, sizeof a->viewdir, "%s/view", a->s.data);
  vo.dir = a->viewdir;
  if ((rc = bus_view_open(&a->view, &a->def, &vo)) == 0 &&
      (rc = signer_publish_ca(a->s.conn, a->ca, &published)) == 0) {
    if (published)
      SVC_LOG(&a->s, SVC_INFO, "lark.ev.cert.ca", 0, "CA published");
    rewrite(a);
    rc = serve_and_run(a);
  }
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.ev.cert.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  bus_view_close(a->view);
  signer_ca_free(a->ca);
  return rc;
}

/* A validity: "90s", "15m", "24h", "30d" or seconds, up to ten years. */
static int
validity(const char *v, void *out) {
  int64_t ns;
  if (bus_duration_parse(v, 1e9, &ns) || ns <= 0 || ns > 3650 * 86400 * NS)
    return -1;
  *(int64_t *)out = ns;
  return 0;
}

static int
workers(const char *v, void *out) {
  int n = atoi(v);
  *(int *)out = n;
  return n < 1 || n > MAX_WORKERS ? -1 : 0;
}

/* Take the signer's own flags (and environment) out of argv. */
static int
own_flags(app *a, int *argc, char **argv) {
  const svc_flag flags[] = {
      {"--max-valid", "LARK_SIGNER_MAX_VALID", validity, &a->limits.max_ns},
      {"--default-valid", "LARK_SIGNER_DEFAULT_VALID", validity,
       &a->limits.default_ns},
      {"--workers", NULL, workers, &a->workers},
      {0},
  };
  if (svc_own_flags(argc, argv, flags))
    return -1;
  return a->limits.default_ns <= a->limits.max_ns ? 0 : -1;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  signer_limits_init(&a.limits);
  a.workers = SIGNER_WORKERS;
  if (own_flags(&a, &argc, argv)) {
    fprintf(stderr, "lark-signer: --workers 1..16; --default-valid and "
                    "--max-valid take 90s, 15m, 24h, 30d (default <= max)\n");
    return 2;
  }
  return svc_main_run(&a.s, "signer", argc, argv, streams, run, &a);
}
