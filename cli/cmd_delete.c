/*
 * cmd_delete.c - larkctl delete: objects by name, or those a manifest
 * names.
 *
 *   larkctl delete KIND NAME [NAME ...] [-o json]
 *   larkctl delete -f FILE [-f FILE ...] [-o json]
 *
 * Each object is one `<kind>.delete {key, name}` command to the service
 * that owns its kind (job, workflow, node, domain); a later apply of the
 * same name starts a new generation. A node is decommissioned: after its
 * node.deleted its key leaves the brokers too (cli_node_delete). With -f
 * every document must parse, but its spec is not checked: deleting only
 * needs kind and name.
 */
#include <string.h>

#include "cli.h"
#include "manifest.h"

#define USAGE                                                                  \
  "larkctl delete KIND NAME [NAME ...] | delete -f FILE [-f FILE ...] "        \
  "[-o json]"

static const char *const delete_kinds[] = {"job", "workflow", "node", "domain",
                                           NULL};
static const cli_verb delete_verb = {"delete", "deleted", delete_kinds, USAGE};

/* argv for cli_name_verb: "delete KIND NAME" from one document. */
static int
delete_doc(lark_cli *cli, const lark_manifest *m, const lark_doc *d) {
  const lark_kind *k = lark_kind_find(d->kind);
  if (!k || !d->name[0] || strcmp(d->kind, k->kind))
    return cli_fail("delete", 0,
                    "%s doc %d line %d: no kind (%s) and "
                    "metadata.name to delete",
                    m->file, d->index, d->line,
                    "Job, Workflow, Node or Domain");
  char *argv[] = {(char *)"delete", (char *)k->cmd, (char *)d->name, NULL};
  if (!strcmp(k->cmd, "node"))
    return cli_node_delete(cli, d->name);
  return cli_name_verb(cli, 3, argv, &delete_verb);
}

/* delete node NAME...: each through cli_node_delete. */
static int
delete_nodes(lark_cli *cli, int argc, char **argv) {
  int rc = CLI_OK;
  for (int i = 2; i < argc; i++)
    if (argv[i][0] == '-')
      return cli_usage(USAGE);
  for (int i = 2; i < argc; i++)
    if (cli_node_delete(cli, argv[i]) != CLI_OK)
      rc = CLI_ERR;
  return rc;
}

static int
delete_file(lark_cli *cli, const char *path) {
  lark_manifest m;
  char err[640];
  if (lark_manifest_load(&m, path, err, sizeof err)) {
    fprintf(stderr, "larkctl delete: %s\n", err);
    return CLI_ERR;
  }
  int rc = CLI_OK;
  for (size_t i = 0; i < m.ndocs; i++)
    if (delete_doc(cli, &m, &m.docs[i]) != CLI_OK)
      rc = CLI_ERR;
  lark_manifest_free(&m);
  return rc;
}

int
cmd_delete(int argc, char **argv, lark_cli *cli) {
  const lark_kind *k = argc >= 3 ? lark_kind_find(argv[1]) : NULL;
  if (k && !strcmp(k->cmd, "node"))
    return delete_nodes(cli, argc, argv);
  if (argc < 2 || (strcmp(argv[1], "-f") && strcmp(argv[1], "--filename")))
    return cli_name_verb(cli, argc, argv, &delete_verb);
  for (int i = 1; i < argc; i += 2)
    if ((strcmp(argv[i], "-f") && strcmp(argv[i], "--filename")) ||
        i + 1 >= argc)
      return cli_usage(USAGE);
  int rc = CLI_OK;
  for (int i = 2; i < argc; i += 2)
    if (delete_file(cli, argv[i]) != CLI_OK)
      rc = CLI_ERR;
  return rc;
}
