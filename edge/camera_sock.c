/*
 * camera_sock.c - <data>/run/camera-ctrl.sock, where the pods that hold a
 * camera take its frames (edge/README.md, "Cameras"). One JSON object per
 * line each way; a frame is a header line and then its JPEG bytes:
 *
 *   {"op":"list"}                  {"ok":true,"cameras":[camera,...]}
 *   {"op":"open","camera":C}       {"ok":true,"camera":camera}
 *   {"op":"capture","camera":C,"count":N}   N frames
 *   {"op":"watch","camera":C}      frames until the client sends a line,
 *                                  then {"ok":true,"stopped":true,
 *                                  "frames":n}
 *   {"op":"close","camera":C}      {"ok":true,"frames":n,"bytes":b}
 *   frame: {"ok":true,"frame":{"seq","ts","width","height",
 *           "format":"jpeg","size":S}}\n and S bytes
 *   camera: {"name","width","height","fps","source","holder"}
 *
 * The caller is the pod whose process it is (edge_peer_pod, when it
 * connects); anything but list is refused unless that pod holds the
 * camera. A capture or watch opens the camera's session when the pod had
 * not. Lines that come while frames are being sent wait (during a watch,
 * the first one ends it). A connection has one frame in flight: made on
 * a libuv worker (the loop never encodes), then written; the next is
 * started when the last is written, after its pacing slot, so a slow
 * reader slows its own frames and nobody else's.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "camera_req.h"
#include "camera_sock.h"
#include "log.h"
#include "peer.h"

enum { IN_MAX = 65536 };

typedef struct edge_cam_conn {
  uv_pipe_t pipe;
  uv_timer_t pace;
  uv_work_t work;
  uv_write_t w;
  edge_cam_sock *s;
  edge_cameras *cs; /* s->cs */
  struct edge_cam_conn *next;
  char pod[EDGE_POD_SZ]; /* "" : not a pod of this node */
  char *in;              /* bytes read and not yet taken */
  size_t inlen, incap;
  int refs, closing, taking;
  /* The frames being sent: cam != NULL while they are. */
  edge_cam *cam;
  uint32_t left; /* capture: frames still to send */
  int watching, stop;
  uint64_t sent;
  edge_frame f;
  int rc;
  char hdr[256], err[512];
} edge_cam_conn;

typedef struct line_req {
  uv_write_t w;
  char text[];
} line_req;

static void take_lines(edge_cam_conn *k);
static void frame_next(edge_cam_conn *k);

static void
conn_unref(edge_cam_conn *k) {
  if (--k->refs)
    return;
  edge_buf_free(&k->f.jpeg);
  free(k->in);
  free(k);
}

static void
on_handle_closed(uv_handle_t *h) {
  conn_unref(h->data);
}

/* The session pod opened ends with its last connection. */
static void
sessions_end(edge_cam_conn *k) {
  edge_cameras *cs = k->cs;
  for (edge_cam_conn *o = k->s->conns; o; o = o->next)
    if (o != k && !o->closing && !strcmp(o->pod, k->pod))
      return;
  for (int i = 0; i < cs->n; i++)
    if (cs->v[i].opened && !strcmp(cs->v[i].pod, k->pod))
      edge_cam_session_close(cs, &cs->v[i]);
}

static void
conn_close(edge_cam_conn *k) {
  if (k->closing)
    return;
  k->closing = 1;
  for (edge_cam_conn **pp = &k->s->conns; *pp; pp = &(*pp)->next)
    if (*pp == k) {
      *pp = k->next;
      break;
    }
  if (k->pod[0])
    sessions_end(k);
  uv_close((uv_handle_t *)&k->pipe, on_handle_closed);
  uv_close((uv_handle_t *)&k->pace, on_handle_closed);
}

static void
on_line_written(uv_write_t *w, int status) {
  (void)status;
  free(w->data);
}

/* o (taken) as one line to k. */
static void
send_json(edge_cam_conn *k, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  size_t n = s ? strlen(s) : 0;
  line_req *r = s && !k->closing ? malloc(sizeof *r + n + 1) : NULL;
  if (r) {
    memcpy(r->text, s, n);
    r->text[n] = '\n';
    r->w.data = r;
    uv_buf_t b = uv_buf_init(r->text, (unsigned)n + 1);
    if (uv_write(&r->w, (uv_stream_t *)&k->pipe, &b, 1, on_line_written))
      free(r);
  }
  free(s);
}

static void
send_error(edge_cam_conn *k, const char *why) {
  send_json(k, json_pack("{s:s}", "error", why));
}

static json_t *
camera_json(edge_cameras *cs, const edge_cam *c) {
  char holder[EDGE_POD_SZ], source[EDGE_DEV_PATH_SZ + 8];
  const edge_device *d = c->dev;
  edge_cam_holder(cs, c, holder, sizeof holder);
  snprintf(source, sizeof source, "%s%s",
           d->source == EDGE_CAM_PATTERN ? "pattern"
           : d->source == EDGE_CAM_FILES ? "files:"
                                         : "v4l2:",
           d->source == EDGE_CAM_PATTERN ? "" : d->path);
  return json_pack("{s:s,s:I,s:I,s:I,s:s,s:o}", "name", d->name, "width",
                   (json_int_t)d->width, "height", (json_int_t)d->height, "fps",
                   (json_int_t)d->fps, "source", source, "holder",
                   holder[0] ? json_string(holder) : json_null());
}

