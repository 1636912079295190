/*
 * test_sched_phase.c - the state machines of Jobs, Tasks and Workflows,
 * Task and Job phases derived from their pods, and retries.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "phase.h"

#define N SCHED_PH_NONE
#define PE SCHED_PH_PENDING
#define RU SCHED_PH_RUNNING
#define SU SCHED_PH_SUCCEEDED
#define FA SCHED_PH_FAILED
#define ST SCHED_PH_STOPPED
#define SK SCHED_PH_SKIPPED

Test(sched_phase, names) {
  sched_phase p;
  cr_assert_str_eq(sched_phase_name(SU), "Succeeded");
  cr_assert_str_eq(sched_phase_name(N), "");
  cr_assert_null(sched_phase_name((sched_phase)99));
  cr_assert_eq(sched_phase_parse("Stopped", &p), 0);
  cr_assert_eq(p, ST);
  cr_assert_eq(sched_phase_parse("stopped", &p), BUS_EINVAL);
  cr_assert_eq(sched_phase_parse(NULL, &p), BUS_EINVAL);
}

Test(sched_phase, transitions) {
  static const struct {
    sched_phase from, to;
    int ok;
  } table[] = {
      {N, PE, 1},
      {PE, RU, 1},
      {RU, SU, 1},
      {RU, FA, 1},
      {PE, ST, 1},
      {RU, ST, 1},
      {FA, ST, 1},
      {ST, PE, 1},
      {N, SK, 1},
      {PE, SK, 1},
      {ST, SK, 1},
      {PE, FA, 1},
      {PE, SU, 1},
      {N, RU, 0},
      {N, SU, 0},
      {SU, ST, 0},
      {SU, PE, 0},
      {FA, PE, 0},
      {FA, RU, 0},
      {ST, RU, 0},
      {RU, PE, 0},
      {SK, PE, 0},
      {RU, SK, 0},
      {PE, PE, 0},
      {ST, ST, 0},
      {SU, SU, 0},
      {PE, N, 0},
      {(sched_phase)9, PE, 0},
      {PE, (sched_phase)-1, 0},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    cr_assert_eq(sched_phase_allowed(table[i].from, table[i].to), table[i].ok,
                 "%d -> %d", table[i].from, table[i].to);
  cr_assert(sched_phase_final(SU) && sched_phase_final(SK));
  cr_assert(!sched_phase_final(FA) && !sched_phase_final(ST));
}

static sched_pod
pod(const char *name, sched_phase ph, uint32_t attempt, int exit_code) {
  sched_pod p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", name);
  p.phase = ph;
  p.attempt = attempt;
  p.exit_code = exit_code;
  return p;
}

Test(sched_phase, task_from_pods) {
  char why[128];
  sched_pod pods[3] = {pod("t-0", PE, 0, 0), pod("t-1", PE, 0, 0),
                       pod("t-2", PE, 0, 0)};
  cr_assert_eq(sched_task_phase(pods, 3, 0, why, sizeof why), PE);
  cr_assert_str_eq(why, "");
  pods[1].phase = RU;
  cr_assert_eq(sched_task_phase(pods, 3, 0, NULL, 0), RU);
  pods[0].phase = SU;
  pods[1].phase = SU;
  cr_assert_eq(sched_task_phase(pods, 3, 0, NULL, 0), RU,
               "two done, one pending: running");
  pods[2].phase = SU;
  cr_assert_eq(sched_task_phase(pods, 3, 0, NULL, 0), SU);
  pods[2].exit_code = 3;
  cr_assert_eq(sched_task_phase(pods, 3, 0, why, sizeof why), FA,
               "exit 3 is no success");
  cr_assert_str_eq(why, "pod t-2 failed 1 time (maxRetries 0)");
  for (int i = 0; i < 3; i++)
    pods[i] = pod("t", ST, 0, 0);
  cr_assert_eq(sched_task_phase(pods, 3, 0, NULL, 0), ST);
  cr_assert_eq(sched_task_phase(pods, 0, 0, NULL, 0), PE);
}

Test(sched_phase, task_fails_after_max_retries) {
  char why[128];
  sched_pod pods[2] = {pod("t-0", RU, 0, 0), pod("t-1", FA, 0, 1)};
  /* maxRetries 2: failures at attempts 0 and 1 are retried */
  cr_assert_eq(sched_task_phase(pods, 2, 2, NULL, 0), RU);
  pods[1].attempt = 1;
  cr_assert_eq(sched_task_phase(pods, 2, 2, NULL, 0), RU);
  pods[1].attempt = 2;
  cr_assert_eq(sched_task_phase(pods, 2, 2, why, sizeof why), FA);
  cr_assert_str_eq(why, "pod t-1 failed 3 times (maxRetries 2)");
}

Test(sched_phase, retry_decision) {
  uint32_t next = 77;
  cr_assert_eq(sched_pod_retry(0, 0, &next), 0, "default: no retry");
  cr_assert_eq(next, 77);
  cr_assert_eq(sched_pod_retry(0, 2, &next), 1);
  cr_assert_eq(next, 1);
  cr_assert_eq(sched_pod_retry(1, 2, &next), 1);
  cr_assert_eq(next, 2);
  cr_assert_eq(sched_pod_retry(2, 2, &next), 0);
  cr_assert_eq(sched_pod_retry(5, 100, NULL), 1);
}

Test(sched_phase, job_from_tasks) {
  sched_phase t[3] = {PE, PE, PE};
  cr_assert_eq(sched_job_phase(t, 3), PE);
  t[0] = RU;
  cr_assert_eq(sched_job_phase(t, 3), RU);
  t[0] = SU;
  cr_assert_eq(sched_job_phase(t, 3), RU);
  t[1] = SU;
  t[2] = SU;
  cr_assert_eq(sched_job_phase(t, 3), SU);
  t[1] = FA;
  cr_assert_eq(sched_job_phase(t, 3), FA, "one failed task fails the Job");
  t[0] = t[1] = t[2] = ST;
  cr_assert_eq(sched_job_phase(t, 3), ST);
  cr_assert_eq(sched_job_phase(t, 0), PE);
}
