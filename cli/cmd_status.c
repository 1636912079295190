/*
 * cmd_status.c - `larkctl status`: the broker, the streams, each service.
 *
 * One request on lark.sys.status gathers every service's record at once
 * (bus_conn_gather). The expected services are those `larkctl up` would
 * run: the ones whose binary sits next to larkctl. A service is up when
 * it answered within the window; the exit code is 0 only when every
 * expected service is up. The broker describes itself through the
 * system account's $SYS.REQ.SERVER.PING.CONNZ, which every account may
 * call; the stream counts come from $JS.API.STREAM.INFO. Credentials that
 * may not send that request (a user's) still see the version of the
 * server they reach: from the INFO line it sends any TCP client.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "deploy.h"
#include "cli.h"

enum { MAX_SERVICES = 64, MAX_SERVERS = 8 };

typedef struct svc_row {
  bus_status st;
  int expected, up;
} svc_row;

typedef struct server_row {
  char name[64], version[32];
  int jetstream;
} server_row;

typedef struct status_ctx {
  svc_row rows[MAX_SERVICES];
  size_t n;
  server_row servers[MAX_SERVERS];
  size_t nservers;
} status_ctx;

static const char usage_line[] = "larkctl status [--wait DURATION] [-o json]";

static svc_row *
row_for(status_ctx *x, const char *name) {
  for (size_t i = 0; i < x->n; i++)
    if (!strcmp(x->rows[i].st.name, name))
      return &x->rows[i];
  if (x->n == MAX_SERVICES)
    return NULL;
  svc_row *r = &x->rows[x->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->st.name, sizeof r->st.name, "%s", name);
  return r;
}

static void
on_status(const void *data, size_t len, void *ud) {
  bus_status st;
  if (bus_status_decode(data, len, &st) < 0 || !st.name[0])
    return;
  svc_row *r = row_for(ud, st.name);
  if (!r)
    return;
  r->st = st;
  r->up = 1;
}

static void
on_server(const void *data, size_t len, void *ud) {
  status_ctx *x = ud;
  json_t *j = json_loadb(data, len, 0, NULL);
  json_t *srv = json_object_get(j, "server");
  if (srv && x->nservers < MAX_SERVERS) {
    server_row *s = &x->servers[x->nservers++];
    const char *name = json_string_value(json_object_get(srv, "name"));
    const char *ver = json_string_value(json_object_get(srv, "ver"));
    snprintf(s->name, sizeof s->name, "%s", name ? name : "?");
    snprintf(s->version, sizeof s->version, "%s", ver ? ver : "?");
    s->jetstream = json_is_true(json_object_get(srv, "jetstream"));
  }
  json_decref(j);
}

/* Connect to host:port (the first of url's servers) and read one line. */
static int
first_line(const char *url, char *line, size_t cap) {
  char host[256], port[16] = "4222";
  const char *p = strstr(url, "://") ? strstr(url, "://") + 3 : url;
  const char *at = strchr(p, '@'), *end = p + strcspn(p, ",");
  if (at && at < end)
    p = at + 1;
  size_t hl = strcspn(p, ":,");
  snprintf(host, sizeof host, "%.*s", (int)(hl < sizeof host ? hl : 0), p);
  if (p[hl] == ':')
    snprintf(port, sizeof port, "%.*s", (int)strcspn(p + hl + 1, ",/"),
             p + hl + 1);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(host, port, &hints, &ai) != 0)
    return -1;
  int fd = socket(ai->ai_family, ai->ai_socktype, 0);
  struct timeval tv = {2, 0};
  size_t len = 0;
  if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) &&
      !setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) &&
      !connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    ssize_t r;
    while (len + 1 < cap && !memchr(line, '\n', len) &&
           (r = read(fd, line + len, cap - 1 - len)) > 0)
      len += (size_t)r;
  }
  line[len] = 0;
  if (fd >= 0)
    close(fd);
  freeaddrinfo(ai);
  return strncmp(line, "INFO ", 5) ? -1 : 0;
}

/* The server's INFO, sent before any authentication: its name, version
 * and whether JetStream is on. nats.c 3.4.1 keeps the INFO it got to
 * itself, so this asks the same server again on a plain socket. */
static void
info_server(const char *url, status_ctx *x) {
  char line[8192];
  if (x->nservers || first_line(url, line, sizeof line) < 0)
    return;
  json_t *info = json_loads(line + 5, JSON_DISABLE_EOF_CHECK, NULL);
  const char *name = json_string_value(json_object_get(info, "server_name"));
  const char *ver = json_string_value(json_object_get(info, "version"));
  if (ver) {
    server_row *s = &x->servers[x->nservers++];
    snprintf(s->name, sizeof s->name, "%s", name ? name : "?");
    snprintf(s->version, sizeof s->version, "%s", ver);
    s->jetstream = json_is_true(json_object_get(info, "jetstream"));
  }
  json_decref(info);
}

