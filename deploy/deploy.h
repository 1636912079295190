/*
 * deploy.h - the deployment part of larkbus: what runs the platform on
 * machines, apart from what talks to it (cli/). larkctl's up, init and
 * node commands, and the tests that start brokers, are thin callers of
 * this library (larkdeploy).
 *
 * What it holds, by file:
 *   policy.c      THE security policy: every role's broker permissions as
 *                 one table, a row per subject with the reason for it
 *                 (docs/design.md section 6)
 *   accounts.c    the accounts file rendered from that table and the
 *                 registry; the reload of running servers
 *   creds.c       the credentials registry: nkey seeds and creds/users
 *   conf.c        nats-server configs from the templates in broker-config/
 *   streams.c     the platform's streams made or updated (`larkctl init`)
 *   supervisor.c  processes kept running: start, restart, stop, logs
 *   up.c          a data directory brought up: lock, credentials, loop
 *   brokers.c     the broker servers: configs, pid files, ports, URL
 *   services.c    the services and edge agents, and when they are ready
 *   relays.c      the pod network: relay hub, node relays, certificates
 *   util.c        errors, files, paths, durations, binaries
 *
 * A data directory, as `larkctl up` lays it out (scripts rely on it):
 *   creds/<name>.nk   a nkey seed file (mode 0600), one per principal
 *   creds/users       the registry: "<name> <role> <public key>" per line,
 *                     and a node relay's cluster after its key
 *   creds/.lock       taken while the registry changes
 *   broker/           accounts.conf (shared by every server), lark-<i>.conf,
 *                     route.pw for a cluster
 *   run/              lark-<i>.pid and the ports file of each broker
 *                     server, up.lock, relay-hub.port
 *   logs/<process>.log  each supervised process's output
 *   views/<service>/  each service's view; store/lark-<i>/ JetStream's
 *   url               the client URL larkctl reads when given none
 *
 * Keys are never rotated by these functions but lark_creds_rotate: a
 * principal whose seed file exists keeps it. Functions return 0 or a negative
 * code (-errno, BUS_E*); lark_cfg_error() holds a sentence on the last failure
 * of this thread, ready to print. Nothing here exits; only the supervisor and
 * `up` print, the lines of `larkctl up` that tell about processes and
 * credentials.
 */
#ifndef LARK_DEPLOY_H
#define LARK_DEPLOY_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bus.h"

typedef enum lark_role {
  LARK_ROLE_ADMIN = 0,     /* everything in the LARK account */
  LARK_ROLE_SERVICE = 1,   /* a platform service */
  LARK_ROLE_USER = 2,      /* a person: commands as itself, reads, run logs */
  LARK_ROLE_NODE = 3,      /* an edge node: its own slice only */
  LARK_ROLE_RELAY = 4,     /* a node relay: reads LARK_ROUTES only */
  LARK_ROLE_RELAY_HUB = 5, /* the relay hub: LARK_ROUTES and LARK_EVENTS */
  LARK_ROLE_GATEWAY = 6,   /* lark-gateway: commands on behalf of the users
                              it authenticated, reads for its view and feeds */
  LARK_ROLE_SITE = 7       /* an edge site's leaf server as the hub sees it:
                              the subjects of the site's nodes only */
} lark_role;

typedef struct lark_principal {
  char name[BUS_NAME_MAX + 1];
  lark_role role;
  char pub[BUS_NKEY_PUB_LEN + 1];
  char cluster[BUS_NAME_MAX + 1]; /* a relay: the cluster whose routes it
                                     reads; "" for every other role */
  char site[BUS_NAME_MAX + 1];    /* a node behind an edge site: the site;
                                     "" otherwise. Not in the registry: set
                                     from <data>/sites (lark_sites_mark) */
} lark_principal;

/* ------------------------------------------------------------ policy */

/* What a row of the policy grants. */
typedef enum lark_perm {
  LARK_PERM_ALL = 0,  /* no permissions block: everything in LARK */
  LARK_PUB_ALLOW = 1, /* may publish on subject */
  LARK_PUB_DENY = 2,  /* may not publish on subject, whatever allows it */
  LARK_SUB_ALLOW = 3, /* may subscribe to subject */
  LARK_RESPONSES = 4  /* may answer requests on any reply subject */
} lark_perm;

/*
 * One row of the policy. In subject, %s stands for the principal's name,
 * %k for its nkey public key, %c for its cluster; NULL for LARK_PERM_ALL
 * and LARK_RESPONSES. why says what the row is for. A site (role site)
 * has no rows: it gets the node rows once per node of the site, %s
 * standing for the node's name (a row without %s once).
 */
