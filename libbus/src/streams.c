/*
 * streams.c - the platform's streams (docs/design.md section 2), in one table.
 *
 * Every stream's settings come from `table` and the options; nothing else
 * in the tree names a stream's limits. ensure compares the settings it
 * manages (subjects, retention, storage, limits, duplicate window,
 * replicas) with the broker's and updates only when they differ, so
 * running it again is a no-op. Retention and storage cannot be changed
 * on a live stream; that is reported, never forced.
 *
 * Each node's desired states live in a stream of the node's own,
 * LARK_NODE_<node> on lark.node.<node>.> (one message per subject), made
 * by `larkctl node add` on a running broker, or by the scheduler when it
 * first knows the node, and settled like the platform's streams. One
 * stream for every node would make the broker (2.9) walk every pod
 * subject of the fleet on each delivery to a node's wildcard consumer; a
 * node's own stream holds only its pods. A node stream takes the
 * replicas and duplicate window of LARK_EVENTS, so a cluster's node
 * streams are replicated like the rest, but is kept in memory: it holds a
 * projection of what its writers decided (each message carries the
 * version of the event that decided it), a gang's burst writes to a
 * thousand node streams at once, and a file-stored stream takes
 * 4,000-6,000 such writes a second here. A broker that restarts loses
 * them: whoever writes into them makes them again and sends what
 * they lack (bus_view_node_streams_repair). A node stream found on file
 * (made by an earlier version) is made anew in memory, and counted as made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsreq.h"
#include "nats-int.h"

#define NS_PER_S INT64_C(1000000000)

enum { AGE_NONE, AGE_RUNS, AGE_LOGS };

/*
 * Message size limits (max_msg_size, headers and body together, as the
 * broker counts them), each above the largest message the platform
 * itself writes to the stream, so nothing legitimate is refused:
 *
 * - LARK_EVENTS and the node streams: an event's body is at most
 *   BUS_MAX_PAYLOAD (the encoder refuses more, codec.c); a desired state
 *   is such an event too. 4 KiB more for the headers (Nats-Msg-Id,
 *   Lark-Type, the broker's expectations).
 * - LARK_RUNS: a pod's report is one socket line of at most 64 KiB of
 *   JSON (edge/sock.c); as msgpack it grows by at most 256 values times
 *   6 bytes (a double is 9 bytes, "1.5" is 3); the envelope and headers
 *   add under 1 KiB. 128 KiB leaves room.
 * - LARK_REPORTS (users' reports, lark.rep.<user>.<job>): 1 KiB less than
 *   LARK_RUNS. The appender (lark-reports) swaps the body's actor for the
 *   user's name (at most 63 bytes) and adds the cause (32), so a report
 *   this stream took always fits LARK_RUNS.
 * - LARK_INGRESS: lark-edge sends a log batch once it holds 256 KiB of
 *   lines; the line that crossed that mark is at most 16 KiB
 *   (LogLine.text), and the envelope under 1 KiB. A node's other
 *   messages (registration, phases, run reports) are smaller.
 * - LARK_LOGS: lark-logs republishes such a batch with job, task and
 *   node added (under 1 KiB).
 * - LARK_ROUTES: a route row is a handful of names and addresses (at
 *   most a pod name of 253 bytes): under 2 KiB with its envelope.
 */
#define KIB 1024
#define EVENTS_MSG_MAX (BUS_MAX_PAYLOAD + 4 * KIB)
#define RUNS_MSG_MAX (128 * KIB)
#define REPORTS_MSG_MAX (RUNS_MSG_MAX - KIB)
#define INGRESS_MSG_MAX (320 * KIB)
#define LOGS_MSG_MAX (INGRESS_MSG_MAX + 4 * KIB)
#define ROUTES_MSG_MAX (16 * KIB)

typedef struct stream_def {
  const char *name;
  const char *subject;
  jsRetentionPolicy retention;
  int age;             /* AGE_*: which option gives MaxAge */
  int per_subject_one; /* MaxMsgsPerSubject = 1 */
  int bytes;           /* MaxBytes from logs_bytes */
  int32_t msg_max;     /* MaxMsgSize */
} stream_def;

/*
 * Users' reports have a work queue of their own rather than a subject in
 * LARK_INGRESS: its own size limit (so larkctl emit hears at once that a
 * report is too big) and its own consumer, lark-reports', which stamps
 * the user named by the subject as the actor.
 */
