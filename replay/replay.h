/*
 * replay.h - rebuild a view from the stream, and check a live one.
 *
 * A rebuild runs the view's own apply from sequence 1, or from a snapshot,
 * into a fresh directory, up to a sequence or a time, with decide off and
 * MDB_NOSYNC (one sync at the end). It never touches the live view.
 *
 * Verify asks the live service for {seq, digest}, rebuilds to that seq
 * and compares digests (docs/design.md section 5).
 */
#ifndef LARK_REPLAY_H
#define LARK_REPLAY_H

#include "bus.h"

/* A view larkbus knows how to rebuild: its service's own definition
 * (tables, apply, and the stream and filter it reads) and its reads. */
typedef struct lark_view_entry {
  const char *name; /* "catalog"; also the service's status name */
  void (*def)(bus_view_def *def);
  bus_query_fn query; /* its reads, live and --at; may be NULL */
} lark_view_entry;

/* The entry for name, or NULL. */
const lark_view_entry *lark_view_find(const char *name);
/* All entries, NULL-name terminated. */
extern const lark_view_entry lark_views[];

typedef struct lark_replay_opts {
  const char *out_dir;       /* must not exist, or be empty */
  const char *from_snapshot; /* a snapshot directory, or NULL */
  uint64_t until_seq;        /* 0: the stream's end at start */
  int64_t until_ns;          /* 0: no time bound */
  int batch;                 /* events per transaction; default 4096 */
  /* progress: called after each transaction (may be NULL) */
  void (*progress)(uint64_t seq, uint64_t end, uint64_t events, void *ud);
  void *ud;
} lark_replay_opts;

typedef struct lark_replay_result {
  uint64_t seq;    /* applied sequence of the rebuilt view */
  uint64_t events; /* messages read */
  uint8_t digest[32];
  double seconds;
} lark_replay_result;

void lark_replay_opts_init(lark_replay_opts *o);

/* Rebuild ve into o->out_dir. The view is closed on return. */
int lark_replay_run(bus_conn *c, const lark_view_entry *ve,
                    const lark_replay_opts *o, lark_replay_result *res);

/*
 * Verify: query the live service, rebuild to its seq into out_dir (a
 * temporary directory when NULL, removed after), compare. Returns 0 when
 * equal, BUS_ECORRUPT when the digests differ; fills live and res.
 */
int lark_replay_verify(bus_conn *c, const lark_view_entry *ve,
                       const char *out_dir, bus_status *live,
                       lark_replay_result *res);

#endif
