/*
 * cmd_node.c - `larkctl node add NAME | list | rotate NAME`: edge node
 * credentials, and the node's half of `larkctl delete node NAME`.
 *
 * Adding a node creates its seed (never replacing one that exists),
 * regenerates the accounts file and asks a running broker to reload, so
 * the node can connect at once with exactly its own rights (docs/design.md
 * section 6). The broker keeps running; existing connections stay. On a
 * running broker it also makes the node's stream, so the node finds it at
 * once and a fleet registering together does not wait for the scheduler
 * to make ten thousand streams (the scheduler still makes one that is
 * missing, e.g. after a broker restart: node streams are in memory).
 *
 * Rotating gives the node a new seed in place of its old one; deleting
 * it first asks lark-scheduler (admin only) to append node.deleted, and
 * only when it did, or knows no such node, removes the node's key. Both
 * then regenerate the accounts and reload the brokers: the broker closes
 * a connection whose key it no longer has, so the old key is refused from
 * then on. The order matters for delete: a user the scheduler refuses
 * changes nothing. A registration the node sent before its key went can
 * still be read after the deletion and bring it back (not Ready: it never
 * beats again); once the scheduler has read the ingress past the reload,
 * such a node is deleted again (settle), and nothing more can come from
 * it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "command_send.h"
#include "deploy.h"
#include "cli.h"

/* lark-scheduler's consumer of the nodes' ingress. */
#define INGRESS_CONSUMER "LARK_INGRESS.scheduler-ingress"

static const char usage_line[] =
    "larkctl node add NAME | node list | node rotate NAME";

/* Accounts rendered again from the registry and every running server of
 * data reloaded; prints what happened unless quiet. */
static int
regen_reload(const char *cmd, lark_cli *cli, int quiet, int *servers) {
  int reloaded = 0;
  if (lark_regen_accounts(cli->data) < 0 ||
      lark_reload_servers(cli->data, &reloaded) < 0)
    return cli_fail(cmd, 0, "%s", lark_cfg_error());
  if (servers)
    *servers = reloaded;
  if (quiet)
    return CLI_OK;
  if (reloaded)
    printf("broker reloaded (%d server%s)\n", reloaded,
           reloaded > 1 ? "s" : "");
  else
    printf("no broker running for %s: the config applies at the next "
           "`larkctl up`\n",
           cli->data);
  return CLI_OK;
}

/* The node's stream on the running broker; without it (no `larkctl init`
 * yet, a refusal) the scheduler makes it when the node registers. */
static void
node_stream(const char *name, lark_cli *cli) {
  bus_conn *c = cli_connect(cli);
  if (c && bus_node_stream_ensure(c, name, NULL) < 0)
    fprintf(stderr,
            "larkctl: node add: %s's stream is made when it registers: %s\n",
            name, bus_last_error());
  bus_conn_close(c);
}

static int
node_add(const char *name, lark_cli *cli) {
  lark_principal p;
  int created = 0;
  char path[1024];
  int rc = lark_creds_ensure(cli->data, name, LARK_ROLE_NODE, &p, &created);
  if (rc < 0)
    return cli_fail("node add", 0, "%s", lark_cfg_error());
  lark_creds_path(cli->data, name, path, sizeof path);
  printf("node %s %s: %s (%s)\n", name, created ? "added" : "exists", path,
         p.pub);
  int reloaded = 0;
  rc = regen_reload("node add", cli, 0, &reloaded);
  if (rc == CLI_OK && reloaded)
    node_stream(name, cli);
  return rc;
}

/* A new key for the node; the old one is refused once the servers have
 * reloaded. The node needs the new seed file: where it runs elsewhere,
 * copy it there (its agent reads the file again at each connect). */
static int
node_rotate(const char *name, lark_cli *cli) {
  lark_principal p;
  char old[BUS_NKEY_PUB_LEN + 1], path[1024];
  if (lark_creds_rotate(cli->data, name, LARK_ROLE_NODE, &p, old) < 0)
    return cli_fail("node rotate", 0, "%s", lark_cfg_error());
  lark_creds_path(cli->data, name, path, sizeof path);
  printf("node %s rotated: %s (%s); key %s retired\n", name, path, p.pub, old);
  return regen_reload("node rotate", cli, 0, NULL);
}

/* Ask lark-scheduler for node.deleted: 1 deleted, 0 it knows no such
 * node, -1 refused (printed) or no answer. */