static const stream_def table[] = {
    {"LARK_EVENTS", "lark.ev.>", js_LimitsPolicy, AGE_NONE, 0, 0,
     EVENTS_MSG_MAX},
    {"LARK_RUNS", "lark.run.>", js_LimitsPolicy, AGE_RUNS, 0, 0, RUNS_MSG_MAX},
    {"LARK_INGRESS", "lark.in.>", js_WorkQueuePolicy, AGE_NONE, 0, 0,
     INGRESS_MSG_MAX},
    {"LARK_LOGS", "lark.log.>", js_LimitsPolicy, AGE_LOGS, 0, 1, LOGS_MSG_MAX},
    {"LARK_ROUTES", "lark.route.>", js_LimitsPolicy, AGE_NONE, 1, 0,
     ROUTES_MSG_MAX},
    {"LARK_REPORTS", "lark.rep.>", js_WorkQueuePolicy, AGE_NONE, 0, 0,
     REPORTS_MSG_MAX},
};
#define NSTREAMS (sizeof table / sizeof table[0])

const char *const bus_stream_names[] = {
    "LARK_EVENTS",  "LARK_RUNS", "LARK_INGRESS", "LARK_LOGS", "LARK_ROUTES",
    "LARK_REPORTS", NULL};

/* Streams whose writers may append atomic batches (bus_append_atomic):
 * the flag costs nothing until a batch comes. */
static const char *const atomic_streams[] = {"LARK_EVENTS", "LARK_RUNS"};

/* Earlier versions kept every node's desired states in one stream; its
 * subjects overlap the node streams', so the broker would refuse them. */
#define LEGACY_NODES "LARK_NODES"

void
bus_streams_opts_init(bus_streams_opts *o) {
  memset(o, 0, sizeof *o);
  o->replicas = 1;
  o->dedupe_ns = 2 * 60 * NS_PER_S;
  o->runs_age_ns = 30 * 24 * 3600 * NS_PER_S;
  o->logs_age_ns = 7 * 24 * 3600 * NS_PER_S;
  o->logs_bytes = INT64_C(1) << 30;
}

/* cfg points at d's subject; it lives as long as the table. */
static void
fill_config(const stream_def *d, const bus_streams_opts *o,
            jsStreamConfig *cfg) {
  jsStreamConfig_Init(cfg);
  cfg->Name = d->name;
  cfg->Subjects = (const char **)&d->subject;
  cfg->SubjectsLen = 1;
  cfg->Retention = d->retention;
  cfg->Storage = o->memory ? js_MemoryStorage : js_FileStorage;
  cfg->Replicas = o->replicas > 0 ? o->replicas : 1;
  if (d->age == AGE_RUNS)
    cfg->MaxAge = o->runs_age_ns;
  else if (d->age == AGE_LOGS)
    cfg->MaxAge = o->logs_age_ns;
  if (d->per_subject_one)
    cfg->MaxMsgsPerSubject = 1;
  if (d->bytes)
    cfg->MaxBytes = o->logs_bytes > 0 ? o->logs_bytes : -1;
  cfg->MaxMsgSize = d->msg_max;
  /* the broker refuses a duplicate window longer than the max age */
  cfg->Duplicates = o->dedupe_ns > 0 ? o->dedupe_ns : 2 * 60 * NS_PER_S;
  if (cfg->MaxAge > 0 && cfg->Duplicates > cfg->MaxAge)
    cfg->Duplicates = cfg->MaxAge;
  /* users read these by batch direct gets: they may make no consumer */
  cfg->AllowDirect =
      !strcmp(d->name, "LARK_EVENTS") || !strcmp(d->name, "LARK_RUNS");
}

static int
same_config(const jsStreamConfig *a, const jsStreamConfig *b) {
  return a->SubjectsLen == 1 && strcmp(a->Subjects[0], b->Subjects[0]) == 0 &&
         a->MaxAge == b->MaxAge &&
         (a->MaxMsgsPerSubject == b->MaxMsgsPerSubject ||
          (a->MaxMsgsPerSubject <= 0 && b->MaxMsgsPerSubject <= 0)) &&
         (a->MaxBytes == b->MaxBytes ||
          (a->MaxBytes <= 0 && b->MaxBytes <= 0)) &&
         a->Duplicates == b->Duplicates && a->Replicas == b->Replicas &&
         a->MaxMsgSize == b->MaxMsgSize && a->AllowDirect == b->AllowDirect;
}

