/*
 * bridge.c - one SSH channel joined to one socket, with flow control.
 *
 * Invariants:
 * - The socket is watched through an epoll descriptor of the bridge's
 *   own, which is the only descriptor the bridge puts in the ssh_event
 *   (added at creation, removed at free). What the bridge waits for
 *   changes with epoll_ctl, which is safe from inside any libssh
 *   callback; adding or removing ssh_event descriptors inside the
 *   event's own dispatch is not (libssh's poll context moves its slots).
 * - Channel to socket: the data callback sends what the socket takes
 *   and returns that count; libssh keeps the rest (`pending` bytes; the
 *   callback always sees the whole buffer, so `pending` is exact) and
 *   stops growing the window. When the socket is writable again, the
 *   whole pending amount is read out with ssh_channel_read_nonblocking
 *   into `ob` at once: each such read may re-open the window to its full
 *   size, so taking it all bounds what libssh buffers to one window.
 *   ssh_channel_read_nonblocking is only called while pending > 0, so it
 *   never runs the session's packet loop.
 * - Socket to channel: the socket is read only while the channel's
 *   remote window has room, and never more than the window, so
 *   ssh_channel_write does not wait for a window. Bytes a write did not
 *   take (a key re-exchange in a non-blocking session) stay in `ib` and
 *   go first next time.
 * - A channel may hold data or EOF from before the bridge's callbacks
 *   were set; the first round (the socket is writable at once) probes it
 *   with ssh_channel_poll.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "bridge.h"

#define IO_CHUNK 65536
#define READS_PER_ROUND 4

struct relay_bridge {
  ssh_event ev;
  ssh_session ssh;
  ssh_channel ch;
  int fd, ep;
  uint32_t want; /* epoll interest now registered (0: not registered) */
  int in_event;  /* ep is in ev */
  /* channel -> socket */
  uint32_t pending; /* bytes libssh holds for us */
  uint8_t *ob;      /* taken from libssh, not yet sent */
  size_t olen, ooff, ocap;
  int probe;     /* look for data buffered before the callbacks */
  int ch_eof;    /* the channel's peer sent EOF */
  int ch_closed; /* ... or closed it */
  int wr_shut;   /* the socket's write side is shut */
  /* socket -> channel */
  uint8_t ib[IO_CHUNK];
  size_t ilen, ioff;
  int fd_eof;   /* the socket's peer shut its side */
  int eof_sent; /* ssh_channel_send_eof done */
  int dead;
  uint64_t to_fd, to_ch;
  struct ssh_channel_callbacks_struct cb;
};

static int
ob_left(const relay_bridge *b) {
  return b->olen > b->ooff;
}

/* Register the epoll interest the state calls for. */
static void
sync_interest(relay_bridge *b) {
  uint32_t want = 0;
  if (!b->dead) {
    if (!b->fd_eof && (b->ilen > b->ioff || ssh_channel_window_size(b->ch)))
      want |= EPOLLIN;
    if (!b->wr_shut && (b->probe || ob_left(b) || b->pending))
      want |= EPOLLOUT;
    if (b->ilen > b->ioff && ssh_channel_window_size(b->ch))
      want |= EPOLLOUT; /* retry the unsent bytes soon */
  }
  if (want == b->want)
    return;
  struct epoll_event e = {.events = want, .data.ptr = b};
  int op = !want ? EPOLL_CTL_DEL : b->want ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(b->ep, op, b->fd, &e) && op != EPOLL_CTL_DEL)
    b->dead = 1;
  b->want = want;
}

/* The channel side is finished and every byte is out: shut the socket. */
static void
maybe_shut(relay_bridge *b) {
  if (b->wr_shut || ob_left(b) || b->pending)
    return;
  if (!b->ch_eof && b->ch && ssh_channel_is_eof(b->ch))
    b->ch_eof = 1;
  if (b->ch_eof) {
    shutdown(b->fd, SHUT_WR);
    b->wr_shut = 1;
  }
}

/* ---------------------------------------------------- channel -> socket */

