# Replay 3 with the project's own tests: with ck-subc.service running, the integration test
# binaries (built on the host by `cargo test --no-run`; the repository is shared read-only at the
# same path, so the test binary's CARGO_BIN_EXE_ck-cgroup and snapshot paths resolve) run from
# inside the service's daemon/ leaf with CK_CGROUP_ROOT unset, as scripts/test runs them on the
# host. The service's subtree (directories and processes) is the same afterwards, the daemon kept
# its pid, and no test sandbox is left. The tests' own results are reported, not judged here:
# what fails in the guest (real controllers, systemd as PID 1) is in the detail and the log.
# The forking-tree tests (50 runs per kill method) are skipped: under TCG they outlast the
# timeout, and a test binary killed by `timeout` leaves the processes it started, still in the
# daemon/ leaf it ran from, behind (no test's guard runs), which this check would then report.
set -euo pipefail
. /lane/lib-systemd.sh
. /lane/env
check_begin suite-isolation
list=$(cat /lane/tests.list 2> /dev/null || true)
if [ -z "$list" ]; then
  note "no test binaries: $(cat /lane/tests.why 2> /dev/null || echo 'not built')"
  check_end
  exit 0
fi
SVC=$(svc_cg)
mp=$(main_pid)
before_d=$(subtree_dirs "$SVC") before_p=$(subtree_pids "$SVC")
top_before=$(ls -d "$CG"/ck-sandbox-* 2> /dev/null || true)
summary=() total_pass=0 total_fail=0 failed_names= timed_out= no_result=0
for bin in $list; do
  name=$(basename "$bin" | sed 's/-[0-9a-f]*$//')
  log=/tmp/suite-$name.log
  rc=0
  (cd "$REPO" && timeout "${SUITE_TIMEOUT:-60}" bash -c \
    "echo \$\$ > '$SVC/daemon/cgroup.procs' && exec env -u CK_CGROUP_ROOT INSTA_UPDATE=no CI=1 '$bin' --test-threads=2 --skip forking_tree_is_gone_every_time") \
    > "$log" 2>&1 || rc=$?
  cp "$log" /out/ 2> /dev/null || true
  [ "$rc" != 124 ] || timed_out="$timed_out $name"
  res=$(grep '^test result:' "$log" | tail -n 1 || true)
  p=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<< "$res"); f=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<< "$res")
  # A binary without a result line (it crashed or timed out) is counted apart, not as 0/0.
  if [ -n "$p" ] && [ -n "$f" ]; then
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f))
  else
    no_result=$((no_result + 1))
  fi
  names=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" | tr '\n' ' ')
  [ -z "$names" ] || failed_names="$failed_names $name:{ $names}"
  summary+=("$name ${p:-?}/${f:-?} (exit $rc)")
  echo "$name: exit $rc: $res"
done
after_d=$(subtree_dirs "$SVC") after_p=$(subtree_pids "$SVC")
echo "dirs before: $before_d"; echo "dirs after:  $after_d"
echo "pids before: $before_p"; echo "pids after:  $after_p"
expect "the service's cgroup directories are unchanged" [ "$before_d" = "$after_d" ]
expect "the service's processes are unchanged ($(echo $after_p | wc -w))" [ "$before_p" = "$after_p" ]
expect "the daemon kept its pid and the service is active" eval '[ "$(main_pid)" = "$mp" ] && is_active'
left=$(ls -d "$CG"/ck-sandbox-* 2> /dev/null | tr '\n' ' ' | sed 's/ $//' || true)
top_before=$(echo $top_before)
if [ -z "$timed_out" ]; then
  expect "no test sandbox is left (${left:-none})" [ "$left" = "$top_before" ]
else
  # A test binary killed by the time limit never ran its sandboxes' Drop: remove them, say so.
  for dir in $left; do remove_tree "$dir"; done
  note "timed out (their sandboxes removed by the check: ${left:-none}):$timed_out"
fi
note "tests (passed/failed): ${summary[*]}; $total_pass passed, $total_fail failed, $no_result binaries without a result${failed_names:+; failed:$failed_names}"
check_end