/* The broker's answer says the stream does not exist. */
static int
missing(natsStatus s, jsErrCode jerr) {
  return s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr;
}

/* Make d now; *born its creation time (the broker's clock). */
static int
add_one(bus_conn *c, const stream_def *d, jsStreamConfig *cfg, jsOptions *jo,
        int64_t *born) {
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_AddStream(&si, c->js, cfg, jo, &jerr);
  if (s == NATS_OK && born)
    *born = si->Created;
  jsStreamInfo_Destroy(si);
  return s == NATS_OK ? 0 : bus__nats_err(s, jerr, d->name);
}

/*
 * Create d or bring it to its settings; *created (may be NULL) tells, and
 * *born (may be NULL) is the stream's creation time. replace: a stream
 * found with another storage is deleted and made anew (a node stream:
 * what it held is sent again by its writers).
 */
static int
ensure_one(bus_conn *c, const stream_def *d, const bus_streams_opts *o,
           int replace, int *created, int64_t *born) {
  jsStreamConfig cfg;
  jsStreamInfo *si = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  int rc = 0;
  if (created)
    *created = 0;
  fill_config(d, o, &cfg);
  bus__js_opts(c, &jo);
  natsStatus s = js_GetStreamInfo(&si, c->js, d->name, &jo, &jerr);
  if (missing(s, jerr) ||
      (s == NATS_OK && replace && si->Config->Storage != cfg.Storage)) {
    if (s == NATS_OK) /* on file, from an earlier version */
      s = js_DeleteStream(c->js, d->name, &jo, &jerr);
    jsStreamInfo_Destroy(si);
    if ((s == NATS_OK || missing(s, jerr)) &&
        (rc = add_one(c, d, &cfg, &jo, born)) == 0 && created)
      *created = 1;
    return s == NATS_OK || missing(s, jerr) ? rc
                                            : bus__nats_err(s, jerr, d->name);
  }
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, d->name);
  const jsStreamConfig *have = si->Config;
  if (born)
    *born = si->Created;
  if (have->Retention != cfg.Retention || have->Storage != cfg.Storage) {
    rc = BUS_ERR(BUS_EEXISTS,
                 "stream %s exists with another retention or storage; "
                 "it cannot be changed in place",
                 d->name);
    goto out;
  }
  if (!same_config(have, &cfg)) {
    s = js_UpdateStream(NULL, c->js, &cfg, &jo, &jerr);
    if (s != NATS_OK)
      rc = bus__nats_err(s, jerr, d->name);
  }
out:
  jsStreamInfo_Destroy(si);
  return rc;
}

int
bus_streams_ensure(bus_conn *c, const bus_streams_opts *o) {
  bus_streams_opts def;
  if (!o) {
    bus_streams_opts_init(&def);
    o = &def;
  }
  int rc = bus_stream_delete(c, LEGACY_NODES);
  if (rc < 0 && rc != BUS_ENO_STREAM)
    return rc;
  for (size_t i = 0; i < NSTREAMS; i++) {
    if ((rc = ensure_one(c, &table[i], o, 0, NULL, NULL)) < 0)
      return rc;
  }
  /* after ensure_one: nats.c's update cannot carry allow_atomic */
  for (size_t i = 0; i < sizeof atomic_streams / sizeof *atomic_streams; i++)
    if ((rc = bus_stream_allow_atomic(c, atomic_streams[i])) < 0)
      return rc;
  return 0;
}

int32_t
bus_stream_msg_max(const char *stream) {
  for (size_t i = 0; stream && i < NSTREAMS; i++)
    if (!strcmp(stream, table[i].name))
      return table[i].msg_max;
  if (stream && !strncmp(stream, BUS_NODE_STREAM_PREFIX,
                         sizeof BUS_NODE_STREAM_PREFIX - 1))
    return EVENTS_MSG_MAX;
  return 0;
}

int
bus_stream_delete(bus_conn *c, const char *name) {
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_DeleteStream(c->js, name, &jo, &jerr);
  if (s == NATS_OK)
    return 0;
  if (missing(s, jerr))
    return BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", name);
  return bus__nats_err(s, jerr, name);
}

/* ------------------------------------------------------------ node streams */

/* subject under from ("<from><node>.<rest>", node and rest not empty)
 * under to instead, into out; BUS_EINVAL (without error text when subject
 * is not under from at all). */
