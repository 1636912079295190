/*
 * cmd_apply.c - larkctl apply: manifests into the services that own them.
 *
 *   larkctl apply -f FILE [-f FILE ...] [--dry-run] [-o json] [-v]
 *
 * Every document of every file (`-f -` reads stdin) is parsed and checked
 * locally first: its kind, apiVersion and the schema. If any document is
 * invalid, every problem is printed as "FILE doc N line L: path: reason"
 * and nothing is sent (exit 1): a manifest lands whole or not at all as
 * far as local checks can tell. So is a set of files that names one
 * resource twice (even identically) or holds two Jobs deriving one Task
 * or Pod name. Then each resource goes, in file order, to
 * lark.cmd.<user>.<kind>.apply as {key, resource} with a fresh key (shown
 * with -v), and one line per resource tells what happened, kubectl-like:
 * `job.rlinf.io/train-1 created` or `unchanged`, or the service's refusal
 * with each detail. A refusal does not stop the others; the exit code is 1
 * when any failed. The service checks again and is the authority.
 * --dry-run stops after the local checks.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "command_send.h"
#include "manifest.h"

#define USAGE "larkctl apply -f FILE [-f FILE ...] [--dry-run] [-o json]"
#define MAX_FILES 64
#define MAX_ERRS 64

typedef struct apply {
  lark_cli *cli;
  lark_manifest files[MAX_FILES];
  int nfiles;
  int dry_run;
} apply;

static void
print_invalid_json(const lark_manifest *m, const lark_doc *d,
                   const bus_field_err *errs, int n) {
  json_t *o = json_object(), *a = json_array();
  json_object_set_new(o, "file", json_string(m->file));
  json_object_set_new(o, "doc", json_integer(d->index));
  json_object_set_new(o, "kind", json_string(d->kind));
  json_object_set_new(o, "name", json_string(d->name));
  json_object_set_new(o, "result", json_string("invalid"));
  for (int i = 0; i < n && i < MAX_ERRS; i++)
    json_array_append_new(a, json_pack("{s:s, s:s, s:i}", "path", errs[i].path,
                                       "reason", errs[i].reason, "line",
                                       lark_doc_line(d, errs[i].path)));
  json_object_set_new(o, "errors", a);
  cli_put_json(o, "{}");
  json_decref(o);
}

/* Check one document; print its problems. Returns 1 when valid. */
static int
check_doc(const apply *ap, const lark_manifest *m, const lark_doc *d) {
  bus_field_err errs[MAX_ERRS];
  int n = 0;
  if (lark_doc_check(d, errs, MAX_ERRS, &n) == 0)
    return 1;
  if (ap->cli->output == CLI_OUT_JSON)
    print_invalid_json(m, d, errs, n);
  for (int i = 0; i < n && i < MAX_ERRS; i++)
    fprintf(stderr, "%s doc %d line %d: %s: %s\n", m->file, d->index,
            lark_doc_line(d, errs[i].path),
            errs[i].path[0] ? errs[i].path : "(resource)", errs[i].reason);
  if (n > MAX_ERRS)
    fprintf(stderr, "%s doc %d: ... and %d more\n", m->file, d->index,
            n - MAX_ERRS);
  return 0;
}

static int
check_all(const apply *ap) {
  int bad = 0, total = 0;
  for (int f = 0; f < ap->nfiles; f++)
    for (size_t i = 0; i < ap->files[f].ndocs; i++, total++)
      bad += !check_doc(ap, &ap->files[f], &ap->files[f].docs[i]);
  if (total == 0) {
    fprintf(stderr, "larkctl apply: no resources in the files given\n");
    return CLI_ERR;
  }
  if (bad)
    fprintf(stderr,
            "larkctl apply: %d of %d resources invalid: nothing "
            "applied\n",
            bad, total);
  return bad ? CLI_ERR : CLI_OK;
}

static void
print_clash(const char *line, void *ud) {
  (void)ud;
  fprintf(stderr, "%s\n", line);
}

/*
 * Names are unique across the platform, so a set of files that holds one
 * name twice, or two Jobs deriving one Task or Pod name, cannot land
 * whole: refused before anything is sent, rather than half applied with
 * the rest refused (or worse, two Jobs sharing a Pod). An identical
 * document given twice is refused too: it is a mistake more often than
 * not, and "apply once" would hide which copy was meant.
 */