static int
node_delete_event(lark_cli *cli, const char *name, char key[33]) {
  char what[BUS_NAME_MAX + 32], code[32] = "";
  snprintf(what, sizeof what, "node.rlinf.io/%s", name);
  bus_conn *c = cli_connect(cli);
  if (!c)
    return -1;
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_event_new_id(key);
  lark_name_body(&b.sb, key, name);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_object reply;
  int rc = cli_command(cli, c, "node", "delete", &b.sb, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  if (rc) {
    cli_command_fail(cli, "delete", rc, "node", "delete");
    rc = -1;
  } else if (err &&
             strcmp(bus_obj_str(err, "code", code, sizeof code) ? code : "",
                    "NOT_FOUND")) {
    cli_print_refusal("delete", what, err);
    rc = -1;
  } else
    rc = err ? 0 : 1;
  msgpack_zone_destroy(&zone);
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
  return rc;
}

/* How far in LARK_INGRESS lark-scheduler has handled everything (its
 * ingress consumer's ack floor), or -1 when it does not say. */
static int64_t
ingress_handled(bus_conn *c) {
  void *r = NULL;
  size_t n = 0;
  if (bus_conn_request(c, "$JS.API.CONSUMER.INFO." INGRESS_CONSUMER, "", 0,
                       2000, &r, &n))
    return -1;
  json_t *j = json_loadb(r, n, 0, NULL);
  json_t *seq = json_object_get(json_object_get(j, "ack_floor"), "stream_seq");
  int64_t at = json_is_integer(seq) ? (int64_t)json_integer_value(seq) : -1;
  json_decref(j);
  free(r);
  return at;
}

/*
 * A registration the node sent just before its key went, and still
 * unread in the ingress when node.deleted was applied, registers the node
 * again. Once the scheduler has handled everything the ingress held when
 * the brokers reloaded (up to 10 s), the node is deleted again if it is
 * back; nothing can come from it after that.
 */
static int
settle(lark_cli *cli, const char *name) {
  char key[33];
  uint64_t cut = 0;
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int64_t at = bus_stream_last_seq(c, "LARK_INGRESS", &cut) ? -1 : 0;
  for (int64_t until = bus_mono_ms() + 10000;
       at >= 0 && (uint64_t)at < cut && bus_mono_ms() < until;
       bus_sleep_ms(100))
    at = ingress_handled(c);
  bus_conn_close(c);
  int again = node_delete_event(cli, name, key);
  if (again > 0 && cli->output != CLI_OUT_JSON)
    printf("node.rlinf.io/%s registered again from before its deletion: "
           "deleted again\n",
           name);
  return again < 0 ? CLI_ERR : CLI_OK;
}

/* What delete node did: the event, the key, the site it left (NULL:
 * none), whose directory carries the change to the site. */
static void
say_deleted(lark_cli *cli, const char *name, const char *key, int ev,
            int removed, const char *site) {
  if (cli->output == CLI_OUT_JSON) {
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "kind", "node", "name",
                          name, "result", ev ? "deleted" : "unchanged", "key",
                          key, "credentialsRemoved", removed);
    if (site)
      json_object_set_new(o, "site", json_string(site));
    cli_put_json(o, "{}");
    json_decref(o);
    return;
  }
  printf("node.rlinf.io/%s %s\n", name,
         ev ? "deleted" : "unknown to the scheduler");
  printf(removed ? "credentials of %s removed from %s/creds\n"
                 : "no credentials of %s in %s/creds: remove them where "
                   "the broker's accounts are made\n",
         name, cli->data);
  if (site)
    printf("%s left site %s: copy %s/sites/%s to the site and reload its "
           "leaf server (a local one is reloaded now)\n",
           name, site, cli->data, site);
}

int
cli_node_delete(lark_cli *cli, const char *name) {
  char key[33];
  int removed = 0;
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return cli_fail("delete", 0,
                    "node.rlinf.io/%s: not a valid name "
                    "([a-z0-9-])",
                    name);
  int ev = node_delete_event(cli, name, key);
  if (ev < 0)
    return CLI_ERR;
  char site[BUS_NAME_MAX + 1];
  int left = 0;
  if (lark_creds_remove(cli->data, name, LARK_ROLE_NODE, &removed) < 0 ||
      (left = lark_site_forget(cli->data, name, site, sizeof site)) < 0)
    return cli_fail("delete", 0, "%s", lark_cfg_error());
  if (!ev && !removed && !left)
    return cli_fail("delete", 0,
                    "node.rlinf.io/%s: no such node, in the "
                    "scheduler or in %s/creds",
                    name, cli->data);
  say_deleted(cli, name, key, ev, removed, left ? site : NULL);
  if (!removed && !left)
    return CLI_OK;
  int rc = regen_reload("delete", cli, cli->output == CLI_OUT_JSON, NULL);
  return rc == CLI_OK ? settle(cli, name) : rc;
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
  if (argc == 3 && !strcmp(argv[1], "rotate"))
    return node_rotate(argv[2], cli);
  return cli_usage(usage_line);
}