static int
node_subject_as(const char *subject, const char *from, const char *to,
                char *out, size_t cap) {
  size_t n = strlen(from);
  if (strncmp(subject, from, n))
    return BUS_EINVAL; /* asked of every outbox entry: no error text */
  const char *rest = subject + n, *dot = strchr(rest, '.');
  if (!dot || dot == rest || !dot[1] ||
      (size_t)snprintf(out, cap, "%s%s", to, rest) >= cap)
    return BUS_ERR(BUS_EINVAL, "%s is not a node's subject under %s", subject,
                   from);
  return 0;
}

int
bus_node_push_subject(const char *subject, char *out, size_t cap) {
  return node_subject_as(subject, "lark.node.", BUS_NODE_PUSH_PREFIX, out, cap);
}

int
bus_node_pushed_subject(const char *push, char *out, size_t cap) {
  return node_subject_as(push, BUS_NODE_PUSH_PREFIX, "lark.node.", out, cap);
}

int
bus_node_stream_name(const char *node, char *out, size_t cap) {
  if (!node || !bus_name_valid(node, BUS_NAME_MAX))
    return BUS_ERR(BUS_ENAME, "bad node name '%s'", node ? node : "");
  if ((size_t)snprintf(out, cap, "%s%s", BUS_NODE_STREAM_PREFIX, node) >= cap)
    return BUS_ERR(BUS_EINVAL, "node stream name does not fit");
  return 0;
}

/* Replicas and duplicate window of LARK_EVENTS into o; storage in
 * memory (see the top). */
static int
settings_of_events(bus_conn *c, bus_streams_opts *o) {
  jsStreamInfo *si = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetStreamInfo(&si, c->js, "LARK_EVENTS", &jo, &jerr);
  if (missing(s, jerr))
    return BUS_ERR(BUS_ENO_STREAM,
                   "missing stream: LARK_EVENTS; run `larkctl init` to "
                   "create it");
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, "LARK_EVENTS");
  bus_streams_opts_init(o);
  o->replicas = (int)si->Config->Replicas;
  o->memory = 1;
  o->dedupe_ns = si->Config->Duplicates;
  jsStreamInfo_Destroy(si);
  return 0;
}

/* The broker's time "2026-12-02T09:56:34.210067849Z" (or with an offset)
 * as nanoseconds since the epoch, as nats.c reads a stream's Created; 0
 * when s is none. */
static int64_t
parse_time(const char *s) {
  struct tm tm = {0};
  int64_t frac = 0, scale = 1000000000;
  char *end;
  if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon,
                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
    return 0;
  tm.tm_year -= 1900, tm.tm_mon -= 1;
  int64_t t = (int64_t)timegm(&tm);
  s += 19;
  if (*s == '.')
    for (s++; *s >= '0' && *s <= '9'; s++)
      if (scale > 1)
        frac = frac * 10 + (*s - '0'), scale /= 10;
  if ((*s == '+' || *s == '-') && s[1]) {
    long hh = strtol(s + 1, &end, 10), mm = *end == ':' ? atol(end + 1) : 0;
    t -= (*s == '+' ? 1 : -1) * (hh * 3600 + mm * 60);
  }
  return t * NS_PER_S + frac * scale;
}

static int64_t
created_of(const char *answer) {
  const char *at = answer ? strstr(answer, "\"created\":\"") : NULL;
  return at ? parse_time(at + 11) : 0;
}

/* One node's stream, as ensure_one makes it: its table entry (names and
 * subject kept in ns) and the body of a create request. */
typedef struct node_req {
  char name[BUS_NODE_STREAM_MAX], subject[BUS_SUBJECT_MAX];
  char info[BUS_SUBJECT_MAX], create[BUS_SUBJECT_MAX];
  char body[BUS_SUBJECT_MAX + BUS_NODE_STREAM_MAX + 256];
  int state;          /* NR_* */
  unsigned char made; /* missing, and made by this call */
} node_req;

enum { NR_ASK, NR_MISSING, NR_THERE, NR_SETTLED, NR_ALONE };

