# shellcheck shell=bash
# Replay 3 under the user manager, judged: the project's integration test binaries, run as the
# unprivileged user `lane` while the user's ck-subc.service runs, from a transient service of
# the user's manager (as a developer's `cargo test` in a session would), inside `ck-cgroup
# sandbox` (a delegated scope of the user manager) with CK_CGROUP_TEST_PARENT set to its root:
# every binary exits 0 (a test that needs root says so and is skipped, listed by name), the
# user service's subtree (directories and processes) is the same afterwards, the daemon kept its
# pid, and no sandbox is left. Left out (USUITE_SKIP_BINS): what does not depend on whose the
# cgroups are (doc_samples, mutation_controls_doc and layers read the tree's files;
# parsers_random touches no cgroup; status, watch, missing_module, prometheus and top read files
# every user may read, and took 3 of this check's minutes, which CI's budget does not have:
# 45-suite.sh runs them as root), what
# runs as root in 45-suite.sh or the host's make test and ran into the time limit here (cli,
# teardown, json_contract, conformance, nested_root), and the race tests (stop_never_lies,
# placement_race, no_hang, watch_counts_every_transition, sandbox_prune_converges: hundreds of
# processes or modules each; those that need a delegated user run their cases as one in the
# host's make test). The rest take about 3 minutes:
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
user_service_up
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
# The binaries left out are the header's. The time limits are the lane's (CK_TEST_TIME_SCALE=5,
# as in 45-suite.sh); CK_TEST_HOSTILE is tests/fixtures/hostile.c built on the host (the guest has
# no cc); the tests write each skip to CK_TEST_SKIP_LOG.
rm -f /tmp/usuite-skips.log
touch /tmp/usuite-skips.log
chown lane /tmp/usuite-skips.log
rc=0
u systemd-run --user --quiet --wait --pipe --collect \
  --setenv=REPO="$REPO" --setenv=USUITE_LIST=/tmp/user-suite.list \
  --setenv=USUITE_SKIP_BINS="doc_samples mutation_controls_doc layers prometheus top status watch missing_module parsers_random cli teardown json_contract conformance nested_root stop_never_lies placement_race no_hang watch_counts_every_transition sandbox_prune_converges" \
  --setenv=USUITE_BIN_TIMEOUT=180 --setenv=CK_TEST_HOSTILE="$REPO/target/vm/systemd/hostile" \
  --setenv=CK_TEST_SKIP_LOG=/tmp/usuite-skips.log \
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
failed=$(grep '^FAILED ' <<< "$out" | cut -d' ' -f2- | tr '\n' ';' | sed 's/;$//' || true)
bad=$(sed -n 's/^RESULT \([^ ]*\) \([1-9][0-9]*\) .*/\1 (exit \2)/p' <<< "$out" | tr '\n' ' ')
expect "every test passed as lane (failed: ${failed:-none}; binaries that did not exit 0: ${bad:-none})" \
  eval '[ -z "$bad" ] && [ -z "$failed" ]'
skips=$(sed -n 's/^SKIPPED //p' /tmp/usuite-skips.log | tr '\n' ';' | sed 's/;$//')
note "skipped as lane, each saying why: ${skips:-none}"
note "tests as lane: $(sed -n 's/^RESULT \([^ ]*\) \([0-9]*\) \([0-9]*s\) test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \4\/\5 (exit \2, \3)/p; s/^RESULT \([^ ]*\) \([0-9]*\) \([0-9]*s\) *$/\1 ?\/? (exit \2, \3, no result)/p' <<< "$out" | tr '\n' ' ')$(grep '^FAILED ' <<< "$out" | cut -d' ' -f2- | tr '\n' ';' | sed 's/^/; failed: /;s/;$//')"
u systemctl --user stop ck-subc.service || true
loginctl disable-linger lane || true
check_end
