# shellcheck shell=bash
# Replay 3 with the project's own tests: `scripts/test --prebuilt` (what `make test` runs, without
# cargo) with ck-subc.service running. The integration test binaries were built on the host by
# `cargo test --no-run` (scripts/vm-test step 6b); the repository is shared read-only at the same
# path, so the binaries' CARGO_BIN_EXE_ck-cgroup and snapshot paths resolve. scripts/test runs
# them from the daemon/ leaf of a live-looking service sandbox with CK_CGROUP_ROOT unset, checks
# that service is unchanged, and that every cgroup the suite could have made is gone afterwards
# (here systemd is PID 1 and its units come and go meanwhile). Its unit verification needs make:
# it is skipped there, by name, and runs on the host (the mutation controls are `make mutation`,
# on the host). The tests that could not check what they are for here are listed by scripts/test's
# closing summary (`== skipped:`), which goes into the detail.
# Which binaries: those whose results depend on what the host of `make test` lacks (controllers,
# systemd as PID 1 and its D-Bus, nsdelegate, systemd-oomd's xattrs, a PID 1 that reaps). The
# kernel-only ones, whose every test drives the same cgroup2 mechanism on the host (conformance,
# teardown, crash, stop_never_lies, placement_race, no_hang, watch_counts_every_transition,
# sandbox_prune_converges, nested_root: KERNEL_ONLY below), are make test's on the host; under
# TCG they were 12 of the suite's 18 minutes. The lane's own checks replay teardown, prune,
# orphans and hostile modules under systemd (30, 50, 60, 76, 92).
# Judged here: scripts/test exits 0 (every test passed), and the installed service's subtree
# (directories and processes) is the same afterwards, with the daemon on its pid.
#   CK_TEST_FORKING_RUNS=5 (not 50): each forking-tree test stops 5 trees per method instead of
#                          50; under TCG 50 take minutes per method, each run is the same check.
#   CK_TEST_RACE_RUNS=3 (not 50): each race test (a kill racing a fork storm or a mkdir loop,
#                          init racing exec) runs 3 trials; the host's make test runs 50.
#   CK_TEST_TIME_SCALE=5   the tests' time limits (a readiness line in 10 s, a stop in 8 s, ...)
#                          five times longer (TCG is some 20 times slower than the host)
#   CK_TEST_HOSTILE        tests/fixtures/hostile.c compiled on the host (the guest has no cc)
# The suite under TCG takes longer than the lane's CHECK_TIMEOUT: 277 s on a quiet host
# (2026-12-06), and more than 1,200 s in a CI-like run with make test and make mutation beside
# the guest on the host's two cores, so the limit is a hang's, not the suite's:
# check-timeout: 1800
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# shellcheck source=/dev/null # written by scripts/vm/systemd/build-initramfs: CHECK_TIMEOUT, REPO
. /lane/env
check_begin suite-isolation
KERNEL_ONLY="conformance teardown crash stop_never_lies placement_race no_hang watch_counts_every_transition sandbox_prune_converges nested_root"
list=/tmp/suite-tests.list
: > "$list"
while read -r bin; do
  case " $KERNEL_ONLY " in *" $(basename "$bin" | sed 's/-[0-9a-f]*$//') "*) continue ;; esac
  echo "$bin" >> "$list"
done < /lane/tests.list 2> /dev/null || true
if [ ! -s "$list" ]; then
  expect "test binaries were built: $(cat /lane/tests.why 2> /dev/null || echo 'none listed')" false
  check_end
  exit 0
fi
# The service as 10-service.sh left it (started here when this file runs alone: VM_CHECKS=45).
is_active || systemctl start "$UNIT"
expect "ck-subc.service runs modules a b c" wait_until 60 all_running
SVC=$(svc_cg)
# shellcheck disable=SC2034 # read in an eval string below
mp=$(main_pid)
before_d=$(subtree_dirs "$SVC") before_p=$(subtree_pids "$SVC")
# Written where the host reads it as it goes (/out, the run's out/ directory), so that a check
# that runs out of time still shows which binary it was in.
live=/tmp/suite.log
[ -d /out ] && [ -w /out ] && live=/out/suite.log
rc=0
t0=$(date +%s)
(cd "$REPO" && env CK_TEST_THREADS=2 CK_TEST_FORKING_RUNS=5 CK_TEST_RACE_RUNS=3 CK_TEST_TIME_SCALE=5 CK_TEST_TIMEOUT="${SUITE_TIMEOUT:-600}" \
  CK_TEST_HOSTILE="$REPO/target/vm/systemd/hostile" scripts/test --prebuilt "$list") \
  > "$live" 2>&1 || rc=$?
t1=$(date +%s)
[ "$live" = /tmp/suite.log ] || cp "$live" /tmp/suite.log
cat /tmp/suite.log
res=$( (grep -E '^test result:' /tmp/suite.log || true) | awk '{ p += $4; f += $6 } END { printf "%d passed, %d failed", p, f }')
failed=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' /tmp/suite.log | tr '\n' ' ')
last=$(grep -E '^(test: |== )' /tmp/suite.log | tail -n 1 || true)
expect "scripts/test --prebuilt exit 0 ($rc; $res${failed:+; failed: $failed}; last: $last)" [ "$rc" = 0 ]
if [ "$rc" = 0 ]; then
  skipped=$(sed -n 's/^== skipped: //p' /tmp/suite.log)
  expect "it skipped the unit verification by name (tests skipped: ${skipped:-no summary})" \
    eval 'grep -q "^== units: skipped" /tmp/suite.log && grep -q "^== skipped: " /tmp/suite.log'
fi
after_d=$(subtree_dirs "$SVC") after_p=$(subtree_pids "$SVC")
echo "dirs before: $before_d"; echo "dirs after:  $after_d"
echo "pids before: $before_p"; echo "pids after:  $after_p"
expect "the service's cgroup directories are unchanged" [ "$before_d" = "$after_d" ]
expect "the service's processes are unchanged ($(wc -w <<< "$after_p"))" [ "$before_p" = "$after_p" ]
expect "the daemon kept its pid and the service is active" eval '[ "$(main_pid)" = "$mp" ] && is_active'
note "scripts/test --prebuilt: $res in $((t1 - t0)) s ($(wc -l < "$list") binaries; not the kernel-only $KERNEL_ONLY)"
check_end