typedef struct lark_rule {
  lark_role role;
  lark_perm perm;
  const char *subject;
  const char *why;
} lark_rule;

/* The policy (policy.c), rows grouped by role; what no row grants is
 * denied. lark_accounts_text renders exactly these rows. */
extern const lark_rule lark_policy[];
extern const size_t lark_policy_len;

/* ------------------------------------------------------- credentials */

/* Every service that gets credentials (NULL-terminated). */
extern const char *const lark_service_names[];
/* The services `larkctl up` runs, when their binary exists; the binary is
 * named like the service (NULL-terminated). */
extern const char *const lark_up_services[];
/* lark-gateway's principal (role gateway; its durable consumer and inbox
 * _INBOX_<name> carry the name) and its binary. */
#define LARK_GATEWAY_NAME "gateway"
#define LARK_GATEWAY_BINARY "lark-gateway"
/* The edge runtime's binary, one per node. */
#define LARK_EDGE_BINARY "lark-edge"

/* "admin", "service", "user", "node", "relay", "relay-hub", "gateway"; NULL
 * for an unknown role. */
const char *lark_role_name(lark_role r);
int lark_role_parse(const char *s, lark_role *r);

/* The last failure on this thread, as a sentence; "" when none. */
const char *lark_cfg_error(void);

/* A small file whole into buf (cap bytes with its NUL): its length, or
 * -1 when it cannot be opened. A longer file is cut. */
long lark_read_text(const char *path, char *buf, size_t cap);
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

/*
 * Decommission principal name of role: its registry line and its seed
 * file go (the line first). *removed is 1 when the line was there; a name
 * not in the registry is no error (0, *removed 0), one of another role is
 * BUS_EINVAL. Regenerate the accounts and reload the servers after it.
 */
int lark_creds_remove(const char *data, const char *name, lark_role role,
                      int *removed);

/*
 * A new nkey for principal name of role: its seed file is replaced (a new
 * file renamed over the old one) and its registry line takes the new
 * public key; the old key (into old_pub, may be NULL) is let in until the
 * accounts are regenerated and the servers reloaded. BUS_ENOT_FOUND when
 * name is not registered, BUS_EINVAL when it is another role's.
 */
int lark_creds_rotate(const char *data, const char *name, lark_role role,
                      lark_principal *out, char old_pub[BUS_NKEY_PUB_LEN + 1]);

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

/*
 * Walk a comma-separated list: the item at *p (*item, *len; empty items
 * are items), *p moved past it and its comma. 0 when the list is done.
 *   for (const char *p = list, *it; lark_list_next(&p, &it, &n);)
 */
int lark_list_next(const char **p, const char **item, size_t *len);
/* 1 when every item of the comma-separated list want (NULL: none) is
 * an item of have (NULL: none), else 0. */
int lark_list_covers(const char *have, const char *want);
/* The host of a URL scheme://[user@]HOST[:PORT][/...] (the first n bytes
 * of url; a bare HOST[:PORT] too) into out. 0, or -1 when it has none or
 * it does not fit. */
int lark_url_host(const char *url, size_t n, char *out, size_t cap);

/* A loopback TCP port nobody listens on just now (for a route or client
 * port to give a server), or -1: below the kernel's ephemeral range, so
 * no outgoing connection takes it before the server binds it. */
int lark_free_port(void);
/* The client port in a nats-server ports file (-ports_file_dir):
 * {"nats":["nats://h:p"],...}; 2.9.10 names it "nats", later versions may
 * say "client". -1 when the file is missing or says no such port. */
int lark_ports_file_port(const char *path);

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
  int leaf_port; /* 0: none */
  /* TLS of the leaf connection, both ends (NULL: none): on the hub, its
   * server certificate, and every site must show one from leaf_ca; on a
   * site, the site's client certificate, the hub's checked against ca */
  const char *leaf_cert, *leaf_key, *leaf_ca;
  /* cluster */
  const char *cluster_name; /* default "lark" */
  int cluster_port;
  const int *route_ports; /* every server's route port */
  size_t n_routes;
  const char *route_user;     /* default "lark-route" */
  const char *route_password; /* required for a cluster */
  /* leaf */
  const char *hub_url;   /* the hub's leaf listeners, nats-leaf://hub:7422,
                            comma-separated (one per hub server) */
  const char *leaf_seed; /* the site principal's nkey seed: its login */
} lark_broker_opts;

void lark_broker_opts_init(lark_broker_opts *o);