/* Send what the socket takes; -1 when it failed for good. */
static ssize_t
send_some(relay_bridge *b, const void *p, size_t n) {
  ssize_t w = send(b->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w >= 0)
    return w;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return 0;
  b->dead = 1;
  return -1;
}

static int
on_data(ssh_session ssh, ssh_channel ch, void *data, uint32_t len,
        int is_stderr, void *ud) {
  relay_bridge *b = ud;
  (void)ssh;
  (void)ch;
  if (is_stderr || b->dead || b->wr_shut)
    return (int)len; /* nowhere to go: drop */
  uint32_t took = 0;
  if (!ob_left(b)) {
    ssize_t w = send_some(b, data, len);
    if (w < 0)
      return (int)len;
    took = (uint32_t)w;
  }
  b->to_fd += took;
  b->pending = len - took;
  sync_interest(b);
  return (int)took;
}

/* Flush ob; 1 when it is empty. */
static int
flush_ob(relay_bridge *b) {
  while (ob_left(b)) {
    ssize_t w = send_some(b, b->ob + b->ooff, b->olen - b->ooff);
    if (w <= 0)
      return 0;
    b->ooff += (size_t)w;
    b->to_fd += (uint64_t)w;
  }
  b->olen = b->ooff = 0;
  return 1;
}

/* Take everything libssh holds for us into ob. */
static void
take_pending(relay_bridge *b) {
  if (b->ocap < b->pending) {
    uint8_t *p = realloc(b->ob, b->pending);
    if (!p) {
      b->dead = 1;
      return;
    }
    b->ob = p;
    b->ocap = b->pending;
  }
  while (b->pending) {
    int r = ssh_channel_read_nonblocking(b->ch, b->ob + b->olen, b->pending, 0);
    if (r <= 0) {
      b->pending = 0;
      if (r == SSH_ERROR)
        b->dead = 1;
      break;
    }
    b->olen += (size_t)r;
    b->pending -= (uint32_t)r;
  }
}

/* The data or EOF a channel got before the bridge's callbacks were set. */
static void
probe(relay_bridge *b) {
  b->probe = 0;
  int n = ssh_channel_poll(b->ch, 0);
  if (n > 0 && (uint32_t)n > b->pending)
    b->pending = (uint32_t)n;
  else if (n == SSH_EOF)
    b->ch_eof = 1;
}

static void
on_writable(relay_bridge *b) {
  if (b->probe)
    probe(b);
  if (b->dead || b->wr_shut || !flush_ob(b))
    return;
  if (b->pending) {
    take_pending(b);
    flush_ob(b);
  }
}

/* ---------------------------------------------------- socket -> channel */

/* Write ib's unsent bytes; 1 when all went. */
static int
flush_ib(relay_bridge *b) {
  while (b->ilen > b->ioff) {
    int w = ssh_channel_write(b->ch, b->ib + b->ioff,
                              (uint32_t)(b->ilen - b->ioff));
    if (w == SSH_ERROR) {
      b->dead = 1;
      return 0;
    }
    if (w <= 0)
      return 0;
    b->ioff += (size_t)w;
    b->to_ch += (uint64_t)w;
  }
  b->ilen = b->ioff = 0;
  return 1;
}

static void
send_eof(relay_bridge *b) {
  if (b->eof_sent || b->ilen > b->ioff)
    return;
  b->eof_sent = 1;
  if (!ssh_channel_is_closed(b->ch) && ssh_channel_send_eof(b->ch) == SSH_ERROR)
    b->dead = 1;
}

