/*
 * schedplay.h - a test playing lark-scheduler and the nodes for the RL
 * engine: the scheduler's events appended as it appends them (checked,
 * prev = the subject's last seq in LARK_EVENTS), and a stage.report sent
 * on a node's ingress subject as lark-edge sends it. The writer and the
 * reader of the last seq are separate connections, so a test can write
 * under the lark-scheduler principal and read as admin. Failing an append
 * of the scheduler's fails the test (Criterion): part of larkbed.
 */
#ifndef LARK_TEST_SCHEDPLAY_H
#define LARK_TEST_SCHEDPLAY_H

#include <stdint.h>

#include "bus.h"

/* data (type's generated struct) appended on subject through w as
 * lark-scheduler does, on top of the subject's last event as r reads it. */
void lt_as_scheduler(bus_conn *w, bus_conn *r, const char *subject,
                     bus_type type, const void *data);

/* node.registered for node name (cluster c1) at addr; cpu > 0: the
 * capacity it offers, 0: none said. */
void lt_sched_node(bus_conn *w, bus_conn *r, const char *name, const char *addr,
                   uint64_t cpu);

/* Nodes n1 (127.0.0.1) and n2 (127.0.0.2) registered (cpu as above), then
 * RL Job job submitted: a learner (Actor) and two samplers (Rollout);
 * placed in pool default, <job>-learner-0 and <job>-sampler-0 on n1,
 * <job>-sampler-1 on n2; then Running. */
void lt_sched_rl_job(bus_conn *w, bus_conn *r, const char *job, uint64_t cpu);

/* Node node reports job's pod's stage step done, with metric reward, as
 * lark-edge does: on lark.in.<node>.engine.stage.<pod> through c. 0, or
 * bus_append's error (logged with the subject). */
int lt_stage_report(bus_conn *c, const char *node, const char *job,
                    const char *pod, const char *stage, uint64_t step,
                    int64_t reward);

#endif