/* Render broker-config/<name>.conf.in ("single", "cluster", "leaf") into
 * path (mode 0600). An unknown placeholder or a missing value is
 * BUS_EINVAL, naming it. */
int lark_render_conf(const char *name, const lark_broker_opts *o,
                     const char *path);

/* A random password of 32 hex characters into out[33]. */
void lark_random_password(char out[33]);

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

/* STREAM.INFO for name: messages, replicas, its config as JSON, bytes
 * (each out may be NULL); BUS_ENOT_FOUND when missing. */
int lark_stream_info(bus_conn *c, const char *name,
                     unsigned long long *messages, int *replicas,
                     char **config_json, unsigned long long *bytes);

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
 * the pids in <data>/run/lark-*.pid that are nats-server processes, and
 * to the local sites' leaf servers, run/leaf-<site>.pid in each site),
 * and return once each has said in its log (<data>/logs) that it applied
 * it: a connection made after this sees the new users. An error when one
 * said it failed, ended, or said nothing within 30 s. *count (may be
 * NULL) is how many reloaded; 0 is not an error.
 */
int lark_reload_servers(const char *data, int *count);

/* ------------------------------------------------------------- sites */

/*
 * Edge sites (sites.c): a site is a leaf-node nats-server at the edge
 * that dials the hub's leaf listener over TLS (no inbound port at the
 * site); its nodes connect to it. Its files, under <data>/sites/<site>/:
 *
 *   site        its settings: "hub URL", "listen ADDR", "port P",
 *               "dir PATH" (where the directory lives at the site)
 *   nodes       its nodes, one name a line (membership: a node is in one
 *               site at most; the registry says which nodes exist)
 *   leaf.conf   the leaf server's config (0600: holds the site's seed)
 *   accounts.conf  its nodes' users, with the hub's rules for nodes
 *   creds/<node>.nk  each node's seed, for the nodes at the site
 *   tls/cert.pem, key.pem, ca.pem  its client certificate (made by
 *               `larkctl site add` through the signer), the platform CA
 *   run/        the leaf server's (leaf-<site>) pid and ports files
 *
 * The hub knows a site as one principal of role site (its seed in
 * creds/<site>.nk) whose broker rules are its nodes' subjects only.
 * Everything but tls/ is rendered again from the registry and the
 * member lists by lark_regen_accounts: copying the directory to the site
 * and reloading its server (SIGHUP) carries a change there.
 */
typedef struct lark_site_opts {
  const char *hub_url; /* the hub's leaf listeners the site dials (comma-
                          separated: any of them, another when it goes);
                          NULL: keep the site's (required for a new site) */
  const char *listen;  /* where the site's nodes connect; default
                          127.0.0.1 (kept when NULL for an existing site) */
  int port;            /* their port; 0: keep (new: -1, the server picks) */
  const char *dir;     /* the directory's path at the site; NULL: keep
                          (new: <data>/sites/<site>) */
} lark_site_opts;

void lark_site_opts_init(lark_site_opts *o);
/* <data>/sites/<site>[/sub] into out. */
int lark_site_path(const char *data, const char *site, const char *sub,
                   char *out, size_t cap);

/*
 * Make site (or change its settings) and put nodes (n may be 0) in it:
 * the site principal and each node's credentials are made when missing,
 * then the accounts of the hub and every site rendered again
 * (lark_regen_accounts). A node of another site is BUS_EEXISTS; a bad
 * name BUS_ENAME. *added (may be NULL): how many nodes joined.
 */
int lark_site_add(const char *data, const char *site, const char *const *nodes,
                  size_t n, const lark_site_opts *o, int *added);

/*
 * Take node out of every site's member list (a node deleted: added again
 * later, it is in no site until `site add` puts it there). 1 when a site
 * listed it (that site's name into site, cap bytes; may be NULL), 0 when
 * none. Render the accounts (lark_regen_accounts) after it.
 */
int lark_site_forget(const char *data, const char *node, char *site,
                     size_t cap);

/* The sites of data, sorted; *out malloc'd (free it), names of
 * BUS_NAME_MAX + 1 bytes. */
int lark_sites_list(const char *data, char (**out)[BUS_NAME_MAX + 1],
                    size_t *n);
/* The nodes of site that the registry p[0..n) holds, in member-list order,
 * into names (cap of them); their count. */
size_t lark_site_nodes(const char *data, const char *site,
                       const lark_principal *p, size_t n,
                       char (*names)[BUS_NAME_MAX + 1], size_t cap);