static void
on_readable(relay_bridge *b) {
  for (int i = 0; i < READS_PER_ROUND && !b->dead && !b->fd_eof; i++) {
    if (!flush_ib(b))
      return;
    uint32_t win = ssh_channel_window_size(b->ch);
    if (!win)
      return;
    ssize_t r =
        recv(b->fd, b->ib, win < IO_CHUNK ? win : IO_CHUNK, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return;
    if (r < 0) {
      b->dead = 1;
      return;
    }
    if (r == 0) {
      b->fd_eof = 1;
      break;
    }
    b->ilen = (size_t)r;
    b->ioff = 0;
  }
  if (!b->dead)
    flush_ib(b);
}

static int
on_fd(socket_t ep, int revents, void *ud) {
  relay_bridge *b = ud;
  struct epoll_event e;
  (void)revents;
  if (epoll_wait(ep, &e, 1, 0) == 1) {
    if (e.events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
      on_writable(b);
    if (e.events & (EPOLLIN | EPOLLERR | EPOLLHUP))
      on_readable(b);
    if (b->fd_eof)
      send_eof(b);
    maybe_shut(b);
  }
  sync_interest(b);
  return 0;
}

/* ------------------------------------------------------------ callbacks */

static void
on_eof(ssh_session ssh, ssh_channel ch, void *ud) {
  relay_bridge *b = ud;
  (void)ssh;
  (void)ch;
  b->ch_eof = 1;
  maybe_shut(b);
  sync_interest(b);
}

static void
on_close(ssh_session ssh, ssh_channel ch, void *ud) {
  relay_bridge *b = ud;
  (void)ssh;
  (void)ch;
  b->ch_closed = 1;
  b->ch_eof = 1;
  maybe_shut(b);
  sync_interest(b);
}

static int
on_window(ssh_session ssh, ssh_channel ch, uint32_t bytes, void *ud) {
  (void)ssh;
  (void)ch;
  (void)bytes;
  sync_interest(ud);
  return 0;
}

/* -------------------------------------------------------------- public */

static void
close_pair(ssh_channel ch, int fd) {
  if (fd >= 0)
    close(fd);
  if (ch) {
    if (!ssh_channel_is_closed(ch))
      ssh_channel_close(ch);
    ssh_channel_free(ch);
  }
}

relay_bridge *
relay_bridge_new(ssh_event ev, ssh_session ssh, ssh_channel ch, int fd) {
  relay_bridge *b = calloc(1, sizeof *b);
  int fl = fcntl(fd, F_GETFL);
  if (!b || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
      (b->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    free(b);
    close_pair(ch, fd);
    return NULL;
  }
  b->ev = ev;
  b->ssh = ssh;
  b->ch = ch;
  b->fd = fd;
  b->probe = 1;
  b->cb.userdata = b;
  b->cb.channel_data_function = on_data;
  b->cb.channel_eof_function = on_eof;
  b->cb.channel_close_function = on_close;
  b->cb.channel_write_wontblock_function = on_window;
  ssh_callbacks_init(&b->cb);
  ssh_set_channel_callbacks(ch, &b->cb);
  if (ssh_event_add_fd(ev, b->ep, POLLIN, on_fd, b) == SSH_OK)
    b->in_event = 1;
  else
    b->dead = 1;
  sync_interest(b);
  return b;
}

void
relay_bridge_tick(relay_bridge *b) {
  if (b->dead)
    return;
  if (b->ilen > b->ioff && ssh_channel_window_size(b->ch))
    flush_ib(b);
  if (b->fd_eof)
    send_eof(b);
  sync_interest(b);
}

int
relay_bridge_done(const relay_bridge *b) {
  if (b->dead)
    return 1;
  if (b->wr_shut && b->eof_sent)
    return 1;
  /* the peer closed the channel: done once its last bytes are out */
  if ((b->ch_closed || ssh_channel_is_closed(b->ch)) && !ob_left(b) &&
      !b->pending)
    return 1;
  return 0;
}

void
relay_bridge_bytes(const relay_bridge *b, uint64_t *to_fd, uint64_t *to_ch) {
  if (to_fd)
    *to_fd = b->to_fd;
  if (to_ch)
    *to_ch = b->to_ch;
}

void
relay_bridge_free(relay_bridge *b) {
  if (!b)
    return;
  if (b->in_event)
    ssh_event_remove_fd(b->ev, b->ep);
  close(b->ep);
  ssh_remove_channel_callbacks(b->ch, &b->cb);
  close_pair(b->ch, b->fd);
  free(b->ob);
  free(b);
}
