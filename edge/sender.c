/*
 * sender.c - the sender thread: the store's outbox, oldest first, and the
 * heartbeats.
 *
 * A queued message is deleted only after the broker acked it, so a
 * cut-off loses nothing; it is sent again with the id it was made with,
 * so the ingress (dedupe window) and the scheduler (event ids derived
 * from it) apply it once. Order holds because the next message is not
 * tried before the one ahead of it landed, with one exception: a run of
 * consecutive run reports (a pod's metrics, the bulk) goes as async
 * appends on the one connection, up to SEND_BATCH, their acks awaited
 * together and the lot deleted in one transaction. The broker stores
 * them in the order sent; should one fail while later ones landed, the
 * failed one is sent alone and may land after them (the later ones, sent
 * again, are dropped as duplicates). A message the broker refuses as
 * malformed is dropped with a log line: it would block the queue
 * forever. Heartbeats are not queued: a late heartbeat says nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "sender.h"

enum { SEND_BATCH = 256 };

void
edge_sender_wake(edge_agent *a) {
  pthread_mutex_lock(&a->mu);
  pthread_cond_signal(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

int
edge_send(edge_agent *a, const edge_msg *m) {
  return edge_send_n(a, m, 1);
}

int
edge_send_n(edge_agent *a, const edge_msg *msgs, size_t n) {
  int rc = edge_store_enqueue_n(a->store, msgs, n);
  if (rc)
    edge_logf("error", msgs->subject, "cannot queue %s: %s", msgs->type,
              bus_last_error());
  else
    edge_sender_wake(a);
  return rc;
}

static void
nap(edge_agent *a, int ms) {
  struct timespec ts = bus_deadline_ms(CLOCK_REALTIME, ms);
  pthread_mutex_lock(&a->mu);
  if (!atomic_load(&a->stop))
    pthread_cond_timedwait(&a->cv, &a->mu, &ts);
  pthread_mutex_unlock(&a->mu);
}

/* A queued message as the event it is sent as. */
static bus_event
queued_event(const edge_agent *a, const edge_queued *q) {
  return (bus_event){.v = BUS_SCHEMA_VERSION,
                     .type = q->type,
                     .id = q->id,
                     .ts = q->ts,
                     .actor = a->cfg.node,
                     .cause = "",
                     .data_mp = q->data,
                     .data_mp_len = q->len};
}

static int
heartbeat(edge_agent *a) {
  char subject[BUS_SUBJECT_MAX], id[33];
  bus_ev_node_heartbeat d = {.has_pods = 1,
                             .pods = (uint32_t)atomic_load(&a->npods)};
  int rc = bus_subj_node_heartbeat(subject, sizeof subject, a->cfg.node);
  if (rc)
    return rc;
  bus_event_new_id(id);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .t = BUS_T_NODE_HEARTBEAT,
                  .typed = &d,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = a->cfg.node,
                  .cause = ""};
  return bus_append(a->conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
}

/* Send the oldest queued message. 1: sent (or dropped), 0: nothing
 * queued, <0: could not (kept). */
static int
send_one(edge_agent *a) {
  edge_queued q;
  int rc = edge_store_peek(a->store, &q);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc == BUS_EMALFORMED) {
    edge_logf("error", "-", "dropping an unreadable queued message");
    edge_store_drop(a->store, q.key);
    return 1;
  }
  if (rc)
    return rc;
  bus_event ev = queued_event(a, &q);
  rc = bus_append(a->conn, q.subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
  if (rc == BUS_EUNKNOWN_TYPE || rc == BUS_EMISSING || rc == BUS_EFIELD ||
      rc == BUS_ENAME || rc == BUS_ETOO_BIG || rc == BUS_EMALFORMED ||
      rc == BUS_EDENIED) {
    edge_logf("error", q.subject, "dropping %s %s: %s", q.type, q.id,
              bus_last_error());
    rc = 0;
  }
  if (rc == 0)
    rc = edge_store_drop(a->store, q.key);
  edge_queued_free(&q);
  return rc ? rc : 1;
}

/* Send the first m queued messages as async appends and await their
 * acks together; drop them once all are stored. */
static int
send_reports(edge_agent *a, edge_queued *q, size_t m) {
  int rc = 0;
  for (size_t i = 0; i < m && !rc; i++) {
    bus_event ev = queued_event(a, &q[i]);
    rc = bus_append_async(a->conn, q[i].subject, &ev, BUS_APPEND_NOCHECK);
  }
  int flushed = bus_append_flush(a->conn, 0, NULL);
  rc = rc ? rc : flushed;
  if (rc == 0)
    rc = edge_store_drop_upto(a->store, q[m - 1].key);
  if (rc)
    edge_logf("warn", q[0].subject, "%zu reports: %s (%s); one at a time", m,
              bus_strerror(rc), bus_last_error());
  return rc;
}

/* Send the oldest queued messages together when at least two run reports
 * lead the queue, else as send_one (and as send_one, one at a time, when
 * they fail). 1: sent, 0: nothing queued, <0: could not (kept). */
static int
send_some(edge_agent *a, edge_queued *q) {
  size_t n = 0, m = 0;
  if (edge_store_peek_n(a->store, q, SEND_BATCH, &n))
    return send_one(a); /* it says what is wrong, or that nothing is */
  while (m < n && bus_type_of(q[m].type) == BUS_T_RUN_REPORTED)
    m++;
  int rc = m >= 2 ? send_reports(a, q, m) : -1;
  for (size_t i = 0; i < n; i++)
    edge_queued_free(&q[i]);
  return rc == 0 ? 1 : send_one(a);
}

void *
edge_sender_main(void *arg) {
  edge_agent *a = arg;
  int64_t next_hb = 0;
  int backoff = 50;
  edge_queued *q = calloc(SEND_BATCH, sizeof *q);
  if (!q) {
    edge_logf("error", "-", "sender: out of memory");
    return NULL;
  }
  while (!atomic_load(&a->stop)) {
    if (bus_mono_ms() >= next_hb) {
      next_hb = bus_mono_ms() + a->cfg.heartbeat_ms;
      heartbeat(a);
    }
    int rc = send_some(a, q);
    if (rc == 1) {
      backoff = 50;
      continue;
    }
    if (rc < 0) {
      edge_logf("warn", "-", "send: %s (%s); %u queued", bus_strerror(rc),
                bus_last_error(), (unsigned)edge_store_queued(a->store));
      nap(a, backoff);
      backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
      continue;
    }
    int64_t wait = next_hb - bus_mono_ms();
    nap(a, wait < 1 ? 1 : wait > 500 ? 500 : (int)wait);
  }
  free(q);
  return NULL;
}