static int
check_clashes(const apply *ap) {
  int n = lark_manifests_clashes(ap->files, ap->nfiles, print_clash, NULL);
  if (n < 0)
    return cli_fail("apply", n, "checking names");
  if (n)
    fprintf(stderr,
            "larkctl apply: %d name%s given or derived twice: "
            "nothing applied\n",
            n, n > 1 ? "s" : "");
  return n ? CLI_ERR : CLI_OK;
}

static int
apply_doc(apply *ap, bus_conn *c, const lark_doc *d) {
  const lark_kind *k = lark_kind_find(d->kind);
  char key[33], what[BUS_DERIVED_NAME_MAX + 32];
  bus_event_new_id(key);
  snprintf(what, sizeof what, "%s.rlinf.io/%s", k->cmd, d->name);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  lark_apply_body(&sb, key, d);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object reply;
  int rc = cli_command(ap->cli, c, k->cmd, "apply", &sb, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  char word[32];
  const char *done =
      rc || err ? "error"
                : cli_reply_outcome(&reply, "created", word, sizeof word);
  if (ap->cli->verbose)
    fprintf(stderr, "%s: key %s\n", what, key);
  if (rc)
    rc = cli_command_fail(ap->cli, "apply", rc, k->cmd, "apply");
  else if (ap->cli->output == CLI_OUT_JSON)
    cli_print_outcome_json(k->cmd, d->name, done, &reply, key);
  else if (err)
    cli_print_refusal("apply", what, err);
  else
    printf("%s %s\n", what, done);
  fflush(stdout);
  msgpack_zone_destroy(&zone);
  msgpack_sbuffer_destroy(&sb);
  return rc || err ? CLI_ERR : CLI_OK;
}

static int
send_all(apply *ap) {
  int rc = CLI_OK;
  if (ap->dry_run) {
    for (int f = 0; f < ap->nfiles; f++)
      for (size_t i = 0; i < ap->files[f].ndocs; i++) {
        const lark_doc *d = &ap->files[f].docs[i];
        if (ap->cli->output == CLI_OUT_JSON)
          cli_print_outcome_json(lark_kind_find(d->kind)->cmd, d->name, "valid",
                                 NULL, NULL);
        else
          printf("%s.rlinf.io/%s valid (dry run)\n",
                 lark_kind_find(d->kind)->cmd, d->name);
      }
    return CLI_OK;
  }
  bus_conn *c = cli_connect(ap->cli);
  if (!c)
    return CLI_ERR;
  for (int f = 0; f < ap->nfiles; f++)
    for (size_t i = 0; i < ap->files[f].ndocs; i++)
      if (apply_doc(ap, c, &ap->files[f].docs[i]) != CLI_OK)
        rc = CLI_ERR;
  bus_conn_close(c);
  return rc;
}

static int
load(apply *ap, const char *path) {
  char err[640];
  if (ap->nfiles == MAX_FILES) {
    fprintf(stderr, "larkctl apply: at most %d files\n", MAX_FILES);
    return CLI_USAGE;
  }
  if (lark_manifest_load(&ap->files[ap->nfiles], path, err, sizeof err)) {
    fprintf(stderr, "larkctl apply: %s\n", err);
    return CLI_ERR;
  }
  ap->nfiles++;
  return CLI_OK;
}

static int
parse_args(apply *ap, int argc, char **argv) {
  int rc = CLI_OK, files = 0;
  for (int i = 1; i < argc && rc == CLI_OK; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-f") || !strcmp(a, "--filename")) && i + 1 < argc) {
      rc = load(ap, argv[++i]);
      files++;
    } else if (!strncmp(a, "--filename=", 11)) {
      rc = load(ap, a + 11);
      files++;
    } else if (!strcmp(a, "--dry-run")) {
      ap->dry_run = 1;
    } else {
      return cli_usage(USAGE);
    }
  }
  return rc == CLI_OK && !files ? cli_usage(USAGE) : rc;
}

int
cmd_apply(int argc, char **argv, lark_cli *cli) {
  apply *ap = calloc(1, sizeof *ap);
  if (!ap)
    return cli_fail("apply", 0, "out of memory");
  ap->cli = cli;
  int rc = parse_args(ap, argc, argv);
  if (rc == CLI_OK)
    rc = check_all(ap);
  if (rc == CLI_OK)
    rc = check_clashes(ap);
  if (rc == CLI_OK)
    rc = send_all(ap);
  for (int f = 0; f < ap->nfiles; f++)
    lark_manifest_free(&ap->files[f]);
  free(ap);
  return rc;
}
