/*
 * cmd_wait.c - larkctl wait: block until an object reaches a phase.
 *
 *   larkctl wait KIND NAME --for PHASE [--timeout 30s] [--interval 500ms]
 *                [-o json]
 *
 * Polls `<kind>.describe {name}` and compares the result's `phase` with
 * PHASE. Exit 0 when it is reached; 1 when it can no longer be (the object
 * is in a terminal phase other than PHASE: Succeeded, Failed, Skipped or
 * Stopped) or when the timeout passes first, with a message saying which.
 * Polling rather than following the stream keeps one truth: the service's
 * view, which is also what `get` shows. An object not found yet is waited
 * for (a service may not have applied a fresh `apply` yet), and so is a
 * service that does not answer; both are named at the timeout. --timeout
 * 0 checks once. kubectl's `--for=phase=PHASE` spelling is accepted too.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deploy.h"
#include "kinds.h"
#include "manifest.h"

#define USAGE                                                                  \
  "larkctl wait KIND NAME --for PHASE [--timeout 30s] [--interval 500ms] "     \
  "[-o json]"

typedef struct wait_args {
  char kind[BUS_NAME_MAX + 2];
  const char *name;
  const char *want;
  int64_t timeout_ms, interval_ms;
} wait_args;

/* Last thing seen, for the final message. */
typedef struct seen {
  char phase[64];
  char reason[512];
  int found, answered, rc;
} seen;

static const char *const terminal[] = {"Succeeded", "Failed", "Skipped",
                                       "Stopped", NULL};

/* "10m", "30s", "500ms", "1h", "2d"; a bare number is seconds. */
static int
parse_ms(const char *s, int64_t *ms) {
  int64_t ns;
  if (bus_duration_parse(s, 1e9, &ns) < 0)
    return -1;
  *ms = ns / 1000000;
  return 0;
}

/*
 * The phase of the describe result: `phase`, else under `status`, or
 * under the kind's own key (lark-scheduler answers {job: {phase}, pods,
 * tasks}).
 */
static void
take_phase(const msgpack_object *res, const char *kind, seen *s) {
  const msgpack_object *st = bus_obj_get(res, "status");
  if (!st)
    st = bus_obj_get(res, kind);
  s->phase[0] = s->reason[0] = 0;
  if (!bus_obj_str(res, "phase", s->phase, sizeof s->phase) && st)
    bus_obj_str(st, "phase", s->phase, sizeof s->phase);
  if (!bus_obj_str(res, "reason", s->reason, sizeof s->reason) && st)
    bus_obj_str(st, "reason", s->reason, sizeof s->reason);
}

/*
 * One describe. Returns 0 after filling s (or leaving it when the object
 * is not found or nobody answers), CLI_ERR after printing a refusal other
 * than NOT_FOUND.
 */
static int
poll_once(lark_cli *cli, bus_conn *c, const wait_args *a, seen *s) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_object reply;
  int rc = cli_describe_cmd(cli, c, a->kind, a->name, &zone, &reply);
  s->rc = rc;
  s->answered |= rc == 0;
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  const msgpack_object *res = rc ? NULL : bus_obj_get(&reply, "result");
  char code[32] = "", what[BUS_DERIVED_NAME_MAX + 80];
  if (err)
    bus_obj_str(err, "code", code, sizeof code);
  int out = 0;
  if (err && strcmp(code, "NOT_FOUND")) {
    snprintf(what, sizeof what, "%s/%s", a->kind, a->name);
    cli_print_refusal("wait", what, err);
    out = CLI_ERR;
  } else if (res) {
    s->found = 1;
    take_phase(res, a->kind, s);
  }
  msgpack_zone_destroy(&zone);
  return out;
}

static int
is_terminal(const char *phase) {
  for (const char *const *t = terminal; *t; t++)
    if (!strcmp(phase, *t))
      return 1;
  return 0;
}

static int
report(lark_cli *cli, const wait_args *a, const seen *s, int met,
       const char *why) {
  if (cli->output == CLI_OUT_JSON) {
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:b}", "kind", a->kind, "name", a->name,
                  "for", a->want, "phase", s->phase, "met", met);
    if (s->reason[0])
      json_object_set_new(o, "reason", json_string(s->reason));
    if (!met)
      json_object_set_new(o, "error", json_string(why));
    cli_put_json(o, "{}");
    json_decref(o);
  } else if (met) {
    printf("%s.rlinf.io/%s condition met (phase %s)\n", a->kind, a->name,
           s->phase);
  }
  if (!met)
    fprintf(stderr, "larkctl wait: %s.rlinf.io/%s: %s\n", a->kind, a->name,
            why);
  return met ? CLI_OK : CLI_ERR;
}