/* Set p[i].site for every node listed by a site (and "" for the rest). */
int lark_sites_mark(const char *data, lark_principal *p, size_t n);
/* Every site's accounts.conf, leaf.conf and node seeds from the registry
 * p (marked); called by lark_regen_accounts. */
int lark_sites_render(const char *data, const lark_principal *p, size_t n);
/* A site's client URL, nats://<listen>:<port>, from its settings. */
int lark_site_client_url(const char *data, const char *site, char *out,
                         size_t cap);
/* The hub's leaf listener port, <data>/broker/leaf.port; with make, one
 * is chosen (a free one) and kept when there is none. 0 when none. */
int lark_hub_leaf_port(const char *data, int make);
/* The same for server idx (0-based) of a hub cluster: server 1's is
 * leaf.port, server k's (k > 1) broker/leaf-<k>.port. */
int lark_hub_leaf_port_of(const char *data, int idx, int make);
/* Every hub server's leaf listener on host, "nats-leaf://host:port"
 * comma-separated into out, in server order; 0 when there is none. */
int lark_hub_leaf_urls(const char *data, const char *host, char *out,
                       size_t cap);
/* Where the hub's leaf listener keeps its certificate:
 * <data>/tls/leaf-hub/{cert,key,ca}.pem; 1 if all three exist. */
int lark_hub_leaf_tls(const char *data, char cert[PATH_MAX], char key[PATH_MAX],
                      char ca[PATH_MAX]);

/* The directory of the running binary (/proc/self/exe): where `larkctl up`
 * and `larkctl status` look for the services' binaries. */
int lark_bin_dir(char *out, size_t cap);
/* 1 if <bin_dir>/<name> is an executable file. */
int lark_bin_exists(const char *bin_dir, const char *name);

/* -------------------------------------------------------- supervisor */

enum { LARK_SUP_MAX = 80, LARK_PROC_ARGS = 32, LARK_MAX_SERVERS = 3 };

/* One supervised process. args/argv are its command line (argv[0] the
 * binary's path); pid 0 while it is not running; due_ms, when not 0, is
 * the monotonic time of its next start. */
typedef struct lark_proc {
  char name[BUS_NAME_MAX + 1];
  char args[LARK_PROC_ARGS][PATH_MAX];
  char *argv[LARK_PROC_ARGS + 1];
  int argc;
  char log[PATH_MAX]; /* <data>/logs/<log name>.log, appended to */
  int broker;         /* stopped last, after every other process */
  pid_t pid;
  int restarts, backoff_ms;
  int64_t started_ms, due_ms;
} lark_proc;

typedef struct lark_sup {
  const char *data; /* the data directory: logs go to <data>/logs */
  lark_proc procs[LARK_SUP_MAX];
  size_t n;
} lark_sup;

/* SIGINT and SIGTERM ask every loop here to stop (lark_sup_stopping);
 * SIGPIPE is ignored. */
void lark_sup_catch_signals(void);
int lark_sup_stopping(void);

/* A new process named name, logging to <data>/logs/<log_name>.log; NULL
 * when LARK_SUP_MAX are already there. Add its arguments, then start it. */
lark_proc *lark_sup_add(lark_sup *s, const char *name, const char *log_name);
void lark_proc_arg(lark_proc *k, const char *a);
/* Fork and exec k in its own process group, output to its log, SIGTERM
 * when the supervisor dies. -errno on failure. */
int lark_proc_start(lark_proc *k);
/* k exited with status: print it and plan its restart with backoff (1 s
 * doubling to 30 s, back to 1 s after a minute of good running). */
void lark_proc_died(lark_proc *k, int status);
/* 1 if k has exited (its restart then planned), else 0. */
int lark_proc_gone(lark_proc *k);
/* Collect exited children; restart those whose time has come. */
void lark_sup_reap(lark_sup *s);
void lark_sup_restart_due(lark_sup *s);
/* Stop everything: SIGTERM to every process but the brokers, SIGKILL
 * after 5 s; then the brokers, SIGKILL after 10 s. No restart after. */
void lark_sup_stop_all(lark_sup *s);
/* Wait up to ms for path to exist while k (may be NULL) runs; 0 or -1. */
int lark_wait_file(const char *path, lark_proc *k, int ms);

/* --------------------------------------------------------- larkctl up */

enum { LARK_DATA_MAX = 2048, LARK_MAX_DOMAINS = 8 };

/*
 * The platform on one machine. Set the options after lark_up_init, then
 * call, in this order, each step returning 0 or a negative code with
 * lark_cfg_error() set: lark_up_prepare, lark_up_creds, lark_up_brokers,
 * lark_up_connect (then create the streams on that connection),
 * lark_up_services_start, lark_up_pod_network (with relay),
 * lark_up_gateway_start, lark_up_wait_ready, lark_up_gateway_url; then
 * lark_up_supervise until a signal, and lark_up_stop in every case.
 */
