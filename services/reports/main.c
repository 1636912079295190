/*
 * main.c - lark-reports: users' run reports from LARK_REPORTS to LARK_RUNS,
 * with the user the broker let publish as the actor (reports.c).
 *
 *   lark-reports --url URL --creds FILE --data DIR [--name INSTANCE]
 *
 * It keeps no view: its state is the durable consumer's position, and a
 * report is acknowledged only once stored. It answers lark.sys.status and
 * lark.sys.status.<name> like the view services: applied = reports
 * appended, rejected = reports refused, seq = the last LARK_REPORTS
 * sequence settled. Exits 0 on SIGINT/SIGTERM, 1 when its connection is
 * closed for good (its supervisor starts it again).
 */
#include <string.h>
#include <time.h>

#include "reports.h"
#include "svc.h"

static const char *const streams[] = {"LARK_REPORTS", "LARK_RUNS", NULL};

typedef struct app {
  svc s;
  reports *r;
  const char *name;
} app;

static void
on_status(bus_conn *c, const char *subject, const char *reply, const void *data,
          size_t len, void *ud) {
  (void)subject, (void)data, (void)len;
  app *a = ud;
  if (!reply)
    return;
  reports_stats st;
  reports_get_stats(a->r, &st);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 9);
  bus_pack_kv_str(&b.pk, "name", a->name);
  bus_pack_kv_uint(&b.pk, "seq", st.last_seq);
  bus_pack_kv_str(&b.pk, "digest", "");
  bus_pack_kv_uint(&b.pk, "lag", 0);
  bus_pack_kv_uint(&b.pk, "applied", st.appended);
  bus_pack_kv_uint(&b.pk, "stale", 0);
  bus_pack_kv_uint(&b.pk, "rejected", st.refused);
  bus_pack_kv_uint(&b.pk, "outbox", 0);
  bus_pack_kv_str(&b.pk, "version", bus_build_version());
  bus_conn_publish(c, reply, b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
}

static void
on_log(const char *subject, const char *msg, void *ud) {
  app *a = ud;
  SVC_LOG(&a->s, SVC_WARN, subject, 0, "%s", msg);
}

static int
serve(svc *s, void *ud) {
  app *a = ud;
  a->name = s->instance ? s->instance : "reports";
  char own[BUS_SUBJECT_MAX];
  bus_serve *all = NULL, *one = NULL;
  reports_opts o;
  reports_opts_init(&o);
  o.durable = a->name;
  o.log = on_log;
  o.ud = a;
  snprintf(own, sizeof own, "lark.sys.status.%s", a->name);
  int rc = reports_start(a->s.conn, &o, &a->r);
  if (!rc)
    rc = bus_conn_serve(a->s.conn, "lark.sys.status", NULL, on_status, a, &all);
  if (!rc)
    rc = bus_conn_serve(a->s.conn, own, NULL, on_status, a, &one);
  if (!rc)
    SVC_LOG(&a->s, SVC_INFO, "lark.rep.>", 0, "running");
  while (!rc && !atomic_load(&a->s.stop)) {
    if (bus_conn_closed(a->s.conn)) {
      rc = bus_error(BUS_ECONN, "the connection is closed for good");
      break;
    }
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (rc)
    SVC_LOG(&a->s, SVC_ERROR, "lark.rep.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  bus_conn_unserve(all);
  bus_conn_unserve(one);
  reports_stop(a->r);
  return rc;
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  return svc_main_run(&a.s, "reports", argc, argv, streams, serve, &a);
}