static int
node_req_init(node_req *q, const char *node, const bus_streams_opts *o) {
  int rc = bus_node_stream_name(node, q->name, sizeof q->name);
  if (rc < 0)
    return rc;
  snprintf(q->subject, sizeof q->subject, "lark.node.%s.>", node);
  snprintf(q->info, sizeof q->info, "$JS.API.STREAM.INFO.%s", q->name);
  snprintf(q->create, sizeof q->create, "$JS.API.STREAM.CREATE.%s", q->name);
  /* fill_config's settings for a node stream; the broker fills the rest
   * as it does for nats.c's request, so the two compare equal */
  snprintf(q->body, sizeof q->body,
           "{\"name\":\"%s\",\"subjects\":[\"%s\"],\"retention\":\"limits\","
           "\"storage\":\"memory\",\"num_replicas\":%d,"
           "\"max_msgs_per_subject\":1,\"max_msg_size\":%d,"
           "\"duplicate_window\":%lld,\"discard\":\"old\"}",
           q->name, q->subject, o->replicas > 0 ? o->replicas : 1,
           (int)EVENTS_MSG_MAX,
           (long long)(o->dedupe_ns > 0 ? o->dedupe_ns : 2 * 60 * NS_PER_S));
  q->state = NR_ASK;
  return 0;
}

/*
 * One round: for each request in state from, subject (info or create)
 * sent with the body when create; each answer read by take. A round whose
 * requests could not be sent leaves them to be made alone.
 */
static int
node_round(bus_conn *c, node_req *q, size_t n, int create, int64_t *born) {
  bus__jsreq *v = calloc(n + 1, sizeof *v);
  size_t *at = calloc(n + 1, sizeof *at), k = 0;
  for (size_t i = 0; v && at && i < n; i++) {
    int st = q[i].state;
    if (create ? st != NR_MISSING && st != NR_THERE : st != NR_ASK)
      continue;
    v[k] = (bus__jsreq){create ? q[i].create : q[i].info,
                        create ? q[i].body : "", NULL};
    at[k++] = i;
  }
  int rc = v && at ? bus__jsreq_run(c, v, k) : -ENOMEM;
  for (size_t j = 0; rc >= 0 && j < k; j++) {
    node_req *r = &q[at[j]];
    int err = bus__jsreq_err(v[j].answer);
    if (!v[j].answer || (err && (create || err != JSStreamNotFoundErr)))
      r->state = NR_ALONE; /* no answer, other settings, a refusal */
    else if (!create)
      r->state = err ? NR_MISSING : NR_THERE;
    else
      r->made = r->state == NR_MISSING, r->state = NR_SETTLED;
    if (born && !err)
      born[at[j]] = created_of(v[j].answer);
  }
  for (size_t j = 0; rc < 0 && j < k; j++)
    q[at[j]].state = NR_ALONE;
  if (v)
    bus__jsreq_free(v, k);
  free(v);
  free(at);
  /* a broker that does not answer is not asked again one by one */
  return rc == BUS_ETIMEOUT || rc == BUS_ECONN ? rc : 0;
}

/*
 * Every node's stream in two rounds of requests in flight together (each
 * n requests for about one wait at the broker's API queue): first each
 * stream's info (made now or there already: the broker's answer to a
 * create does not tell), then a create with its settings for each, which
 * the broker answers as done when the stream is there with the same
 * settings. Anything else (another storage from an
 * earlier version, other settings, no answer) is settled alone by
 * ensure_one, as before.
 */
int
bus_node_streams_born(bus_conn *c, const char *const *nodes, size_t n,
                      int64_t *born, unsigned char *made_now, int *created) {
  bus_streams_opts o;
  int rc = settings_of_events(c, &o), made = 0;
  node_req *q = rc < 0 ? NULL : calloc(n + 1, sizeof *q);
  if (rc >= 0 && !q)
    rc = BUS_ERR(-ENOMEM, "out of memory making node streams");
  for (size_t i = 0; rc >= 0 && i < n; i++)
    rc = node_req_init(&q[i], nodes[i], &o);
  /* who asks nothing of the streams but that they be there (a batch of
   * registrations) skips the first round: a create is answered as done
   * for a stream already there with the same settings */
  int ask = born || made_now || created;
  for (size_t i = 0; rc >= 0 && !ask && i < n; i++)
    q[i].state = NR_THERE;
  if (rc >= 0 && n > 1 && (!ask || (rc = node_round(c, q, n, 0, born)) >= 0))
    rc = node_round(c, q, n, 1, born);
  for (size_t i = 0; rc >= 0 && i < n; i++) {
    int one = q[i].made;
    if (q[i].state != NR_SETTLED) {
      stream_def d = {q[i].name, q[i].subject,  js_LimitsPolicy, AGE_NONE, 1,
                      0,         EVENTS_MSG_MAX};
      rc = ensure_one(c, &d, &o, 1, &one, born ? &born[i] : NULL);
    }
    made += one;
    if (made_now)
      made_now[i] = (unsigned char)one;
  }
  free(q);
  if (created)
    *created = made;
  return rc < 0 ? rc : 0;
}

