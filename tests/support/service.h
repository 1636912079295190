/*
 * service.h - the platform's services as real processes beside a test's
 * broker: started under a name of their own, and waited for.
 */
#ifndef LARK_TEST_SERVICE_H
#define LARK_TEST_SERVICE_H

#include <sys/types.h>

#include "bus.h"

/*
 * Start bin_name with --url url, --data dir/<name> and --name name, its
 * output in dir/<name>.log. Returns its pid, or -1.
 */
pid_t lt_start_named_service(const char *bin_name, const char *url,
                             const char *dir, const char *name);

/* Whether service answers a status query (1), asked every 100 ms up to
 * tries times (200 ms each); 0 when it never did. */
int lt_service_answers(bus_conn *c, const char *service, int tries);

#endif
