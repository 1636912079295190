/*
 * brokercfg.h - broker configuration and credentials for larkctl (and the
 * tests): nkey credentials under <data>/creds, the accounts file that gives
 * each role its permissions (docs/design.md section 6), and nats-server configs
 * rendered from the templates in broker-config/.
 *
 * Layout under a data directory:
 *   creds/<name>.nk   a nkey seed file (mode 0600), one per principal
 *   creds/users       the registry: "<name> <role> <public key>" per line,
 *                     and a node relay's cluster after its key
 *
 * Keys are never rotated by these functions: a principal whose seed file
 * exists keeps it. Functions return 0 or a negative code (-errno, BUS_E*);
 * lark_cfg_error() holds a sentence on the last failure of this thread.
 * Nothing here logs or exits.
 */
#ifndef LARK_BROKERCFG_H
#define LARK_BROKERCFG_H

#include <stddef.h>

#include "bus.h"

typedef enum lark_role {
  LARK_ROLE_ADMIN = 0,    /* everything in the LARK account */
  LARK_ROLE_SERVICE = 1,  /* a platform service */
  LARK_ROLE_USER = 2,     /* a person: commands as itself, reads, run logs */
  LARK_ROLE_NODE = 3,     /* an edge node: its own slice only */
  LARK_ROLE_RELAY = 4,    /* a node relay: reads LARK_ROUTES only */
  LARK_ROLE_RELAY_HUB = 5 /* the relay hub: LARK_ROUTES and LARK_EVENTS */
} lark_role;

typedef struct lark_principal {
  char name[BUS_NAME_MAX + 1];
  lark_role role;
  char pub[BUS_NKEY_PUB_LEN + 1];
  char cluster[BUS_NAME_MAX + 1]; /* a relay: the cluster whose routes it
                                     reads; "" for every other role */
} lark_principal;

/* Every service that gets credentials (NULL-terminated). */
extern const char *const lark_service_names[];
/* The services `larkctl up` runs, when their binary exists; the binary is
 * named like the service (NULL-terminated). */
extern const char *const lark_up_services[];
/* The edge runtime's binary, one per node. */
#define LARK_EDGE_BINARY "lark-edge"

/* "admin", "service", "user", "node", "relay", "relay-hub"; NULL for an
 * unknown role. */
const char *lark_role_name(lark_role r);
int lark_role_parse(const char *s, lark_role *r);

/* The last failure on this thread, as a sentence; "" when none. */
const char *lark_cfg_error(void);

/* mkdir -p with mode for every missing component. */
int lark_mkdirs(const char *path, unsigned mode);

/* <data>/creds/<name>.nk into out. BUS_EINVAL if it does not fit. */
int lark_creds_path(const char *data, const char *name, char *out, size_t cap);

/*
 * Make sure principal name exists with role: creates its seed file and
 * registry line when missing, keeps an existing seed (its public key is
 * derived again from it). *created (may be NULL) tells which happened;
 * out (may be NULL) receives the principal. A name registered with
 * another role returns BUS_EEXISTS. BUS_ENAME for an invalid name.
 * LARK_ROLE_RELAY is refused (BUS_EINVAL): use lark_creds_ensure_relay.
 */
int lark_creds_ensure(const char *data, const char *name, lark_role role,
                      lark_principal *out, int *created);

/*
 * The same for a node relay (LARK_ROLE_RELAY) of cluster: its broker
 * rules let it read that cluster's rows of LARK_ROUTES and no other. An
 * existing relay principal keeps its key and takes cluster (its registry
 * line is rewritten when the cluster changed). BUS_ENAME when name or
 * cluster is not a name.
 */
int lark_creds_ensure_relay(const char *data, const char *name,
                            const char *cluster, lark_principal *out,
                            int *created);

/* The registry, in file order. *out is malloc'd (free it); *n may be 0. */
int lark_creds_load(const char *data, lark_principal **out, size_t *n);

/*
 * The accounts file: one account LARK with JetStream, one nkey user per
 * principal with its role's permissions. Written atomically (mode 0600).
 */
