/*
 * hostile.c - a hostile `user` client, with the credentials `larkctl up`
 * made for the machine's user (role user in <data>/creds/users).
 *
 * Two connections: a listener subscribed wherever it may try (`_INBOX.>`,
 * `lark.>`, every other principal's own inbox `_INBOX_<key>.>` from the
 * registry, each node's `_INBOX_<node>.>`), and a puller that asks every
 * consumer it can name for a message: each service's durable on
 * LARK_EVENTS, the ingress consumers, each edge node's pinned consumer.
 * The puller's replies come to an inbox of its own whose prefix the
 * listener knows and ignores: `_INBOX_<user key>` when the broker lets
 * the user read there, else `_INBOX.hostile`; which one works is found
 * with a status request (a control: every user may ask it), asked again
 * each cycle to show the user still gets answers. What it counts:
 * - pulls answered at all (the broker took a user's pull on a consumer
 *   that is not the user's) and pulls that returned an event: a stolen
 *   event is one the service itself does not get until its ack wait;
 * - on `_INBOX.>`, JetStream deliveries (reply `$JS.ACK.<stream>.
 *   <consumer>...`) meant for other clients, and any other reply meant
 *   for another client;
 * - anything at all on `lark.>`, which a user may not subscribe to.
 * The first leak is kept, word for word, for the report.
 */
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct principal {
  char name[128], role[32], key[64];
} principal;

enum { MAX_PRINCIPALS = 64 };

typedef struct hostile {
  fh *h;
  char own[128]; /* the puller's inbox prefix */
  principal p[MAX_PRINCIPALS];
  int np, user;
} hostile;

static void
note_leak(fh *h, const char *fmt, const char *a, const char *b) {
  if (!h->n.first_leak[0])
    snprintf(h->n.first_leak, sizeof h->n.first_leak, fmt, a, b);
}

static void
on_inbox(bus_conn *c, const char *subject, const char *reply, const void *data,
         size_t len, void *ud) {
  (void)c, (void)data, (void)len;
  hostile *x = ud;
  fh *h = x->h;
  size_t ol = strlen(x->own);
  if (!strncmp(subject, x->own, ol) && subject[ol] == '.')
    return;
  pthread_mutex_lock(&h->mu);
  if (reply && !strncmp(reply, "$JS.ACK.", 8)) {
    h->n.inbox_deliveries++;
    note_leak(h, "overheard on %s a delivery acked by %.80s", subject, reply);
  } else {
    h->n.inbox_other++;
  }
  pthread_mutex_unlock(&h->mu);
}

static void
on_lark(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  (void)c, (void)reply, (void)data, (void)len;
  fh *h = ((hostile *)ud)->h;
  pthread_mutex_lock(&h->mu);
  h->n.lark_msgs++;
  note_leak(h, "received %s%s on a lark.> subscription", subject, "");
  pthread_mutex_unlock(&h->mu);
}

/* The registry <data>/creds/users: name, role, key per line. */
static int
read_principals(hostile *x) {
  char path[PATH_MAX + 16], line[1024];
  snprintf(path, sizeof path, "%s/creds/users", x->h->data);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  x->user = -1;
  while (x->np < MAX_PRINCIPALS && fgets(line, sizeof line, f)) {
    principal *p = &x->p[x->np];
    if (line[0] == '#' ||
        sscanf(line, "%127s %31s %63s", p->name, p->role, p->key) != 3)
      continue;
    if (!strcmp(p->role, "user") && x->user < 0)
      x->user = x->np;
    x->np++;
  }
  fclose(f);
  return x->user < 0 ? -1 : 0;
}

