/*
 * edgebed.h - the bed of the tests that run Jobs on two real lark-edge
 * nodes, edge-1 and edge-2, beside a real lark-scheduler, each under its
 * own credentials (test_edge, test_node_streams): the platform, its
 * agents started (and started again), and Jobs of `sh -c` pods commanded
 * as admin. Each call fails the test when it cannot do its part.
 */
#ifndef LARK_TEST_EDGEBED_H
#define LARK_TEST_EDGEBED_H

#include "bed.h"

/* "edge-1", "edge-2". */
extern const char *const lt_edge_names[2];

/*
 * lt_tmpdir(dir, cap, tag), lt_edge_bed_up for edge-1 and edge-2, and
 * both agents (lt_edge_start with extra): pids[0] and pids[1] the agents,
 * pids[2] lark-scheduler, the order lt_bed_down ends them in.
 */
void lt_two_edges_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
                     const char *tag, const char *const extra[], pid_t pids[3]);

/* Agent i (0: edge-1, 1: edge-2) started (again): lt_must_start_edge with
 * its credentials, --cluster c1, then extra (NULL-terminated, at most 19). */
pid_t lt_edge_start(const char *url, const char *dir, int i,
                    const char *const extra[]);

/*
 * A Job of one task "a" (role Actor) of replicas pods of `sh -c script`,
 * each asking cpu 1, memory 64 and gpus GPUs, retried up to retries
 * times, spread over the nodes by strategy (NULL: the default); applied
 * on conn, failing the test when refused.
 */
void lt_sh_job(bus_conn *conn, const char *name, int replicas, int gpus,
               int retries, const char *strategy, const char *script);

/* job.<verb> {name} on conn, failing the test when refused. */
void lt_job_verb(bus_conn *conn, const char *verb, const char *name);

#endif
