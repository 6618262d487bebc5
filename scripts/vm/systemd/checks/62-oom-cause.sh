# shellcheck shell=bash
# oom-cause: which limit made the kernel's OOM killer kill in a module, as `watch` reports it on
# `memory_oom_kill` (`oom_cause`), in a `ck-cgroup sandbox` (every controller). Module own hogs
# past its own memory.max (16M): the cause is the module. Module anc, without a limit of its own,
# hogs past subc-modules/'s memory.max (32M): the cause is that ancestor, named. The same two
# deaths through `run --json`: its `death` (the library's death report, `Root::death`) names the
# same limit and charges only the module's own. Then the third cause, the whole machine: a run
# whose hog (2 GiB, no limit, no swap) has oom_score_adj 1000, so that the kernel's global OOM
# kill takes it and none of the lane's processes.
#   oom-cause  own's kill is {"at":"module"}; anc's is {"at":"ancestor","cgroup":".../subc-modules"};
#              run's death: kernel_oom at the module, charged; at subc-modules/, not charged;
#              at the machine, not charged
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin oom-cause
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
"$CK" init > /dev/null
"$CK" create own --memory-max 16M --memory-swap-max 0 > /dev/null
"$CK" create anc --memory-swap-max 0 > /dev/null
# watch finds both at its start (and reads the counters it compares a kill's against); it says
# nothing until an event, so it is given a moment to set its watches.
"$CK" watch > /tmp/oomc-watch.out 2> /tmp/oomc-watch.err &
wpid=$!
sleep 3
expect "watch runs" kill -0 "$wpid"
rc=0; "$CK" exec own -- "$MEMHOG" 64 > /dev/null 2>&1 || rc=$?
note "own's memhog 64 under its own 16M: exit $rc"
echo $((32 * 1048576)) > "$M/memory.max"
rc=0; "$CK" exec anc -- "$MEMHOG" 64 > /dev/null 2>&1 || rc=$?
note "anc's memhog 64 under subc-modules/'s 32M: exit $rc"
echo max > "$M/memory.max"
expect "own's OOM kill is its own limit's" wait_until 20 jq_lines_any /tmp/oomc-watch.out \
  '.module == "own" and .event == "memory_oom_kill" and .oom_cause.at == "module"'
expect "anc's OOM kill is subc-modules/'s limit's, named" wait_until 20 jq_lines_any /tmp/oomc-watch.out \
  '.module == "anc" and .event == "memory_oom_kill" and .oom_cause.at == "ancestor" and (.oom_cause.cgroup | endswith("/subc-modules"))'
grep -E '"memory_oom_kill"' /tmp/oomc-watch.out || true
# run --json: the death report, read before the module is removed, counted from the spawn.
# run_death NAME WHAT FILTER RUN-ARGS...: `run --json NAME RUN-ARGS`; its result (the last line
# of stderr) must satisfy the jq FILTER on its `death`.
run_death() {
  local name=$1 what=$2 filter=$3
  shift 3
  "$CK" --json run "$name" "$@" > /dev/null 2> "/tmp/oomc-$name.err" || true
  tail -n 1 "/tmp/oomc-$name.err" > "/tmp/oomc-$name.json"
  note "run $name: $(cat "/tmp/oomc-$name.json")"
  expect "run's death: $what" jq -e ".death | .cause.kind == \"kernel_oom\" and $filter" "/tmp/oomc-$name.json"
}
run_death own-run "the kernel's OOM kill for the module's own limit, charged" \
  '.cause.limit.at == "module" and .charged == true' \
  --memory-max 16M --memory-swap-max 0 -- "$MEMHOG" 64
echo $((32 * 1048576)) > "$M/memory.max"
run_death anc-run "the kernel's OOM kill for subc-modules/'s limit, named, not charged" \
  '.cause.limit.at == "ancestor" and (.cause.limit.cgroup | endswith("/subc-modules")) and .charged == false' \
  --memory-swap-max 0 -- "$MEMHOG" 64
echo max > "$M/memory.max"
# The third cause, the whole machine: no limit anywhere, no swap (the guest's 1 GiB), a hog of
# 2 GiB that makes itself the OOM killer's first choice (oom_score_adj 1000), so that the
# kernel's global OOM kill takes it and none of the lane's own processes.
run_death mach-run "the kernel's OOM kill for the whole machine, not charged" \
  '.cause.limit.at == "machine" and .charged == false' \
  --memory-swap-max 0 -- sh -c "echo 1000 > /proc/self/oom_score_adj && exec $MEMHOG 2048"
kill "$wpid" 2> /dev/null || true
wait "$wpid" 2> /dev/null || true
sandbox_down
check_end
