/*
 * jobcheck.h - what a Job's spec must say beyond its schema, checked the
 * same way by lark-scheduler (job.apply) and lark-dag (workflow.apply, for
 * each of its Job templates) before a Job is stored.
 *
 * The schema checks shapes and ranges (engine.mode, engine.maxStaleness,
 * rayPort); what it cannot check is that spec.engine.stages names task
 * templates of the same Job. A stage named with no tasks is not part of
 * the loop and is fine, as is a pipeline Job with no rollout stage.
 * Events already in a log are never refused by this: only a submit is.
 */
#ifndef LARK_JOBCHECK_H
#define LARK_JOBCHECK_H

#include "bus.h"

/*
 * Check spec (a JobSpec map, as submitted) whose path is at ("spec",
 * "spec.jobTemplates[2].spec"): each name in engine.stages.<stage> must be
 * the name of one of spec.tasks. One {path, reason} per problem into
 * errs[*n..max), e.g. {spec.engine.stages.train[0], no task named "x"};
 * *n counts them all (also past max). Returns 0 or BUS_EFIELD.
 */
int lark_job_engine_check(const msgpack_object *spec, const char *at,
                          bus_field_err *errs, int max, int *n);

#endif