static void
expect_services(status_ctx *x) {
  char dir[1024];
  if (lark_bin_dir(dir, sizeof dir) < 0)
    return;
  for (size_t i = 0; lark_up_services[i]; i++)
    if (lark_bin_exists(dir, lark_up_services[i])) {
      /* a service answers with its view's name: lark-catalog is catalog */
      const char *name = lark_up_services[i];
      svc_row *r = row_for(x, strncmp(name, "lark-", 5) ? name : name + 5);
      if (r)
        r->expected = 1;
    }
}

static json_t *
streams_json(bus_conn *c) {
  json_t *a = json_array();
  for (size_t i = 0; bus_stream_names[i]; i++) {
    unsigned long long msgs = 0;
    int replicas = 0;
    int rc =
        lark_stream_info(c, bus_stream_names[i], &msgs, &replicas, NULL, NULL);
    json_array_append_new(
        a, rc < 0 ? json_pack("{s:s, s:b, s:s}", "name", bus_stream_names[i],
                              "exists", 0, "error", lark_cfg_error())
                  : json_pack("{s:s, s:b, s:I, s:i}", "name",
                              bus_stream_names[i], "exists", 1, "messages",
                              (json_int_t)msgs, "replicas", replicas));
  }
  return a;
}

/* How many node streams (LARK_NODE_<node>) there are; -1 when unknown. */
static json_int_t
node_streams(bus_conn *c) {
  static const char q[] = "{\"subject\":\"lark.node.>\"}";
  void *reply = NULL;
  size_t len = 0;
  if (bus_conn_request(c, "$JS.API.STREAM.NAMES", q, sizeof q - 1, 2000, &reply,
                       &len) < 0)
    return -1;
  json_t *j = json_loadb(reply, len, 0, NULL);
  free(reply);
  json_t *total = json_object_get(j, "total");
  json_int_t n = json_is_integer(total) ? json_integer_value(total) : -1;
  json_decref(j);
  return n;
}