/* ------------------------------------------------------------- frames */

static void
frame_work(uv_work_t *w) {
  edge_cam_conn *k = w->data;
  k->rc = edge_cam_frame(k->cam, &k->f, 0, k->err, sizeof k->err);
}

/* The frames end: a watch says so; the lines that waited are taken. */
static void
stream_end(edge_cam_conn *k) {
  if (k->watching && !k->rc)
    send_json(k, json_pack("{s:b,s:b,s:I}", "ok", 1, "stopped", 1, "frames",
                           (json_int_t)k->sent));
  k->cam = NULL;
  take_lines(k);
}

static void
on_frame_written(uv_write_t *w, int status) {
  edge_cam_conn *k = w->data;
  if (status < 0 || k->closing) {
    conn_close(k);
    conn_unref(k);
    return;
  }
  conn_unref(k);
  k->sent++;
  if (k->watching ? !k->stop : --k->left > 0)
    frame_next(k);
  else
    stream_end(k);
}

static void
frame_send(edge_cam_conn *k) {
  edge_cam *c = k->cam;
  const edge_device *d = c->dev;
  int n = snprintf(k->hdr, sizeof k->hdr,
                   "{\"ok\":true,\"frame\":{\"seq\":%llu,\"ts\":%lld,"
                   "\"width\":%u,\"height\":%u,\"format\":\"jpeg\","
                   "\"size\":%zu}}\n",
                   (unsigned long long)k->f.seq, (long long)k->f.ts, d->width,
                   d->height, k->f.jpeg.len);
  if (c->opened && !strcmp(c->pod, k->pod)) {
    c->frames++;
    c->bytes += k->f.jpeg.len;
  }
  uv_buf_t b[2] = {
      uv_buf_init(k->hdr, (unsigned)n),
      uv_buf_init((char *)k->f.jpeg.data, (unsigned)k->f.jpeg.len)};
  k->w.data = k;
  k->refs++;
  if (uv_write(&k->w, (uv_stream_t *)&k->pipe, b, 2, on_frame_written)) {
    conn_unref(k);
    conn_close(k);
  }
}

static void
frame_done(uv_work_t *w, int status) {
  edge_cam_conn *k = w->data;
  if (k->closing || status) {
    conn_unref(k);
    return;
  }
  conn_unref(k);
  if (k->rc) {
    edge_logf("warn", k->cam->dev->name, "%s", k->err);
    edge_cam_report(k->cs, k->cam, "error", k->pod, 0, 0, 0, k->err);
    send_error(k, k->err);
    stream_end(k);
  } else
    frame_send(k);
}

static void
frame_make(edge_cam_conn *k) {
  k->work.data = k;
  k->refs++;
  if (uv_queue_work(k->cs->a->loop, &k->work, frame_work, frame_done)) {
    conn_unref(k);
    k->rc = -1;
    snprintf(k->err, sizeof k->err, "cannot queue the frame");
    send_error(k, k->err);
    stream_end(k);
  }
}

static void
on_pace(uv_timer_t *t) {
  frame_make(t->data);
}

static void
frame_next(edge_cam_conn *k) {
  int64_t wait = edge_cam_pace(k->cam);
  if (wait <= 0)
    frame_make(k);
  else
    uv_timer_start(&k->pace, on_pace, (uint64_t)((wait + 999999) / 1000000), 0);
}

/* ------------------------------------------------------------ requests */

static void
op_list(edge_cam_conn *k) {
  json_t *arr = json_array();
  for (int i = 0; arr && i < k->cs->n; i++)
    json_array_append_new(arr, camera_json(k->cs, &k->cs->v[i]));
  send_json(k, json_pack("{s:b,s:o}", "ok", 1, "cameras", arr));
}

/* c for req, once the caller may use it, or NULL (answered). */
static edge_cam *
camera_for(edge_cam_conn *k, const edge_cam_req *r) {
  char why[512];
  edge_cam *c = edge_cam_find(k->cs, r->camera);
  if (!c)
    snprintf(why, sizeof why, "no camera %s on this node", r->camera);
  else if (!edge_cam_held_by(k->cs, c, k->pod))
    snprintf(why, sizeof why, "pod %s does not hold camera %s", k->pod,
             r->camera);
  else
    return c;
  send_error(k, why);
  return NULL;
}