/* The names of one page of STREAM.NAMES in answer, each node given to cb;
 * *count the names on it, *total what the broker has in all. */
static int
names_page(const char *answer, int (*cb)(const char *, void *), void *ud,
           long *count, long *total) {
  const char *t = strstr(answer, "\"total\":");
  const char *p = strstr(answer, "\"streams\":[");
  size_t pl = sizeof BUS_NODE_STREAM_PREFIX - 1;
  *count = 0;
  *total = t ? atol(t + 8) : 0;
  if (strstr(answer, "\"error\""))
    return BUS_ERR(BUS_EBROKER, "stream names refused: %.200s", answer);
  for (p = p ? p + 11 : NULL; p && *p == '"';) {
    char name[BUS_NODE_STREAM_MAX];
    size_t len = strcspn(p + 1, "\"");
    if (p[1 + len] != '"')
      break;
    snprintf(name, sizeof name, "%.*s", (int)len, p + 1);
    (*count)++;
    int rc = len < sizeof name && !strncmp(name, BUS_NODE_STREAM_PREFIX, pl)
                 ? cb(name + pl, ud)
                 : 0;
    if (rc)
      return rc;
    p += len + 2;
    p += *p == ',';
  }
  return 0;
}

int
bus_node_streams_list(bus_conn *c, int (*cb)(const char *node, void *ud),
                      void *ud) {
  long offset = 0, count = 0, total = 0;
  do {
    char body[96];
    void *reply = NULL;
    size_t len = 0;
    int n = snprintf(body, sizeof body,
                     "{\"offset\":%ld,\"subject\":\"lark.node.>\"}", offset);
    int rc = bus_conn_request(c, "$JS.API.STREAM.NAMES", body, (size_t)n,
                              c->js_wait_ms, &reply, &len);
    if (rc < 0)
      return rc;
    char *text = malloc(len + 1);
    if (text) {
      memcpy(text, reply, len);
      text[len] = 0;
    }
    free(reply);
    rc = text ? names_page(text, cb, ud, &count, &total)
              : BUS_ERR(-ENOMEM, "out of memory");
    free(text);
    if (rc)
      return rc;
    offset += count;
  } while (count > 0 && offset < total);
  return 0;
}

int
bus_node_streams_ensure(bus_conn *c, const char *const *nodes, size_t n,
                        int *created) {
  return bus_node_streams_born(c, nodes, n, NULL, NULL, created);
}

int
bus_node_stream_ensure(bus_conn *c, const char *node, int *created) {
  return bus_node_streams_ensure(c, &node, 1, created);
}

/* 1 exists, 0 missing, <0 another failure. */
static int
stream_exists(bus_conn *c, const char *name) {
  jsStreamInfo *si = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetStreamInfo(&si, c->js, name, &jo, &jerr);
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK)
    return 1;
  if (missing(s, jerr))
    return 0;
  return bus__nats_err(s, jerr, name);
}

int
bus_streams_require(bus_conn *c, const char *const *names) {
  char missing[400] = "";
  size_t used = 0;
  int n = 0;
  for (size_t i = 0; names && names[i]; i++) {
    int rc = stream_exists(c, names[i]);
    if (rc < 0)
      return rc;
    if (rc == 0 && used < sizeof missing) {
      used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%s",
                               n ? ", " : "", names[i]);
      n++;
    }
  }
  if (n)
    return BUS_ERR(BUS_ENO_STREAM,
                   "missing stream%s: %s; run `larkctl init` to create %s",
                   n > 1 ? "s" : "", missing, n > 1 ? "them" : "it");
  return 0;
}

int
bus_stream_last_seq(bus_conn *c, const char *stream, uint64_t *seq) {
  jsStreamInfo *si = NULL;
  jsOptions jo;
  jsErrCode jerr = 0;
  bus__js_opts(c, &jo);
  natsStatus s = js_GetStreamInfo(&si, c->js, stream, &jo, &jerr);
  if (missing(s, jerr)) {
    jsStreamInfo_Destroy(si);
    return BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", stream);
  }
  if (s != NATS_OK)
    return bus__nats_err(s, jerr, stream);
  *seq = si->State.LastSeq;
  jsStreamInfo_Destroy(si);
  return 0;
}