typedef struct lark_up {
  /* options */
  int nodes;             /* local edge agents node-1 .. node-<nodes> */
  int port;              /* client port of the first server; 0: any */
  int cluster;           /* three servers instead of one */
  const char *listen;    /* default 127.0.0.1 */
  int relay;             /* the pod network (root only) */
  unsigned pod_a, pod_b; /* local pods in pod_a.pod_b.<node>.0/24 */
  const char *domains[LARK_MAX_DOMAINS]; /* domain certificates to keep */
  int ndomains;
  const char *device_file; /* absolute; node i of N gets --device-share i/N */
  int gateway_port;        /* lark-gateway's loopback HTTP port; 0: any */
  int no_gateway;          /* do not start lark-gateway */
  int sites;               /* local edge sites site-1..site-<sites>, each
                              its own leaf server; node i sits behind
                              site ((i - 1) mod sites) + 1 */
  /* state */
  char data[LARK_DATA_MAX]; /* absolute path of the data directory */
  char bin_dir[PATH_MAX];   /* where larkctl and the services' binaries are */
  char hub[96];             /* HOST:PORT the node relays dial */
  int wrelay_port[33];      /* with relay: where node i's relay takes its
                               node's weights fetches to other clusters */
  char url[1024];           /* every server's client URL, comma-separated */
  int nservers;             /* hub servers started */
  int routes[LARK_MAX_SERVERS]; /* a cluster's route ports, kept for a
                                   restart with the same configuration */
  char user[BUS_NAME_MAX + 1];  /* the user lark_up_creds made (the actor of
                                   the gateway's login token) */
  char gw_token[65];            /* this run's login token (hex) */
  char gw_port_file[PATH_MAX];  /* <data>/run/gateway.port */
  lark_proc *gw_proc;           /* lark-gateway in sup, or NULL */
  int64_t certs_checked_ms;
  int lock_fd;
  lark_sup sup;
} lark_up;

/* Defaults: 127.0.0.1:4222, pods in 10.88.0.0/16, nothing else. */
void lark_up_init(lark_up *u);
/* Make data and its directories, take run/up.lock (another `up` on the same
 * directory fails, naming its pid), find the binaries. */
int lark_up_prepare(lark_up *u, const char *data);
/* Credentials for admin, every service, the gateway (LARK_GATEWAY_NAME),
 * the user ($USER as a name, else "user", into user[cap]), each node and,
 * with relay, the hub and node relays; then broker/accounts.conf. *made:
 * how many keys are new. */
int lark_up_creds(lark_up *u, int *made, char *user, size_t cap);
/* Render the servers' configs, start them, learn their ports and write
 * <data>/url. */
int lark_up_brokers(lark_up *u);
/* An admin connection once JetStream answers; the caller closes it. */
int lark_up_connect(lark_up *u, bus_conn **out);
/* Start every service (lark_up_services) whose binary exists and one
 * lark-edge per node; their names, comma-separated, into out ("none"). */
int lark_up_services_start(lark_up *u, char *out, size_t cap);
/* With relay: the hub, the domain certificates, the node relays; their
 * names are appended to list, and a line describes the network. */
int lark_up_pod_network(lark_up *u, char *list, size_t cap);
/*
 * lark-gateway (gateway.c), when its binary sits next to larkctl and
 * no_gateway is 0: a fresh login token in <data>/gateway/token (0600),
 * then the gateway on 127.0.0.1:<gateway_port> as principal "gateway"
 * acting for u->user; its name is appended to list.
 */
int lark_up_gateway_start(lark_up *u, char *list, size_t cap);
/* Once the gateway has written its port file (waits up to a minute,
 * restarting what dies): "http://127.0.0.1:PORT/?token=TOKEN" into out;
 * "" when no gateway was started. */
int lark_up_gateway_url(lark_up *u, char *out, size_t cap);
/* Wait up to a minute for every service started to answer its status
 * request, restarting what dies meanwhile. */
int lark_up_wait_ready(lark_up *u);
/* Request domain certificates that are missing or half expired; returns
 * how many requests failed. */
int lark_up_refresh_certs(lark_up *u);
/* Restart what dies, renew certificates, until SIGINT or SIGTERM. */
void lark_up_supervise(lark_up *u);
/* Stop every process (services and edges, then brokers); drop the lock. */
void lark_up_stop(lark_up *u);

#endif