static void
handle(edge_cam_conn *k, const char *line, size_t len) {
  edge_cam_req r;
  char why[300];
  edge_cam *c;
  if (edge_cam_req_parse(line, len, &r, why, sizeof why))
    send_error(k, why);
  else if (!k->pod[0])
    send_error(k, "the caller is not a pod on this node");
  else if (r.op == EDGE_CAM_LIST)
    op_list(k);
  else if (!(c = camera_for(k, &r)))
    return;
  else if (r.op == EDGE_CAM_OPEN) {
    edge_cam_session_open(k->cs, c, k->pod);
    send_json(k,
              json_pack("{s:b,s:o}", "ok", 1, "camera", camera_json(k->cs, c)));
  } else if (r.op == EDGE_CAM_CLOSE) {
    int mine = c->opened && !strcmp(c->pod, k->pod);
    json_int_t frames = mine ? (json_int_t)c->frames : 0;
    json_int_t bytes = mine ? (json_int_t)c->bytes : 0;
    if (mine)
      edge_cam_session_close(k->cs, c);
    send_json(k, json_pack("{s:b,s:I,s:I}", "ok", 1, "frames", frames, "bytes",
                           bytes));
  } else {
    edge_cam_session_open(k->cs, c, k->pod);
    k->cam = c;
    k->left = r.count;
    k->watching = r.op == EDGE_CAM_WATCH;
    k->stop = 0;
    k->sent = 0;
    k->rc = 0;
    frame_next(k);
  }
}

/* The next whole line of k's input (without '\n' or a '\r' before it)
 * into *line, *len; 0 when none is whole yet. *used: bytes to drop. */
static int
next_line(edge_cam_conn *k, const char **line, size_t *len, size_t *used) {
  char *nl = k->inlen ? memchr(k->in, '\n', k->inlen) : NULL;
  if (!nl)
    return 0;
  *line = k->in;
  *len = (size_t)(nl - k->in);
  *used = *len + 1;
  if (*len && k->in[*len - 1] == '\r')
    (*len)--;
  return 1;
}

static void
take_lines(edge_cam_conn *k) {
  const char *line;
  size_t len, used;
  if (k->taking) /* a stream that ended at once, from inside handle() */
    return;
  k->taking = 1;
  while (!k->closing && next_line(k, &line, &len, &used)) {
    if (k->cam && !k->watching)
      break;    /* after the frames */
    if (k->cam) /* any line ends a watch */
      k->stop = 1;
    else if (len)
      handle(k, line, len);
    memmove(k->in, k->in + used, k->inlen - used);
    k->inlen -= used;
  }
  k->taking = 0;
}

/* ------------------------------------------------------------ the socket */

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h, (void)hint;
  static char chunk[IN_MAX];
  *buf = uv_buf_init(chunk, sizeof chunk);
}

static void
on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
  edge_cam_conn *k = h->data;
  if (n < 0) {
    conn_close(k);
    return;
  }
  if (k->closing || n == 0)
    return;
  if (k->inlen + (size_t)n > IN_MAX) {
    send_error(k, "a line longer than 64 KiB, or too many waiting");
    conn_close(k);
    return;
  }
  if (k->inlen + (size_t)n > k->incap) {
    char *g = realloc(k->in, IN_MAX);
    if (!g) {
      conn_close(k);
      return;
    }
    k->in = g;
    k->incap = IN_MAX;
  }
  memcpy(k->in + k->inlen, buf->base, (size_t)n);
  k->inlen += (size_t)n;
  take_lines(k);
}

static void
on_conn(uv_stream_t *srv, int status) {
  edge_cam_sock *s = srv->data;
  edge_cameras *cs = s->cs;
  if (status < 0)
    return;
  edge_cam_conn *k = calloc(1, sizeof *k);
  if (!k)
    return;
  k->s = s;
  k->cs = cs;
  k->refs = 2; /* pipe and timer */
  uv_pipe_init(cs->a->loop, &k->pipe, 0);
  uv_timer_init(cs->a->loop, &k->pace);
  k->pipe.data = k->pace.data = k;
  k->next = s->conns;
  s->conns = k;
  uv_os_fd_t fd;
  if (uv_accept(srv, (uv_stream_t *)&k->pipe) ||
      uv_fileno((uv_handle_t *)&k->pipe, &fd)) {
    conn_close(k);
    return;
  }
  if (edge_peer_pod(cs->a, fd, k->pod, sizeof k->pod))
    k->pod[0] = 0;
  if (uv_read_start((uv_stream_t *)&k->pipe, on_alloc, on_read))
    conn_close(k);
}

int
edge_cam_sock_listen(edge_cam_sock *s, edge_cameras *cs) {
  s->cs = cs;
  char dir[sizeof s->path];
  snprintf(dir, sizeof dir, "%s", s->path);
  char *slash = strrchr(dir, '/');
  if (slash) {
    *slash = 0;
    mkdir(dir, 0755);
  }
  unlink(s->path);
  uv_pipe_init(cs->a->loop, &s->srv, 0);
  s->srv.data = s;
  s->listening = 1;
  int rc = uv_pipe_bind(&s->srv, s->path);
  if (!rc)
    rc = uv_listen((uv_stream_t *)&s->srv, 64, on_conn);
  if (rc) {
    edge_cam_sock_close(s);
    return bus_error(BUS_EINVAL, "camera socket %s: %s", s->path,
                     uv_strerror(rc));
  }
  chmod(s->path, 0666); /* pods may run as other users; peer says who */
  return 0;
}

void
edge_cam_sock_close(edge_cam_sock *s) {
  while (s->conns)
    conn_close(s->conns);
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->srv, NULL);
    unlink(s->path);
  }
}
