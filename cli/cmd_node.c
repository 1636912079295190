/*
 * cmd_node.c - `larkctl node add NAME | list`: edge node credentials.
 *
 * Adding a node creates its seed (never replacing one that exists),
 * regenerates the accounts file and asks a running broker to reload, so
 * the node can connect at once with exactly its own rights (docs/design.md
 * section 6). The broker keeps running; existing connections stay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "deploy.h"
#include "cli.h"

static const char usage_line[] = "larkctl node add NAME | larkctl node list";

static int
node_add(const char *name, lark_cli *cli) {
  lark_principal p;
  int created = 0, reloaded = 0;
  char path[1024];
  int rc = lark_creds_ensure(cli->data, name, LARK_ROLE_NODE, &p, &created);
  if (rc < 0)
    return cli_fail("node add", 0, "%s", lark_cfg_error());
  if ((rc = lark_regen_accounts(cli->data)) < 0 ||
      (rc = lark_reload_servers(cli->data, &reloaded)) < 0)
    return cli_fail("node add", 0, "%s", lark_cfg_error());
  lark_creds_path(cli->data, name, path, sizeof path);
  printf("node %s %s: %s (%s)\n", name, created ? "added" : "exists", path,
         p.pub);
  if (reloaded)
    printf("broker reloaded (%d server%s)\n", reloaded,
           reloaded > 1 ? "s" : "");
  else
    printf("no broker running for %s: the config applies at the next "
           "`larkctl up`\n",
           cli->data);
  return CLI_OK;
}

static int
node_list(lark_cli *cli) {
  lark_principal *p = NULL;
  size_t n = 0;
  if (lark_creds_load(cli->data, &p, &n) < 0)
    return cli_fail("node list", 0, "%s", lark_cfg_error());
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    if (p[i].role != LARK_ROLE_NODE)
      continue;
    if (cli->output == CLI_OUT_JSON)
      json_array_append_new(a, json_pack("{s:s, s:s}", "name", p[i].name,
                                         "public_key", p[i].pub));
    else
      printf("%-24s %s\n", p[i].name, p[i].pub);
  }
  if (cli->output == CLI_OUT_JSON)
    cli_put_json(a, NULL);
  json_decref(a);
  free(p);
  return CLI_OK;
}

int
cmd_node(int argc, char **argv, lark_cli *cli) {
  if (argc == 3 && !strcmp(argv[1], "add"))
    return node_add(argv[2], cli);
  if (argc == 2 && !strcmp(argv[1], "list"))
    return node_list(cli);
  return cli_usage(usage_line);
}
