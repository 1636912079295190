/*
 * relayc.c - the relay tests' echo server and hub session (relayc.h).
 */
#include "relayc.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void *
echo_conn(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)n) != n)
      break;
  close(fd);
  return NULL;
}

typedef struct echo {
  int lfd;
  atomic_int *conns;
} echo;

static void *
echo_main(void *arg) {
  echo e = *(echo *)arg;
  pthread_t t;
  int fd;
  free(arg);
  while ((fd = accept4(e.lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
    if (e.conns)
      atomic_fetch_add(e.conns, 1);
    if (pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd) == 0)
      pthread_detach(t);
    else
      close(fd);
  }
  return NULL;
}

int
lt_echo_start(int lfd, atomic_int *conns) {
  echo *e = malloc(sizeof *e);
  pthread_t t;
  if (!e)
    return -1;
  /* the thread waits in accept (podnet_listen's sockets do not block) */
  fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) & ~O_NONBLOCK);
  *e = (echo){.lfd = lfd, .conns = conns};
  if (pthread_create(&t, NULL, echo_main, e)) {
    free(e);
    return -1;
  }
  pthread_detach(t);
  return 0;
}

ssh_session
lt_ssh_to_hub(const char *host, int port, const char *dir, const char *name) {
  char path[600];
  ssh_key key = NULL, crt = NULL;
  ssh_session s = ssh_new();
  long timeout = 10;
  unsigned int p = (unsigned int)port;
  ssh_options_set(s, SSH_OPTIONS_HOST, host);
  ssh_options_set(s, SSH_OPTIONS_PORT, &p);
  ssh_options_set(s, SSH_OPTIONS_USER, name);
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int ok = ssh_connect(s) == SSH_OK &&
           ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) == 0;
  snprintf(path, sizeof path, "%s/%s-cert.pub", dir, name);
  ok = ok && ssh_pki_import_cert_file(path, &crt) == 0 &&
       ssh_pki_copy_cert_to_privkey(crt, key) == 0 &&
       ssh_userauth_publickey(s, NULL, key) == SSH_AUTH_SUCCESS;
  ssh_key_free(key);
  ssh_key_free(crt);
  if (!ok) {
    ssh_disconnect(s);
    ssh_free(s);
    return NULL;
  }
  return s;
}
