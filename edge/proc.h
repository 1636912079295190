/*
 * proc.h - private to edge/: one process the agent runs or adopted (one
 * attempt of one pod), its output streams and its socket. Loop thread
 * only.
 *
 * An edge_proc is freed when it has ended and every handle it embeds has
 * been closed (the count in `handles` falls to 0 in a close callback).
 */
#ifndef LARK_EDGE_PROC_H
#define LARK_EDGE_PROC_H

#include "edge.h"

typedef struct edge_stream {
  uv_pipe_t pipe;
  edge_proc *p;
  const char *name; /* "stdout" or "stderr" */
  int open, eof;
  size_t len;
  char line[EDGE_LINE_MAX + 8];
} edge_stream;

typedef struct edge_client {
  uv_pipe_t pipe;
  edge_proc *p;
  struct edge_client *next;
  char *buf;
  size_t len, cap;
  int closing;
} edge_client;

struct edge_proc {
  edge_proc *next;
  edge_agent *a;
  char pod[EDGE_POD_SZ];
  char job[EDGE_NAME_SZ];
  char dir[4200];
  char sock_path[256];
  uint32_t attempt;
  int netns;   /* runs in its own network namespace (raw+netns) */
  char ip[16]; /* then its localIP */
  pid_t pid;
  uint64_t ticks;
  int adopted, ended, finishing, stopping, report_stop, silent;
  int handles; /* open handles embedded here (and clients) */
  uv_process_t proc;
  uv_timer_t poll;  /* adopted: is it still there? ended: drain deadline */
  uv_timer_t grace; /* SIGKILL after the grace period */
  int has_proc, has_poll, has_grace, has_srv;
  edge_stream out, err;
  uv_pipe_t srv;
  edge_client *clients;
  msgpack_sbuffer lines; /* packed LogLine maps not yet sent */
  uint32_t nlines;
};

/* logs.c */
int edge_stream_open(edge_proc *p, edge_stream *s, const char *path,
                     const char *name);
void edge_stream_close(edge_stream *s);
void edge_proc_log(edge_proc *p, const char *stream, const char *text,
                   size_t len);
void edge_proc_flush(edge_proc *p);

/* sock.c */
int edge_sock_listen(edge_proc *p);
void edge_sock_close(edge_proc *p);

/* Queue n messages in one store transaction (one sync), in order, all or
 * none, and wake the sender (sender.c; edge_store_enqueue_n, store.c). */
int edge_send_n(edge_agent *a, const edge_msg *msgs, size_t n);
int edge_store_enqueue_n(edge_store *s, const edge_msg *msgs, size_t n);
/* The oldest queued messages, at most max, into q (each freed with
 * edge_queued_free), how many into *n: as edge_store_peek, which is this
 * with max 1; an unreadable one is handed over only first. Then drop
 * every queued message up to key in one transaction (store.c). */
int edge_store_peek_n(edge_store *s, edge_queued *q, size_t max, size_t *n);
int edge_store_drop_upto(edge_store *s, uint64_t key);

/* pods.c */
void edge_proc_handle_closed(uv_handle_t *h);
/* One embedded handle of p closed (frees p after the last). */
void edge_proc_unref(edge_proc *p);
/* Queue a message for this pod's node; loop. */
int edge_proc_send(edge_proc *p, const char *what, const char *type,
                   const msgpack_sbuffer *sb);

#endif