/* A status request, which every user may send: 0 when answered. */
static int
control(fh *h, bus_conn *c) {
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(c, "lark.sys.status", "", 0, 2000, &reply, &len);
  free(reply);
  pthread_mutex_lock(&h->mu);
  h->n.controls++;
  h->n.controls_ok += rc == 0;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* The puller, on the first inbox prefix whose replies reach it. */
static bus_conn *
open_hand(hostile *x) {
  const principal *u = &x->p[x->user];
  char mine[128];
  snprintf(mine, sizeof mine, "_INBOX_%s", u->key);
  const char *tries[] = {mine, "_INBOX.hostile"};
  for (int i = 0; i < 2; i++) {
    bus_conn *c = fh_connect(x->h, u->name, tries[i], 0);
    if (c && control(x->h, c) == 0) {
      snprintf(x->own, sizeof x->own, "%s", tries[i]);
      return c;
    }
    bus_conn_close(c);
  }
  snprintf(x->own, sizeof x->own, "%s", mine);
  fh_log(x->h, "hostile: no reply reaches user %s at any inbox", u->name);
  return fh_connect(x->h, u->name, mine, 0);
}

/* Subscribe wherever a user might listen; s gets the handles. */
static int
listen_everywhere(hostile *x, bus_conn *ear, bus_serve **s, int cap) {
  char subj[160];
  int n = 0;
  bus_conn_serve(ear, "_INBOX.>", NULL, on_inbox, x, &s[n++]);
  bus_conn_serve(ear, "lark.>", NULL, on_lark, x, &s[n++]);
  for (int i = 0; i < x->np && n < cap - x->h->nodes; i++) {
    if (i == x->user)
      continue;
    snprintf(subj, sizeof subj, "_INBOX_%s.>", x->p[i].key);
    bus_conn_serve(ear, subj, NULL, on_inbox, x, &s[n++]);
  }
  for (int i = 1; i <= x->h->nodes; i++) {
    snprintf(subj, sizeof subj, "_INBOX_node-%d.>", i);
    bus_conn_serve(ear, subj, NULL, on_inbox, x, &s[n++]);
  }
  return n;
}

/* One pull of one message from stream's consumer, as the user. */
static void
pull(fh *h, bus_conn *c, const char *stream, const char *consumer) {
  static const char body[] = "{\"batch\":1,\"no_wait\":true}";
  char subject[256];
  void *reply = NULL;
  size_t len = 0;
  snprintf(subject, sizeof subject, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream,
           consumer);
  int rc =
      bus_conn_request(c, subject, body, sizeof body - 1, 500, &reply, &len);
  free(reply);
  pthread_mutex_lock(&h->mu);
  h->n.pulls++;
  if (rc < 0) {
    h->n.pulls_denied++;
  } else {
    h->n.pulls_answered++;
    if (len > 0) {
      h->n.pulls_events++;
      note_leak(h, "pulled an event from %s.%s", stream, consumer);
    } else {
      note_leak(h, "a pull from %s.%s was answered", stream, consumer);
    }
  }
  pthread_mutex_unlock(&h->mu);
}

static void
pull_everything(fh *h, bus_conn *c) {
  static const char *const durables[] = {
      "catalog", "scheduler", "dag", "ipam", "signer", "logs", "devices"};
  char stream[64], consumer[64];
  for (size_t i = 0; i < sizeof durables / sizeof durables[0] && !h->stop; i++)
    pull(h, c, "LARK_EVENTS", durables[i]);
  pull(h, c, "LARK_INGRESS", "scheduler-ingress");
  pull(h, c, "LARK_INGRESS", "logs-ingress");
  pull(h, c, "LARK_INGRESS", "devices-ingress");
  for (int i = 1; i <= h->nodes && !h->stop; i++) {
    snprintf(stream, sizeof stream, "LARK_NODE_node-%d", i);
    snprintf(consumer, sizeof consumer, "edge-node-%d", i);
    pull(h, c, stream, consumer);
  }
}

void *
fh_hostile_main(void *arg) {
  static hostile x;
  memset(&x, 0, sizeof x);
  x.h = arg;
  fh *h = x.h;
  if (read_principals(&x) < 0) {
    fh_log(h, "hostile: no user principal in %s/creds/users", h->data);
    return NULL;
  }
  const char *user = x.p[x.user].name;
  bus_conn *hand = open_hand(&x);
  bus_conn *ear = fh_connect(h, user, NULL, 0);
  bus_serve *s[MAX_PRINCIPALS + 8] = {0};
  int ns = 0;
  if (ear && hand) {
    ns = listen_everywhere(&x, ear, s, MAX_PRINCIPALS + 8);
    fh_log(h, "hostile: user %s, replies at %s.*, listening on %d subjects",
           user, x.own, ns);
  } else {
    fh_log(h, "hostile: cannot connect as %s", user);
  }
  while (!h->stop && ear && hand) {
    control(h, hand);
    pull_everything(h, hand);
    for (int t = 0; t < 20 && !h->stop; t++)
      fh_sleep_ms(100);
  }
  for (int i = 0; i < ns; i++)
    bus_conn_unserve(s[i]);
  bus_conn_close(hand);
  bus_conn_close(ear);
  return NULL;
}
