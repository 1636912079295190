/*
 * cmd_replay.c - larkctl replay: rebuild a view from the stream.
 *
 *   larkctl replay VIEW [--until-seq N | --until TIME] [--from-snapshot DIR]
 *                       [--out DIR] [--verify] [-o json]
 *
 * Without --out the view is rebuilt into a new temporary directory, which
 * is kept and printed. --verify asks the live service for {seq, digest},
 * rebuilds to that seq and compares: exit 0 when equal, 1 when not. On a
 * terminal a progress line shows how far the rebuild is.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "replay.h"

#define USAGE                                                                  \
  "larkctl replay VIEW [--until-seq N | --until TIME] [--from-snapshot DIR] "  \
  "[--out DIR] [--verify] [-o json]"

typedef struct args {
  const char *view, *out, *snapshot;
  uint64_t until_seq;
  int64_t until_ns;
  int verify;
} args;

static void
progress(uint64_t seq, uint64_t end, uint64_t events, void *ud) {
  (void)ud;
  if (end)
    fprintf(stderr, "\rreplay: seq %llu/%llu (%3.0f%%), %llu events",
            (unsigned long long)seq, (unsigned long long)end,
            100.0 * (double)seq / (double)end, (unsigned long long)events);
  else
    fprintf(stderr, "\rreplay: seq %llu, %llu events", (unsigned long long)seq,
            (unsigned long long)events);
}

static int
parse(int argc, char **argv, args *a) {
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(f, "--until-seq") && has)
      a->until_seq = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(f, "--until") && has) {
      if (cli_parse_time(argv[++i], &a->until_ns) < 0)
        return cli_usage(USAGE);
    } else if (!strcmp(f, "--from-snapshot") && has)
      a->snapshot = argv[++i];
    else if (!strcmp(f, "--out") && has)
      a->out = argv[++i];
    else if (!strcmp(f, "--verify"))
      a->verify = 1;
    else if (f[0] != '-' && !a->view)
      a->view = f;
    else
      return cli_usage(USAGE);
  }
  return a->view ? 0 : cli_usage(USAGE);
}

static void
report(const char *view, const char *dir, const lark_replay_result *r,
       int json) {
  char hex[65];
  bus_digest_hex(r->digest, hex);
  double rate = r->seconds > 0 ? (double)r->events / r->seconds : 0;
  if (json)
    printf("{\"view\":\"%s\",\"out\":\"%s\",\"seq\":%llu,\"events\":%llu,"
           "\"seconds\":%.3f,\"rate\":%.0f,\"digest\":\"%s\"}\n",
           view, dir, (unsigned long long)r->seq, (unsigned long long)r->events,
           r->seconds, rate, hex);
  else
    printf("%s rebuilt to seq %llu: %llu events in %.2f s (%.0f events/s)\n"
           "digest %s\nview   %s\n",
           view, (unsigned long long)r->seq, (unsigned long long)r->events,
           r->seconds, rate, hex, dir);
}

static int
verify(bus_conn *c, const lark_view_entry *ve, const args *a, int json) {
  bus_status live;
  lark_replay_result r;
  int rc = lark_replay_verify(c, ve, a->out, &live, &r);
  if (rc && rc != BUS_ECORRUPT)
    return cli_fail("replay", rc, "verify %s", ve->name);
  char hex[65];
  bus_digest_hex(r.digest, hex);
  if (json)
    printf("{\"view\":\"%s\",\"seq\":%llu,\"live\":\"%s\",\"replay\":\"%s\","
           "\"equal\":%s}\n",
           ve->name, (unsigned long long)live.seq, live.digest, hex,
           rc ? "false" : "true");
  else
    printf("%s at seq %llu: live %s\n%*s replay %s\n%s\n", ve->name,
           (unsigned long long)live.seq, live.digest, (int)strlen(ve->name) + 8,
           "", hex,
           rc ? "MISMATCH: the live view differs from its replay"
              : "verified: the live view equals its replay");
  return rc ? CLI_ERR : CLI_OK;
}

static int
rebuild(bus_conn *c, const lark_view_entry *ve, const args *a, int json) {
  char tmp[512];
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = a->out;
  if (!o.out_dir) {
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/lark-%s-XXXXXX",
             base && *base ? base : "/tmp", ve->name);
    if (!mkdtemp(tmp))
      return cli_fail("replay", -1, "temporary directory");
    o.out_dir = tmp;
  }
  o.from_snapshot = a->snapshot;
  o.until_seq = a->until_seq;
  o.until_ns = a->until_ns;
  if (isatty(2))
    o.progress = progress;
  lark_replay_result r;
  int rc = lark_replay_run(c, ve, &o, &r);
  if (o.progress)
    fputc('\n', stderr);
  if (rc == BUS_EEXISTS)
    return cli_fail("replay", 0,
                    "%s is not empty: replay into a new "
                    "directory",
                    o.out_dir);
  if (rc)
    return cli_fail("replay", rc, "rebuild %s", ve->name);
  report(ve->name, o.out_dir, &r, json);
  return CLI_OK;
}

int
cmd_replay(int argc, char **argv, lark_cli *cli) {
  args a = {0};
  int rc = parse(argc, argv, &a);
  if (rc)
    return rc;
  const lark_view_entry *ve = lark_view_find(a.view);
  if (!ve) {
    fprintf(stderr, "larkctl replay: no view '%s'; views:", a.view);
    for (const lark_view_entry *e = lark_views; e->name; e++)
      fprintf(stderr, " %s", e->name);
    fputc('\n', stderr);
    return CLI_USAGE;
  }
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int json = cli->output == CLI_OUT_JSON;
  rc = a.verify ? verify(c, ve, &a, json) : rebuild(c, ve, &a, json);
  bus_conn_close(c);
  return rc;
}