static int
timed_out(lark_cli *cli, const wait_args *a, const seen *s) {
  char why[1024];
  char lim[32];
  snprintf(lim, sizeof lim, "%lld.%03llds", (long long)(a->timeout_ms / 1000),
           (long long)(a->timeout_ms % 1000));
  if (!s->answered)
    snprintf(why, sizeof why,
             "timed out after %s: no answer on lark.cmd.%s.%s.describe: is "
             "%s running?",
             lim, cli_user(cli), a->kind, cli_service_of(a->kind));
  else if (!s->found)
    snprintf(why, sizeof why, "timed out after %s: not found", lim);
  else
    snprintf(why, sizeof why,
             "timed out after %s waiting for phase %s (phase is %s%s%s)", lim,
             a->want, s->phase[0] ? s->phase : "none", s->reason[0] ? ": " : "",
             s->reason);
  return report(cli, a, s, 0, why);
}

static int
run(lark_cli *cli, const wait_args *a) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  seen s;
  memset(&s, 0, sizeof s);
  char last[64] = "";
  int64_t deadline = bus_mono_ms() + a->timeout_ms;
  int rc;
  for (;;) {
    if (poll_once(cli, c, a, &s)) {
      rc = CLI_ERR;
      break;
    }
    if (cli->verbose && s.found && strcmp(last, s.phase))
      fprintf(stderr, "%s/%s: phase %s\n", a->kind, a->name, s.phase);
    snprintf(last, sizeof last, "%s", s.phase);
    if (s.found && !strcmp(s.phase, a->want)) {
      rc = report(cli, a, &s, 1, NULL);
      break;
    }
    if (s.found && is_terminal(s.phase)) {
      char why[1024];
      if (s.reason[0])
        snprintf(why, sizeof why,
                 "phase is %s (%s): %s can no longer be "
                 "reached",
                 s.phase, s.reason, a->want);
      else
        snprintf(why, sizeof why, "phase is %s: %s can no longer be reached",
                 s.phase, a->want);
      rc = report(cli, a, &s, 0, why);
      break;
    }
    int64_t left = deadline - bus_mono_ms();
    if (left <= 0) {
      rc = timed_out(cli, a, &s);
      break;
    }
    bus_sleep_ms((int)(left < a->interval_ms ? left : a->interval_ms));
  }
  bus_conn_close(c);
  return rc;
}

/* Accept "Succeeded", "succeeded", "phase=Succeeded". */
static const char *
canonical_phase(const char *s) {
  static const char *const known[] = {"Pending", "Running",  "Succeeded",
                                      "Failed",  "Stopped",  "Skipped",
                                      "Ready",   "NotReady", NULL};
  if (!strncasecmp(s, "phase=", 6))
    s += 6;
  for (const char *const *k = known; *k; k++)
    if (!strcasecmp(s, *k))
      return *k;
  return *s ? s : NULL;
}

static void
set_kind(wait_args *a, const char *typed) {
  const cli_kind *k = cli_kind_find(typed);
  const lark_kind *lk = lark_kind_find(typed);
  if (k)
    snprintf(a->kind, sizeof a->kind, "%s", k->kind);
  else if (lk)
    snprintf(a->kind, sizeof a->kind, "%s", lk->cmd);
  else
    cli_kind_singular(typed, a->kind, sizeof a->kind);
}

static int
parse_args(int argc, char **argv, wait_args *a) {
  const char *kind = NULL;
  for (int i = 1; i < argc; i++) {
    const char *v = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(v, "--for") && has)
      a->want = canonical_phase(argv[++i]);
    else if (!strncmp(v, "--for=", 6))
      a->want = canonical_phase(v + 6);
    else if (!strcmp(v, "--timeout") && has) {
      if (parse_ms(argv[++i], &a->timeout_ms) < 0)
        return -1;
    } else if (!strncmp(v, "--timeout=", 10)) {
      if (parse_ms(v + 10, &a->timeout_ms) < 0)
        return -1;
    } else if (!strcmp(v, "--interval") && has) {
      if (parse_ms(argv[++i], &a->interval_ms) < 0 || a->interval_ms < 10)
        return -1;
    } else if (v[0] != '-' && !kind)
      kind = v;
    else if (v[0] != '-' && !a->name)
      a->name = v;
    else
      return -1;
  }
  if (!kind || !a->name || !a->want || !bus_name_valid(kind, BUS_NAME_MAX))
    return -1;
  set_kind(a, kind);
  return 0;
}

int
cmd_wait(int argc, char **argv, lark_cli *cli) {
  wait_args a;
  memset(&a, 0, sizeof a);
  a.timeout_ms = 30000;
  a.interval_ms = 500;
  if (parse_args(argc, argv, &a) < 0)
    return cli_usage(USAGE);
  if (!bus_name_valid(a.name, BUS_DERIVED_NAME_MAX))
    return cli_fail("wait", 0, "'%s' is not a valid name ([a-z0-9-])", a.name);
  return run(cli, &a);
}
