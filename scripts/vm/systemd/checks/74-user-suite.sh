# shellcheck shell=bash
# Replay 3 under the user manager: the project's integration test binaries, run as the
# unprivileged user `lane` while the user's ck-subc.service runs, from a transient service of
# the user's manager (as a developer's `cargo test` in a session would), inside `ck-cgroup
# sandbox` (a delegated scope of the user manager) with CK_CGROUP_TEST_PARENT set to its root:
# the user service's subtree (directories and processes) is the same afterwards, the daemon kept
# its pid, and no sandbox is left. The tests' results are reported, not judged (as in
# 45-suite.sh); the forking-tree tests are skipped for time (TCG).
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
cat > /tmp/user-suite.sh << SCRIPT
cd '$REPO'
exec ck-cgroup sandbox -- bash -c '
  export CK_CGROUP_TEST_PARENT=\$CK_CGROUP_ROOT
  unset CK_CGROUP_ROOT
  for bin in $(tr '\n' ' ' <<< "$list"); do
    name=\$(basename "\$bin" | sed "s/-[0-9a-f]*\$//")
    rc=0
    timeout 60 env INSTA_UPDATE=no CI=1 "\$bin" --test-threads=2 --skip forking_tree_is_gone_every_time \
      > /tmp/usuite-\$name.log 2>&1 || rc=\$?
    echo "RESULT \$name \$rc \$(grep "^test result:" /tmp/usuite-\$name.log | tail -n 1)"
    sed -n "s/^test \\(.*\\) \\.\\.\\. FAILED\$/FAILED \$name \\1/p" /tmp/usuite-\$name.log
  done'
SCRIPT
chmod 644 /tmp/user-suite.sh
rc=0
out=$(u systemd-run --user --quiet --wait --pipe --collect bash /tmp/user-suite.sh 2>&1) || rc=$?
echo "$out"
cp /tmp/usuite-*.log /out/ 2> /dev/null || true
expect "the suite ran as lane in a sandbox scope (exit $rc)" eval '[ "$rc" = 0 ] && grep -q "^RESULT " <<< "$out"'
after_d=$(subtree_dirs "$USVC") after_p=$(subtree_pids "$USVC")
echo "dirs before: $before_d"; echo "dirs after:  $after_d"
expect "the user service's cgroup directories are unchanged" [ "$before_d" = "$after_d" ]
expect "the user service's processes are unchanged ($(wc -w <<< "$after_p"))" [ "$before_p" = "$after_p" ]
expect "the daemon kept its pid and the user service is active" \
  eval '[ "$(u systemctl --user show -P MainPID ck-subc.service)" = "$ump" ] && [ "$(u systemctl --user is-active ck-subc.service)" = active ]'
left=$(find "$CG" -name 'ck-sandbox-*' 2> /dev/null | tr '\n' ' ')
expect "no sandbox is left (${left:-none})" [ -z "$left" ]
note "tests as lane: $(sed -n 's/^RESULT \([^ ]*\) \([0-9]*\) test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \3\/\4 (exit \2)/p; s/^RESULT \([^ ]*\) \([0-9]*\) *$/\1 ?\/? (exit \2, no result)/p' <<< "$out" | tr '\n' ' ')$(grep '^FAILED ' <<< "$out" | cut -d' ' -f2- | tr '\n' ';' | sed 's/^/; failed: /;s/;$//')"
u systemctl --user stop ck-subc.service || true
loginctl disable-linger lane || true
check_end