int lark_render_accounts(const lark_principal *p, size_t n, const char *path);
/* The same text, malloc'd (free it). */
char *lark_accounts_text(const lark_principal *p, size_t n);

/* Where the templates are: $LARK_BROKER_CONFIG_DIR, else the source
 * checkout's broker-config/, else <prefix>/share/larkbus/broker-config. */
const char *lark_template_dir(void);

typedef struct lark_broker_opts {
  const char *template_dir;  /* NULL: lark_template_dir() */
  const char *server_name;   /* default "lark-1" */
  const char *listen;        /* default "127.0.0.1" */
  int port;                  /* client port; -1: the server picks */
  long max_payload;          /* default BUS_MAX_PAYLOAD */
  const char *store_dir;     /* NULL: the line is left out, for a server
                                given -sd (2.9 refuses both) */
  const char *run_dir;       /* required */
  const char *accounts_file; /* default "accounts.conf" (next to conf) */
  /* single: an optional leaf-node listener for edge sites */
  int leaf_port;         /* 0: none */
  const char *leaf_user; /* the sites' login on the hub */
  const char *leaf_password;
  /* cluster */
  const char *cluster_name; /* default "lark" */
  int cluster_port;
  const int *route_ports; /* every server's route port */
  size_t n_routes;
  const char *route_user;     /* default "lark-route" */
  const char *route_password; /* required for a cluster */
  /* leaf */
  const char *hub_url; /* nats-leaf://site:pw@hub:7422 */
} lark_broker_opts;

void lark_broker_opts_init(lark_broker_opts *o);

/* Render broker-config/<name>.conf.in ("single", "cluster", "leaf") into
 * path (mode 0600). An unknown placeholder or a missing value is
 * BUS_EINVAL, naming it. */
int lark_render_conf(const char *name, const lark_broker_opts *o,
                     const char *path);

/* A random password of 32 hex characters into out[33]. */
void lark_random_password(char out[33]);

/* Parse "90s", "2m", "500ms", "1h", "1d" into nanoseconds; -1 if bad. */
int lark_parse_duration(const char *s, int64_t *ns);

/*
 * Streams: create or update them (bus_streams_ensure) and say, for each,
 * what happened: compared through $JS.API.STREAM.INFO before and after.
 */
enum { LARK_STREAM_UNCHANGED = 0, LARK_STREAM_CREATED, LARK_STREAM_UPDATED };
typedef struct lark_stream_report {
  const char *name;
  int outcome; /* LARK_STREAM_* */
  unsigned long long messages;
  int replicas;
} lark_stream_report;

/* reports has room for every name in bus_stream_names; *n is set. */
int lark_streams_init(bus_conn *c, const bus_streams_opts *o,
                      lark_stream_report *reports, size_t cap, size_t *n);

/* STREAM.INFO for name: messages, replicas; BUS_ENOT_FOUND when missing. */
int lark_stream_info(bus_conn *c, const char *name,
                     unsigned long long *messages, int *replicas,
                     char **config_json);

/*
 * A data directory as `larkctl up` lays it out: the broker's configs in
 * <data>/broker (accounts.conf shared by every server), pid and ports
 * files in <data>/run.
 */
int lark_data_path(const char *data, const char *sub, char *out, size_t cap);

/* Render <data>/broker/accounts.conf from the registry. */
int lark_regen_accounts(const char *data);

/*
 * Ask every nats-server running for data to reload its config (SIGHUP to
 * the pids in <data>/run/lark-*.pid that are nats-server processes).
 * *count (may be NULL) is how many were signalled; 0 is not an error.
 */
int lark_reload_servers(const char *data, int *count);

/* The directory of the running binary (/proc/self/exe): where `larkctl up`
 * and `larkctl status` look for the services' binaries. */
int lark_bin_dir(char *out, size_t cap);
/* 1 if <bin_dir>/<name> is an executable file. */
int lark_bin_exists(const char *bin_dir, const char *name);

/* larkctl only (cmd_init.c): create or update the streams on c and print
 * the outcome per stream; `larkctl up` runs it in-process. */
int cli_init_streams(bus_conn *c, const bus_streams_opts *o, int output);

#endif
