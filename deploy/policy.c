/*
 * policy.c - the security policy: every role's permissions on the broker,
 * one row per subject (docs/design.md section 6). accounts.c renders the
 * accounts file from this table and from nothing else;
 * tests/test_security_hostile.c holds hostile clients of each role against
 * it on a real broker (test_security_*.c: each role's rules), and
 * tests/test_policy.c checks the rendered rules, role by role;
 * tests/test_sites.c holds a site's leaf connection (role site) against
 * hostile servers at the edge.
 *
 * Reading a row: role, what it grants (ALL: no permissions block at all;
 * PUB_ALLOW / PUB_DENY: publish; SUB_ALLOW: subscribe; RESPONSES: may
 * answer requests to any reply subject), the subject, and why. In a
 * subject, %s stands for the principal's name, %k for its nkey public key,
 * %c for its cluster. A row that needs a cluster the principal lacks is
 * left out (a relay registered before relays had one gets no consumer).
 * A name is one subject token (bus_name_valid), a key is base32 and a
 * cluster a name, so no substitution can widen a subject.
 *
 * What no row grants is denied: there is no anonymous user and no
 * no_auth_user (CVE-2023-47090). Deny rows win over allow rows.
 */
#include <string.h>

#include "deploy-int.h"

#define NODE_CONSUMER BUS_NODE_STREAM_PREFIX "%s.edge-%s"
#define ROUTES_RELAY "LARK_ROUTES.relay-%k"
#define EVENTS_RELAY "LARK_EVENTS.relay-%k"
#define ENGINE_RELAY "LARK_EVENTS.relay-engine-%k"
#define GATEWAY_VIEW "LARK_EVENTS.%s"