static json_t *
services_json(const status_ctx *x, int *all_up) {
  json_t *a = json_array();
  *all_up = 1;
  for (size_t i = 0; i < x->n; i++) {
    const svc_row *r = &x->rows[i];
    if (r->expected && (!r->up || strcmp(r->st.state, "up")))
      *all_up = 0;
    json_t *o =
        json_pack("{s:s, s:s, s:b}", "name", r->st.name, "state",
                  r->up ? r->st.state : "down", "expected", r->expected);
    if (r->up && r->st.why[0])
      json_object_set_new(o, "why", json_string(r->st.why));
    if (r->up && r->st.version[0])
      json_object_set_new(o, "version", json_string(r->st.version));
    if (r->up)
      json_object_set_new(o, "repositions",
                          json_integer((json_int_t)r->st.repositions));
    if (r->up)
      json_object_update_new(
          o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "seq",
                       (json_int_t)r->st.seq, "lag", (json_int_t)r->st.lag,
                       "applied", (json_int_t)r->st.applied, "stale",
                       (json_int_t)r->st.stale, "rejected",
                       (json_int_t)r->st.rejected, "outbox",
                       (json_int_t)r->st.outbox, "digest", r->st.digest));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *
broker_json(const status_ctx *x, const char *url) {
  json_t *servers = json_array();
  for (size_t i = 0; i < x->nservers; i++)
    json_array_append_new(servers, json_pack("{s:s, s:s, s:b}", "name",
                                             x->servers[i].name, "version",
                                             x->servers[i].version, "jetstream",
                                             x->servers[i].jetstream));
  return json_pack("{s:s, s:o}", "url", url, "servers", servers);
}

static void
print_text(json_t *broker, json_t *streams, json_int_t nodes,
           json_t *services) {
  size_t i;
  json_t *v;
  printf("broker  %s\n", json_string_value(json_object_get(broker, "url")));
  json_array_foreach(json_object_get(broker, "servers"), i, v)
      printf("  server %-10s nats-server %s, JetStream %s\n",
             json_string_value(json_object_get(v, "name")),
             json_string_value(json_object_get(v, "version")),
             json_is_true(json_object_get(v, "jetstream")) ? "on" : "off");
  json_array_foreach(streams, i, v) {
    if (json_is_true(json_object_get(v, "exists")))
      printf("  stream %-13s %lld messages, replicas %lld\n",
             json_string_value(json_object_get(v, "name")),
             json_integer_value(json_object_get(v, "messages")),
             json_integer_value(json_object_get(v, "replicas")));
    else
      printf("  stream %-13s missing (run `larkctl init`)\n",
             json_string_value(json_object_get(v, "name")));
  }
  if (nodes >= 0)
    printf("  stream %-13s %lld, one per node the scheduler knows\n",
           "LARK_NODE_*", (long long)nodes);
  printf("%-16s %-8s %10s %8s %7s %8s  %s\n", "SERVICE", "STATE", "SEQ", "LAG",
         "STALE", "REJECTED", "DIGEST");
  json_array_foreach(services, i, v) {
    const char *name = json_string_value(json_object_get(v, "name"));
    if (!json_is_true(json_object_get(v, "expected")) &&
        !json_object_get(v, "seq"))
      continue;
    if (!json_object_get(v, "seq")) {
      printf("%-16s %-8s\n", name, "down");
      continue;
    }
    printf("%-16s %-8s %10lld %8lld %7lld %8lld  %.12s\n", name,
           json_string_value(json_object_get(v, "state")),
           json_integer_value(json_object_get(v, "seq")),
           json_integer_value(json_object_get(v, "lag")),
           json_integer_value(json_object_get(v, "stale")),
           json_integer_value(json_object_get(v, "rejected")),
           json_string_value(json_object_get(v, "digest")));
    if (json_object_get(v, "why"))
      printf("  %s\n", json_string_value(json_object_get(v, "why")));
  }
}

/* The broker's servers (who they are, their versions) and every service's
 * status record; returns the status gather's result. */
static int
probe(lark_cli *cli, bus_conn *c, int wait_ms, status_ctx *x) {
  expect_services(x);
  bus_conn_gather(c, "$SYS.REQ.SERVER.PING.CONNZ", "{}", 2, 300, on_server, x);
  info_server(cli->url, x);
  return bus_conn_gather(c, "lark.sys.status", "", 0, wait_ms, on_status, x);
}

int
cli_status_probe(lark_cli *cli, bus_conn *c, int wait_ms, json_t **broker,
                 json_t **services) {
  int all_up;
  status_ctx *x = calloc(1, sizeof *x);
  *broker = *services = NULL;
  if (!x)
    return -ENOMEM;
  int rc = probe(cli, c, wait_ms, x);
  *broker = broker_json(x, cli->url);
  *services = services_json(x, &all_up);
  free(x);
  return rc;
}

static int
parse_args(int argc, char **argv, int *wait_ms) {
  for (int i = 1; i < argc; i++) {
    int64_t ns;
    if (!strcmp(argv[i], "--wait") && i + 1 < argc &&
        bus_duration_parse(argv[++i], 0, &ns) == 0 && ns > 0) {
      *wait_ms = (int)(ns / 1000000);
      continue;
    }
    return -1;
  }
  return 0;
}

int
cmd_status(int argc, char **argv, lark_cli *cli) {
  int wait_ms = 1500, all_up = 0;
  if (parse_args(argc, argv, &wait_ms) < 0)
    return cli_usage(usage_line);
  status_ctx *x = calloc(1, sizeof *x);
  if (!x)
    return cli_fail("status", -12, "out of memory");
  bus_conn *c = cli_connect(cli);
  if (!c) {
    free(x);
    return CLI_ERR;
  }
  /* A failed gather is reported but read as "nobody answered": the
   * broker and streams below are still worth showing. */
  int rc = probe(cli, c, wait_ms, x);
  if (rc == BUS_EDENIED) { /* not "every service down": nobody was asked */
    bus_conn_close(c);
    free(x);
    return cli_fail("status", 0,
                    "permission denied: these credentials may not ask "
                    "lark.sys.status (see larkctl --creds or $LARK_CREDS)");
  }
  if (rc < 0 && cli->verbose)
    cli_fail("status", rc, "asking the services");
  json_t *broker = broker_json(x, cli->url);
  json_t *streams = streams_json(c);
  json_int_t nodes = node_streams(c);
  json_t *services = services_json(x, &all_up);
  if (cli->output == CLI_OUT_JSON) {
    json_t *all = json_pack("{s:o, s:o, s:I, s:o, s:b}", "broker", broker,
                            "streams", streams, "node_streams", nodes,
                            "services", services, "ok", all_up);
    cli_put_json(all, NULL);
    json_decref(all);
  } else {
    print_text(broker, streams, nodes, services);
    json_decref(broker);
    json_decref(streams);
    json_decref(services);
  }
  bus_conn_close(c);
  free(x);
  return all_up ? CLI_OK : CLI_ERR;
}
