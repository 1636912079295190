/*
 * ports.c - loopback TCP ports for the servers a test starts.
 */
#include "ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wait.h"

static struct sockaddr_in
loopback(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  return a;
}

int
lt_free_port(void) {
  struct sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

int
lt_port_open(int port) {
  struct sockaddr_in a = loopback(port);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

int
lt_wait_port(int port, int seconds) {
  for (int i = 0; i < seconds * 10; i++, lt_sleep_ms(100))
    if (lt_port_open(port))
      return 1;
  return 0;
}
