/*
 * cutlink.c - a TCP link a test can cut (see cutlink.h). One thread polls
 * the listening socket and every relayed pair; cut and mend are requests
 * it carries out between two polls, so the sockets have one owner.
 */
#include "cutlink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_PAIRS = 64 };

struct lt_cutlink {
  int port, target, lfd;
  int a[MAX_PAIRS], b[MAX_PAIRS]; /* accepted side, target side; -1 free */
  atomic_int want;                /* 0 nothing, 1 cut, 2 mend, 3 stop */
  atomic_int done, accepted;
  pthread_t thread;
};

static int
listen_on(int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
      listen(fd, 16) < 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

static int
dial(int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

static void
close_pair(lt_cutlink *l, int i) {
  close(l->a[i]);
  close(l->b[i]);
  l->a[i] = l->b[i] = -1;
}

static void
accept_one(lt_cutlink *l) {
  int c = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (c < 0)
    return;
  int t = dial(l->target);
  for (int i = 0; t >= 0 && i < MAX_PAIRS; i++)
    if (l->a[i] < 0) {
      l->a[i] = c;
      l->b[i] = t;
      atomic_fetch_add(&l->accepted, 1);
      return;
    }
  close(c);
  if (t >= 0)
    close(t);
}

/* What the test asked for, between two polls. */
static int
serve_request(lt_cutlink *l) {
  int want = atomic_exchange(&l->want, 0);
  if (want == 1 || want == 3) {
    for (int i = 0; i < MAX_PAIRS; i++)
      if (l->a[i] >= 0)
        close_pair(l, i);
    if (l->lfd >= 0)
      close(l->lfd);
    l->lfd = -1;
  } else if (want == 2 && l->lfd < 0) {
    l->lfd = listen_on(l->port);
  }
  if (want)
    atomic_store(&l->done, want);
  return want == 3;
}

static void *
run(void *arg) {
  lt_cutlink *l = arg;
  char buf[16384];
  while (!serve_request(l)) {
    struct pollfd p[1 + 2 * MAX_PAIRS];
    int n = 0, idx[1 + 2 * MAX_PAIRS];
    p[n] = (struct pollfd){.fd = l->lfd, .events = POLLIN};
    idx[n++] = -1;
    for (int i = 0; i < MAX_PAIRS; i++)
      if (l->a[i] >= 0) {
        p[n] = (struct pollfd){.fd = l->a[i], .events = POLLIN};
        idx[n++] = i;
        p[n] = (struct pollfd){.fd = l->b[i], .events = POLLIN};
        idx[n++] = i;
      }
    if (poll(p, (nfds_t)n, 50) <= 0)
      continue;
    if (p[0].fd >= 0 && (p[0].revents & POLLIN))
      accept_one(l);
    for (int k = 1; k < n; k++) {
      int i = idx[k];
      if (!p[k].revents || l->a[i] < 0)
        continue;
      int to = p[k].fd == l->a[i] ? l->b[i] : l->a[i];
      ssize_t r = read(p[k].fd, buf, sizeof buf);
      if (r <= 0 || write(to, buf, (size_t)r) != r)
        close_pair(l, i);
    }
  }
  return NULL;
}

lt_cutlink *
lt_cutlink_start(int target) {
  lt_cutlink *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  l->target = target;
  memset(l->a, -1, sizeof l->a);
  memset(l->b, -1, sizeof l->b);
  l->lfd = listen_on(0);
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  if (l->lfd < 0 || getsockname(l->lfd, (struct sockaddr *)&sa, &len) < 0 ||
      pthread_create(&l->thread, NULL, run, l) != 0) {
    if (l->lfd >= 0)
      close(l->lfd);
    free(l);
    return NULL;
  }
  l->port = ntohs(sa.sin_port);
  return l;
}

int
lt_cutlink_port(const lt_cutlink *l) {
  return l->port;
}

int
lt_cutlink_accepted(const lt_cutlink *l) {
  return atomic_load(&((lt_cutlink *)l)->accepted);
}

static void
ask(lt_cutlink *l, int want) {
  atomic_store(&l->done, 0);
  atomic_store(&l->want, want);
  while (atomic_load(&l->done) != want)
    usleep(10000);
}

void
lt_cutlink_cut(lt_cutlink *l) {
  ask(l, 1);
}

void
lt_cutlink_mend(lt_cutlink *l) {
  ask(l, 2);
}

void
lt_cutlink_stop(lt_cutlink *l) {
  if (!l)
    return;
  ask(l, 3);
  pthread_join(l->thread, NULL);
  free(l);
}
