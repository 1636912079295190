/*
 * verbs.c - one way to serve a service's commands: its table of verbs.
 *
 * Each service lists {kind, verb, handler or query, flags}; this file
 * finds the entry, applies the flags (admin only, wait for the view, one
 * at a time) and runs it. The server subscribes to every kind of the
 * table in its queue group and hands each request to worker threads of
 * its own: nats.c's delivery thread only copies the request into a queue,
 * so a command that waits for the view holds up neither the delivery of
 * other messages nor the commands the other workers take.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"

#define MAX_KINDS 8
#define MAX_QUEUED 65536 /* nats.c's own default for a subscription */
#define DEFAULT_WORKERS 4
#define DEFAULT_WAIT_MS 5000

static const bus_verb *
find_verb(const bus_verbs *t, const bus_cmd *cmd) {
  for (const bus_verb *e = t->verbs; e && (e->fn || e->query); e++)
    if ((!e->kind || !strcmp(e->kind, cmd->kind)) &&
        (!e->verb || !strcmp(e->verb, cmd->verb)))
      return e;
  return NULL;
}

static int
answer_query(const bus_verb *e, bus_conn *c, bus_view *v, const bus_cmd *cmd) {
  if (!cmd->reply)
    return 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_query_answer(v, e->query, cmd->kind, cmd->verb, &cmd->body, &sb, NULL);
  int rc = bus_conn_publish(c, cmd->reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* The entry's flags, then its handler; serial (may be NULL) is the lock
 * of the command's kind. */
static int
run(const bus_verbs *t, bus_conn *c, bus_view *v, void *ud, const bus_cmd *cmd,
    pthread_mutex_t *serial) {
  const bus_verb *e = find_verb(t, cmd);
  char msg[BUS_NAME_MAX + 32];
  if (!e) {
    const char *why = t->unknown ? t->unknown : "no such command";
    bus_cmd_reply_error(c, cmd, BUS_EINVAL, why, NULL, 0);
    return BUS_EINVAL;
  }
  if ((e->flags & BUS_VERB_ADMIN) && strcmp(cmd->user, "admin")) {
    snprintf(msg, sizeof msg, "only admin may %s", cmd->verb);
    bus_cmd_reply_error(c, cmd, BUS_EDENIED, msg, NULL, 0);
    return BUS_EDENIED;
  }
  int locked = serial && (e->flags & BUS_VERB_SERIAL);
  if (locked)
    pthread_mutex_lock(serial);
  if (e->flags & BUS_VERB_CATCH_UP) /* past the deadline: run anyway */
    bus_view_catch_up(c, v, t->stream,
                      t->wait_ms > 0 ? t->wait_ms : DEFAULT_WAIT_MS);
  int rc = e->fn ? e->fn(c, cmd, v, ud) : answer_query(e, c, v, cmd);
  if (locked)
    pthread_mutex_unlock(serial);
  return rc;
}

int
bus_verbs_dispatch(const bus_verbs *t, bus_conn *c, bus_view *v, void *ud,
                   const bus_cmd *cmd) {
  int rc = run(t, c, v, ud, cmd, NULL);
  if (t->on_done)
    t->on_done(cmd, rc, ud);
  return rc;
}

/* ------------------------------------------------------------- the server */

typedef struct request {
  struct request *next;
  char *subject, *reply;
  size_t len;
  char data[]; /* len bytes, then subject and reply */
} request;

struct bus_cmd_server {
  bus_conn *c;
  const bus_verbs *t;
  bus_view *v;
  void *ud;
  int nkinds, nworkers;
  bus_serve *serves[MAX_KINDS];
  pthread_mutex_t serial[MAX_KINDS]; /* BUS_VERB_SERIAL, one per kind */
  pthread_t *workers;
  pthread_mutex_t mu; /* the queue and stopping */
  pthread_cond_t cv;
  request *head, *tail;
  size_t queued;
  int stopping;
};

static request *
request_new(const char *subject, const char *reply, const void *data,
            size_t len) {
  size_t sl = strlen(subject) + 1, rl = strlen(reply) + 1;
  request *r = malloc(sizeof *r + len + sl + rl);
  if (!r)
    return NULL;
  r->next = NULL;
  r->len = len;
  if (len)
    memcpy(r->data, data, len);
  r->subject = memcpy(r->data + len, subject, sl);
  r->reply = memcpy(r->data + len + sl, reply, rl);
  return r;
}

/* nats.c's delivery thread: queue the request, nothing more. */
static void
on_request(bus_conn *c, const char *subject, const char *reply,
           const void *data, size_t len, void *ud) {
  bus_cmd_server *s = ud;
  if (!bus__is_request(reply)) /* stream content pushed here: ignored */
    return;
  request *r = request_new(subject, reply, data, len);
  pthread_mutex_lock(&s->mu);
  int full = !r || s->queued >= MAX_QUEUED || s->stopping;
  if (!full) {
    *(s->tail ? &s->tail->next : &s->head) = r;
    s->tail = r;
    s->queued++;
    pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  if (full) {
    bus_cmd busy = {.reply = reply};
    bus_cmd_reply_error(c, &busy, BUS_ETIMEOUT,
                        "the service has too many commands waiting: try "
                        "again",
                        NULL, 0);
    free(r);
  }
}

static pthread_mutex_t *
serial_of(bus_cmd_server *s, const char *kind) {
  for (int i = 0; i < s->nkinds; i++)
    if (!strcmp(s->t->kinds[i], kind))
      return &s->serial[i];
  return NULL;
}

static void
handle(bus_cmd_server *s, const request *r) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  bus_cmd cmd;
  int rc = bus_cmd_parse(r->subject, r->reply, r->data, r->len, &zone, &cmd);
  if (rc) {
    bus_cmd bad = {.reply = r->reply};
    bus_cmd_reply_error(s->c, &bad, rc, bus_last_error(), NULL, 0);
  } else {
    rc = run(s->t, s->c, s->v, s->ud, &cmd, serial_of(s, cmd.kind));
    if (s->t->on_done)
      s->t->on_done(&cmd, rc, s->ud);
  }
  msgpack_zone_destroy(&zone);
}

static void *
worker(void *arg) {
  bus_cmd_server *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (!s->head && !s->stopping)
      pthread_cond_wait(&s->cv, &s->mu);
    request *r = s->stopping ? NULL : s->head;
    if (r) {
      s->head = r->next;
      if (!s->head)
        s->tail = NULL;
      s->queued--;
    }
    pthread_mutex_unlock(&s->mu);
    if (!r)
      return NULL;
    handle(s, r);
    free(r);
  }
}

static int
subscribe(bus_cmd_server *s) {
  int rc = 0;
  for (int i = 0; !rc && i < s->nkinds; i++) {
    char subject[BUS_SUBJECT_MAX], queue[BUS_NAME_MAX + 8];
    snprintf(subject, sizeof subject, "lark.cmd.*.%s.*", s->t->kinds[i]);
    snprintf(queue, sizeof queue, "lark-%s", s->t->kinds[i]);
    rc = bus_conn_serve(s->c, subject, queue, on_request, s, &s->serves[i]);
  }
  return rc;
}

static int
start_workers(bus_cmd_server *s, int n) {
  s->workers = calloc((size_t)n, sizeof *s->workers);
  if (!s->workers)
    return BUS_ERR(-ENOMEM, "out of memory");
  for (; s->nworkers < n; s->nworkers++)
    if (pthread_create(&s->workers[s->nworkers], NULL, worker, s))
      return BUS_ERR(-EAGAIN, "cannot start command worker %d", s->nworkers);
  return 0;
}

int
bus_verbs_serve(bus_conn *c, const bus_verbs *t, bus_view *v, void *ud,
                int workers, bus_cmd_server **out) {
  *out = NULL;
  bus_cmd_server *s = calloc(1, sizeof *s);
  if (!s)
    return BUS_ERR(-ENOMEM, "out of memory");
  s->c = c, s->t = t, s->v = v, s->ud = ud;
  while (t->kinds && t->kinds[s->nkinds] && s->nkinds < MAX_KINDS)
    pthread_mutex_init(&s->serial[s->nkinds++], NULL);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  int rc = start_workers(s, workers > 0 ? workers : DEFAULT_WORKERS);
  if (!rc)
    rc = subscribe(s);
  if (rc) {
    bus_cmd_server_stop(s);
    return rc;
  }
  *out = s;
  return 0;
}

void
bus_cmd_server_stop(bus_cmd_server *s) {
  if (!s)
    return;
  for (int i = 0; i < s->nkinds; i++)
    bus_conn_unserve(s->serves[i]); /* no request is queued after this */
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->nworkers; i++)
    pthread_join(s->workers[i], NULL);
  for (request *r = s->head, *next; r; r = next) {
    next = r->next;
    free(r);
  }
  for (int i = 0; i < s->nkinds; i++)
    pthread_mutex_destroy(&s->serial[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->workers);
  free(s);
}