/* clang-format off */
const lark_rule lark_policy[] = {
  /* ---------------------------------------------------------- admin */
  {LARK_ROLE_ADMIN, LARK_PERM_ALL, NULL,
   "the operator: larkctl up, init, node add, logs, --at; nothing withheld"},

  /* ------------------------------------------------------- services */
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.ev.>",
   "services are the only writers of events (each its own aggregates)"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.run.>",
   "lark-reports and the scheduler append run reports to LARK_RUNS"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.node.>",
   "the scheduler writes each pod's desired state into its node's stream"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.push.>",
   "the same desired states, pushed to the node as core messages just "
   "before they are stored (bus_node_push_subject)"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.log.>",
   "lark-logs republishes pods' output on LARK_LOGS"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.route.>",
   "lark-ipam publishes the DomainPeer routes on LARK_ROUTES"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "lark.sys.>",
   "status and snapshot requests between services"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "$JS.API.>",
   "durable consumers, stream checks, node streams: the whole JetStream API"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "$JS.ACK.>",
   "acks of what they consume; no other role acks a service's consumer"},
  {LARK_ROLE_SERVICE, LARK_PUB_ALLOW, "$JS.FC.>",
   "flow control of their consumers"},
  {LARK_ROLE_SERVICE, LARK_SUB_ALLOW, "lark.cmd.*.>",
   "every user's commands to the kinds a service owns"},
  {LARK_ROLE_SERVICE, LARK_SUB_ALLOW, "lark.sys.>",
   "status and snapshot requests"},
  {LARK_ROLE_SERVICE, LARK_SUB_ALLOW, "_INBOX_%k.>",
   "its own replies, under the inbox prefix libbus sets from its key"},
  {LARK_ROLE_SERVICE, LARK_RESPONSES, NULL,
   "answers commands and status requests on the asker's inbox"},

  /* ---------------------------------------------------------- users */
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "lark.cmd.%s.>",
   "commands as itself only: the subject names the user, services trust it"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "lark.rep.%s.>",
   "run reports (larkctl emit) as itself; lark-reports stamps the name"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "lark.sys.status",
   "larkctl status asks every service"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "lark.sys.status.*",
   "larkctl status asks one service"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "$JS.API.INFO",
   "the account's JetStream state, for status"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "$JS.API.STREAM.NAMES",
   "stream metadata for status and tail"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "$JS.API.STREAM.INFO.*",
   "a stream's bounds, read before tail or get -w"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "$JS.API.DIRECT.GET.LARK_EVENTS",
   "tail, get -w and describe read events by batch direct gets: a user "
   "makes no consumer, whose push deliver subject the broker never checks"},
  {LARK_ROLE_USER, LARK_PUB_ALLOW, "$JS.API.DIRECT.GET.LARK_RUNS",
   "the same for run reports; LARK_LOGS and LARK_INGRESS stay unreadable"},
  {LARK_ROLE_USER, LARK_SUB_ALLOW, "_INBOX_%k.>",
   "answers, direct gets and publish acks come to its own inbox only"},

  /* ------------------------------------------------------ edge nodes */
  {LARK_ROLE_NODE, LARK_PUB_ALLOW, "lark.in.%s.>",
   "its reports, heartbeats and pods' output, into its own ingress"},
  {LARK_ROLE_NODE, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." NODE_CONSUMER ".lark.node.%s.>",
   "its pinned consumer on its own stream: the subject carries name and "
   "filter, so the broker checks both"},
  {LARK_ROLE_NODE, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." NODE_CONSUMER,
   "whether its consumer still exists after a 503 or a reconnection"},
  {LARK_ROLE_NODE, LARK_PUB_ALLOW, "$JS.API.CONSUMER.MSG.NEXT." NODE_CONSUMER,
   "pulls from its consumer"},
  {LARK_ROLE_NODE, LARK_PUB_ALLOW, "$JS.API.CONSUMER.DELETE." NODE_CONSUMER,
   "made anew after a hole in its deliveries"},
  {LARK_ROLE_NODE, LARK_PUB_ALLOW, "$JS.ACK." NODE_CONSUMER ".>",
   "acks of its own slice only"},
  {LARK_ROLE_NODE, LARK_PUB_DENY, "$JS.API.STREAM.MSG.GET.>",
   "no reads by sequence or subject: another node's desired state"},
  {LARK_ROLE_NODE, LARK_PUB_DENY, "$JS.API.DIRECT.GET.>",
   "the same through direct gets"},
  {LARK_ROLE_NODE, LARK_SUB_ALLOW, "_INBOX_%s.>",
   "its replies, under the _INBOX_<node> prefix lark-edge sets"},
  {LARK_ROLE_NODE, LARK_SUB_ALLOW, "lark.dev.%s.>",
   "requests to its own devices (an operator's camera capture); only admin "
   "publishes on lark.dev.>"},
  {LARK_ROLE_NODE, LARK_SUB_ALLOW, "lark.push.%s.>",
   "its own desired states pushed before they are stored; only services "
   "publish on lark.push.>"},
  {LARK_ROLE_NODE, LARK_RESPONSES, NULL,
   "answers those requests on the asker's inbox, one reply each"},

  /* ------------------------------------- node relays (netrelay/) */
  {LARK_ROLE_RELAY, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." ROUTES_RELAY ".lark.route.*.%c.>",
   "an ephemeral pull consumer on its own cluster's route rows and no "
   "other; the broker refuses a body whose filter differs"},
  {LARK_ROLE_RELAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." ROUTES_RELAY,
   "whether its consumer still exists"},
  {LARK_ROLE_RELAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.MSG.NEXT." ROUTES_RELAY,
   "pulls, with no acks"},
  {LARK_ROLE_RELAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.DELETE." ROUTES_RELAY,
   "removes its consumer when it leaves"},
  {LARK_ROLE_RELAY, LARK_PUB_DENY, "$JS.API.STREAM.MSG.GET.>",
   "no reads by sequence or subject"},
  {LARK_ROLE_RELAY, LARK_PUB_DENY, "$JS.API.DIRECT.GET.>",
   "the same through direct gets"},
  {LARK_ROLE_RELAY, LARK_SUB_ALLOW, "_INBOX_%k.>",
   "its replies come to its own inbox"},

  /* ------------------------------------------------- the relay hub */
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." ROUTES_RELAY ".lark.route.>",
   "every cluster's route rows: it joins channels between clusters"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." ROUTES_RELAY,
   "whether its routes consumer still exists"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.MSG.NEXT." ROUTES_RELAY, "pulls routes, with no acks"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.DELETE." ROUTES_RELAY, "removes its routes consumer"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." EVENTS_RELAY ".lark.ev.cert.>",
   "the cert events: it follows revocations live"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." EVENTS_RELAY,
   "whether its cert consumer still exists"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.MSG.NEXT." EVENTS_RELAY, "pulls cert events"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.DELETE." EVENTS_RELAY, "removes its cert consumer"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." ENGINE_RELAY ".lark.ev.engine.>",
   "lark-engine's events, under a name of its own: the Job rule by which it "
   "joins weights channels (nodes and weights addresses)"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." ENGINE_RELAY,
   "whether its engine consumer still exists"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.MSG.NEXT." ENGINE_RELAY, "pulls engine events"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.DELETE." ENGINE_RELAY, "removes its engine consumer"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_DENY, "$JS.API.STREAM.MSG.GET.>",
   "no reads by sequence or subject"},
  {LARK_ROLE_RELAY_HUB, LARK_PUB_DENY, "$JS.API.DIRECT.GET.>",
   "the same through direct gets"},
  {LARK_ROLE_RELAY_HUB, LARK_SUB_ALLOW, "_INBOX_%k.>",
   "its replies come to its own inbox"},

  /* ------------------------------------------------ lark-gateway */
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "lark.cmd.*.>",
   "the one principal that acts for others: commands for the user it "
   "authenticated (token or client certificate), under that user's name; "
   "the event records the user as actor and the gateway as via"},
  {LARK_ROLE_GATEWAY, LARK_PUB_DENY, "lark.cmd.admin.>",
   "never as the admin: verbs reserved to the admin (signing, revoking) "
   "check the actor admin, so the gateway's key must not reach them"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "lark.sys.status",
   "/api/v1/status and /metrics ask every service"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "lark.sys.status.*",
   "and one service"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.CREATE." GATEWAY_VIEW ".>",
   "its view's durable consumer on the events, named as the principal, "
   "like a service's; no other consumer on LARK_EVENTS"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO." GATEWAY_VIEW,
   "whether its consumer still exists"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.DELETE." GATEWAY_VIEW,
   "made anew from its view's applied sequence at start"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW,
   "$JS.API.CONSUMER.MSG.NEXT." GATEWAY_VIEW, "pulls events into its view"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.ACK." GATEWAY_VIEW ".>",
   "acks of its own consumer only"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.DIRECT.GET.LARK_EVENTS",
   "the audit feed and a command's last event, by direct gets as a user "
   "reads them (bus_reader_opts.direct)"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.DIRECT.GET.LARK_RUNS",
   "run reports for the audit feed and the dashboard's charts"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.STREAM.MSG.GET.LARK_EVENTS",
   "a subject's last event where the client asks by STREAM.MSG.GET"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.CREATE.LARK_LOGS",
   "a Job's logs: LARK_LOGS allows no direct gets, so an unnamed ephemeral "
   "AckNone reader; nobody keeps a durable there to disturb"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.INFO.LARK_LOGS.*",
   "whether a logs reader still exists"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.MSG.NEXT.LARK_LOGS.*",
   "pulls log lines"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.CONSUMER.DELETE.LARK_LOGS.*",
   "drops a logs reader when its client leaves"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.INFO",
   "the account's JetStream state, for /metrics"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.STREAM.NAMES",
   "the streams, for /metrics"},
  {LARK_ROLE_GATEWAY, LARK_PUB_ALLOW, "$JS.API.STREAM.INFO.*",
   "stream sizes for /metrics; the last sequence its view waits for"},
  {LARK_ROLE_GATEWAY, LARK_SUB_ALLOW, "_INBOX_%s.>",
   "its replies, under the _INBOX_<name> prefix it sets: the services see "
   "by that prefix that a command came through it (an event's via)"},
  {LARK_ROLE_GATEWAY, LARK_SUB_ALLOW, "lark.sys.status",
   "answers status requests, as a service does"},
  {LARK_ROLE_GATEWAY, LARK_SUB_ALLOW, "lark.sys.status.%s", "its own status"},
  {LARK_ROLE_GATEWAY, LARK_SUB_ALLOW, "lark.sys.snapshot.%s",
   "a compacted copy of its view, as a service makes one"},
  {LARK_ROLE_GATEWAY, LARK_RESPONSES, NULL,
   "answers status and snapshot requests on the asker's inbox"},

  /* Edge sites' leaf connections (role site) have no rows of their own:
   * a site's user gets the node rows above once for each of its nodes,
   * %s standing for the node (accounts.c). nats-server reads a leaf
   * user's rules from the leaf's side - publish is what the site may send
   * to the hub, subscribe what the hub may send to it - so a node's rules
   * read the same through its site, and a site whose server is taken over
   * still gets no other node's subject. */
};
/* clang-format on */

const size_t lark_policy_len = sizeof lark_policy / sizeof lark_policy[0];

/* Every service that gets credentials: one principal of role service each. */
const char *const lark_service_names[] = {
    "lark-catalog", "lark-scheduler", "lark-dag",   "lark-ipam",
    "lark-signer",  "lark-logs",      "lark-relay", "lark-reports",
    "lark-devices", "lark-engine",    NULL};

static const char *const role_names[] = {"admin",   "service", "user",
                                         "node",    "relay",   "relay-hub",
                                         "gateway", "site"};

const char *
lark_role_name(lark_role r) {
  if ((unsigned)r >= sizeof role_names / sizeof role_names[0])
    return NULL;
  return role_names[r];
}

int
lark_role_parse(const char *s, lark_role *r) {
  for (size_t i = 0; i < sizeof role_names / sizeof role_names[0]; i++)
    if (!strcmp(s, role_names[i])) {
      *r = (lark_role)i;
      return 0;
    }
  return BUS_EINVAL;
}
