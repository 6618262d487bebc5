# shellcheck shell=bash
# Replay 3 under the user manager: the project's integration test binaries, run as the
# unprivileged user `lane` while the user's ck-subc.service runs, from a transient service of
# the user's manager (as a developer's `cargo test` in a session would), inside `ck-cgroup
# sandbox` (a delegated scope of the user manager) with CK_CGROUP_TEST_PARENT set to its root:
# the user service's subtree (directories and processes) is the same afterwards, the daemon kept
# its pid, and no sandbox is left. The tests' results are reported, not judged (45-suite.sh
# and the host's make test judge them, as root); the forking-tree tests, and the conformance, parsers_random, cli, teardown,
# json_contract, stop_never_lies, placement_race, no_hang, watch_counts_every_transition and
# sandbox_prune_converges binaries, are skipped for time (TCG). Each binary may take 60 s; together
# they took about 4 minutes:
# check-timeout: 900
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# shellcheck source=/dev/null # written by scripts/vm/systemd/build-initramfs: CHECK_TIMEOUT, REPO
. /lane/env
check_begin user-suite-isolation
list=$(cat /lane/tests.list 2> /dev/null || true)
if [ -z "$list" ]; then
  note "no test binaries: $(cat /lane/tests.why 2> /dev/null || echo 'not built')"
  check_end
  exit 0
fi
expect "the user's manager runs" user_up
rc=0; u systemctl --user start ck-subc.service || rc=$?
expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
expect "modules a b c run in the user service" wait_until 30 uall
# shellcheck disable=SC2034 # read in an eval string below
ump=$(u systemctl --user show -P MainPID ck-subc.service)
before_d=$(subtree_dirs "$USVC") before_p=$(subtree_pids "$USVC")
# The script the user's transient service runs (a quoted here-document: nothing is expanded
# here; REPO and the list come in through --setenv). Each binary's result line is printed as it
# ends and teed into this check's log, so a check that times out still shows how far it got.
cat > /tmp/user-suite.sh << 'SCRIPT'
cd "$REPO"
exec ck-cgroup sandbox -- bash -c '
  export CK_CGROUP_TEST_PARENT=$CK_CGROUP_ROOT
  unset CK_CGROUP_ROOT
  while read -r bin; do
    name=$(basename "$bin" | sed "s/-[0-9a-f]*\$//")
    case " $USUITE_SKIP_BINS " in *" $name "*) echo "SKIPPED $name"; continue ;; esac
    rc=0 t0=$(date +%s)
    timeout "$USUITE_BIN_TIMEOUT" env INSTA_UPDATE=no CI=1 "$bin" --test-threads=2 \
      --skip forking_tree_is_gone_every_time > "/tmp/usuite-$name.log" 2>&1 || rc=$?
    echo "RESULT $name $rc $(($(date +%s) - t0))s $(grep "^test result:" "/tmp/usuite-$name.log" | tail -n 1)"
    sed -n "s/^test \(.*\) \.\.\. FAILED\$/FAILED $name \1/p" "/tmp/usuite-$name.log"
  done < "$USUITE_LIST"'
SCRIPT
printf '%s\n' "$list" > /tmp/user-suite.list
chmod 644 /tmp/user-suite.sh /tmp/user-suite.list
# conformance, parsers_random, cli, teardown and json_contract are left out here: they run as root
# in 45-suite.sh (cli, json_contract) or in the host's make test (the rest) (conformance's stop mechanisms need no user manager, and under TCG it alone takes
# some 376 s; parsers_random touches no cgroup; cli, teardown and json_contract ran into the 60 s
# limit as the user, 3 minutes of lane 2 for no result); so are the race tests (stop_never_lies,
# placement_race, no_hang, watch_counts_every_transition, sandbox_prune_converges: each makes
# hundreds of processes or modules, and those that need a delegated user run their cases as one
# in the host's make test; together they took the check past its 900 s here). The time limits are the lane's
# (CK_TEST_TIME_SCALE=5, as in 45-suite.sh).
rc=0
u systemd-run --user --quiet --wait --pipe --collect \
  --setenv=REPO="$REPO" --setenv=USUITE_LIST=/tmp/user-suite.list \
  --setenv=USUITE_SKIP_BINS="conformance parsers_random cli teardown json_contract stop_never_lies placement_race no_hang watch_counts_every_transition sandbox_prune_converges" --setenv=USUITE_BIN_TIMEOUT=60 \
  --setenv=CK_TEST_TIME_SCALE=5 --setenv=CK_TEST_FORKING_RUNS=5 --setenv=CK_TEST_RACE_RUNS=3 \
  bash /tmp/user-suite.sh > >(tee /tmp/user-suite.out) 2>&1 || rc=$?
sleep 0.2 # tee's last lines
out=$(cat /tmp/user-suite.out)
cp /tmp/usuite-*.log /out/ 2> /dev/null || true
# On failure the label carries why: the helper's or systemd-run's own error line (the RESULT and
# FAILED lines are the tests'), so that CI's one-line summary names the cause.
why=
if [ "$rc" != 0 ]; then
  why=$(grep -v '^RESULT \|^FAILED \|^SKIPPED ' <<< "$out" | grep -m 1 'ck-cgroup:\|systemd-run\|Failed\|rror' || true)
  why=${why:-$(tail -n 1 <<< "$out")}
fi
expect "the suite ran as lane in a sandbox scope (exit $rc${why:+: $why})" eval '[ "$rc" = 0 ] && grep -q "^RESULT " <<< "$out"'
after_d=$(subtree_dirs "$USVC") after_p=$(subtree_pids "$USVC")
echo "dirs before: $before_d"; echo "dirs after:  $after_d"
expect "the user service's cgroup directories are unchanged" [ "$before_d" = "$after_d" ]
expect "the user service's processes are unchanged ($(wc -w <<< "$after_p"))" [ "$before_p" = "$after_p" ]
expect "the daemon kept its pid and the user service is active" \
  eval '[ "$(u systemctl --user show -P MainPID ck-subc.service)" = "$ump" ] && [ "$(u systemctl --user is-active ck-subc.service)" = active ]'
left=$(find "$CG" -name 'ck-sandbox-*' 2> /dev/null | tr '\n' ' ')
expect "no sandbox is left (${left:-none})" [ -z "$left" ]
note "tests as lane: $(sed -n 's/^RESULT \([^ ]*\) \([0-9]*\) \([0-9]*s\) test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \4\/\5 (exit \2, \3)/p; s/^RESULT \([^ ]*\) \([0-9]*\) \([0-9]*s\) *$/\1 ?\/? (exit \2, \3, no result)/p' <<< "$out" | tr '\n' ' ')$(grep '^FAILED ' <<< "$out" | cut -d' ' -f2- | tr '\n' ';' | sed 's/^/; failed: /;s/;$//')"
u systemctl --user stop ck-subc.service || true
loginctl disable-linger lane || true
check_end
