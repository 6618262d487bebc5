# shellcheck shell=bash
# Replay 1, the hoard: module a allocates past its memory.max (64M, set by the daemon through
# `ck-cgroup exec`). Only a is OOM-killed: the service stays active, the daemon and modules b and
# c keep their pids, `ck-cgroup status --json a` shows the OOM kill, and the journal shows no stop
# of the service. The daemon restarts a (its main process exited), which is how the test makes it
# run the hog: a.once holds `exec memhog 256` and the test ends a's `sleep infinity`.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin hoard
SVC=$(svc_cg)
mp=$(main_pid) pb=$(mod_pid b) pc=$(mod_pid c) pa=$(mod_pid a) sa=$(starts a)
t0=$(date +%s)
echo "before: daemon $mp, a $pa, b $pb, c $pc, a started $sa times"
echo "exec $MEMHOG 256" > "$T/a.once"
kill "$pa"
expect "a is OOM-killed (memory.events oom_kill >= 1)" wait_until 60 oom_killed "$SVC/subc-modules/a"
expect "the daemon restarted a after the OOM kill (starts $(starts a))" wait_until 30 restarted a $((sa + 1))
json=$("$CK" status --json a --root "$SVC")
echo "$json"
oom=$(jq -r '.modules[0].memory_events.value.oom_kill // "null"' <<< "$json")
expect "ck-cgroup status --json a --root $SVC: oom_kill >= 1 ($oom)" eval '[ "$oom" != null ] && [ "$oom" -ge 1 ]'
expect "the service is active ($(systemctl is-active "$UNIT"))" is_active
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
expect "b kept its pid ($pb, now $(mod_pid b))" eval '[ "$(mod_pid b)" = "$pb" ] && alive "$pb"'
expect "c kept its pid ($pc, now $(mod_pid c))" eval '[ "$(mod_pid c)" = "$pc" ] && alive "$pc"'
for id in b c; do
  expect "$id had no OOM kill ($(keyed "$SVC/subc-modules/$id/memory.events" oom_kill))" \
    [ "$(keyed "$SVC/subc-modules/$id/memory.events" oom_kill)" = 0 ]
done
journal=$(journal_since "$t0")
echo "$journal"
expect "the journal holds the daemon's lines" has_daemon_lines "$journal"
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited|Scheduled restart' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
oomline=$(grep -m1 -i 'oom' <<< "$journal" | sed 's/^[^]]*] //' || true)
note "journal: ${oomline:-no OOM line from systemd}"
dmesg | grep -i -E 'oom-kill|Killed process' | tail -n 3 || true
check_end
