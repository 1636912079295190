/*
 * bench/append.c - libbus async append against raw nats.c, same run.
 *
 * Both sides publish N 200-byte messages on distinct subjects with the
 * same two headers (Nats-Msg-Id, Lark-Type), no expected sequence, into a
 * fresh file-storage stream of their own on one nats-server this program
 * starts; both wait for every ack. Runs go raw, libbus, libbus, raw (half the
 * events each) and each side's rate is over its two runs. The baseline is
 * nats.c's js_PublishMsgAsync with a pre-encoded body; libbus adds the msgpack
 * encode of the envelope. Prints both rates and their ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

#define BODY 200

static int
fit_text(msgpack_sbuffer *data) {
  bus_event ev;
  char id[33];
  msgpack_sbuffer out;
  msgpack_sbuffer_init(&out);
  int len = 100;
  for (int i = 0; i < 4; i++) {
    bench_sample_event(&ev, data, id, (size_t)len);
    out.size = 0;
    if (bus_event_encode(&ev, &out) < 0)
      bench_die("encode", bus_last_error());
    len += BODY - (int)out.size;
  }
  msgpack_sbuffer_destroy(&out);
  return len;
}

static double
run_raw(const char *url, long n, const char *stream) {
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  jsOptions jo;
  jsStreamConfig sc;
  char body[BODY], subject[64], id[33], filter[64];
  const char *subj = filter;
  snprintf(filter, sizeof filter, "bench.%s.>", stream);
  memset(body, 'x', sizeof body);
  if (natsConnection_ConnectTo(&nc, url) != NATS_OK)
    bench_die("raw connect", nats_GetLastError(NULL));
  jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = 4000;
  jo.PublishAsync.StallWait = 10000;
  if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK)
    bench_die("raw js", nats_GetLastError(NULL));
  jsStreamConfig_Init(&sc);
  sc.Name = stream;
  sc.Subjects = &subj;
  sc.SubjectsLen = 1;
  sc.Duplicates = INT64_C(120000000000);
  js_DeleteStream(js, "LARK_EVENTS", NULL, NULL); /* bus: fresh stream */
  if (js_AddStream(NULL, js, &sc, NULL, NULL) != NATS_OK)
    bench_die("raw stream", nats_GetLastError(NULL));
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    natsMsg *m = NULL;
    snprintf(subject, sizeof subject, "bench.%s.%ld", stream, i);
    bus_event_new_id(id);
    if (natsMsg_Create(&m, subject, NULL, body, BODY) != NATS_OK ||
        natsMsgHeader_Set(m, "Nats-Msg-Id", id) != NATS_OK ||
        natsMsgHeader_Set(m, "Lark-Type", "sample.created") != NATS_OK ||
        js_PublishMsgAsync(js, &m, NULL) != NATS_OK)
      bench_die("raw publish", nats_GetLastError(NULL));
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 60000;
  if (js_PublishAsyncComplete(js, &po) != NATS_OK)
    bench_die("raw complete", nats_GetLastError(NULL));
  double dt = bench_now_s() - t0;
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return (double)n / dt;
}

static double
run_bus(const char *url, long n) {
  bus_conn *c = bench_connect_streams(url, 0);
  bus_event ev;
  msgpack_sbuffer data;
  char subject[64], id[33];
  uint64_t failed = 0;
  msgpack_sbuffer_init(&data);
  int text_len = fit_text(&data);
  bench_sample_event(&ev, &data, id, (size_t)text_len);
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    snprintf(subject, sizeof subject, "lark.ev.sample.s%ld", i);
    bus_event_new_id(id);
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK) < 0)
      bench_die("append", bus_last_error());
  }
  if (bus_append_flush(c, 60000, &failed) < 0)
    bench_die("flush", bus_last_error());
  double dt = bench_now_s() - t0;
  msgpack_sbuffer_destroy(&data);
  bus_conn_close(c);
  return (double)n / dt;
}

int
main(int argc, char **argv) {
  long n = 1000000;
  lt_natsd s;
  const bench_opt opts[] = {{"--events", .l = &n}, {NULL}};
  if (bench_opts(argc, argv, opts) < 0) {
    fprintf(stderr, "usage: bench_append [--events N]\n");
    return 2;
  }
  if (n <= 0 || lt_natsd_start(&s, NULL, NULL) < 0)
    return 1;
  /* A B B A: load drift on a shared machine hits both sides alike */
  long h = n / 2 > 0 ? n / 2 : 1;
  double r1 = run_raw(s.url, h, "BENCH_RAW_1");
  double b1 = run_bus(s.url, h);
  run_raw(s.url, 1, "BENCH_RAW_X"); /* drops LARK_EVENTS: fresh again */
  double b2 = run_bus(s.url, h);
  double r2 = run_raw(s.url, h, "BENCH_RAW_2");
  double raw = 2 / (1 / r1 + 1 / r2), bus = 2 / (1 / b1 + 1 / b2);
  n = 2 * h;
  printf("append async, %d-byte events, %ld events, file storage\n", BODY, n);
  printf("  raw nats.c js_PublishMsgAsync: %10.0f msgs/s\n", raw);
  printf("  libbus bus_append_async:       %10.0f msgs/s\n", bus);
  printf("  ratio libbus/raw:              %10.2f (target >= 0.90)\n",
         bus / raw);
  lt_natsd_stop(&s);
  return 0;
}
