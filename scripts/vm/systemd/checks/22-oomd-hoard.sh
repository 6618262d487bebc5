# shellcheck shell=bash
# oomd-hoard: the incident's own killer. systemd-oomd (Debian's 252) monitors ck-subc.service
# (`systemctl set-property --runtime`: ManagedOOMMemoryPressure=kill, ManagedOOMMemoryPressureLimit=$OOMD_LIMIT;
# oomd.conf's DefaultMemoryPressureDurationSec=$OOMD_DURATION) and module a hoards: with swap
# (zram, lib-systemd.sh: swap_up) and its memory.max 64M, `memchurn 128` swaps out and in
# without end, so the service's memory pressure (PSI full avg10) passes the limit with reclaim.
# oomd must kill a, and only a: its journal names subc-modules/a, a's user.oomd_ooms counts the
# kill and the kernel's OOM killer did nothing (a's memory.events oom_kill unchanged); the
# service stays active with the daemon's pid, b and c keep theirs, the daemon restarts a, and
# ck-cgroup's status and watch say systemd-oomd killed it.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin oomd-hoard
is_active || systemctl start "$UNIT"
SVC=$(svc_cg)
cgpath=${SVC#"$CG"}
A=$SVC/subc-modules/a
expect "modules a b c run" wait_until 30 all_running
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
expect "systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION" oomd_up
t0=$(date +%s) s0=$(date +%s.%N)
"$CK" watch --root "$SVC" > /tmp/oomd-watch.out 2> /tmp/oomd-watch.err &
watch_pid=$!
oomd_monitor "$UNIT"
expect "systemd-oomd monitors $cgpath for memory pressure (oomctl dump)" wait_until 30 oomd_monitored "$cgpath"
oomctl dump | sed -n '/Memory Pressure Monitored/,$p'
mp=$(main_pid) pa=$(mod_pid a) pb=$(mod_pid b) pc=$(mod_pid c) sa=$(starts a)
k0=$(keyed "$A/memory.events" oom_kill) o0=$(xattr "$A" user.oomd_ooms)
echo "before: daemon $mp, a $pa, b $pb, c $pc, a started $sa times, a's oom_kill $k0, user.oomd_ooms ${o0:-none}"
pressure_sampler "$SVC" "$A" "$SVC/daemon" > /tmp/oomd-pressure.out &
sampler=$!
echo "--memory-max 64M --memory-swap-max 256M" > "$T/a.limits"
echo "exec $MEMCHURN 128" > "$T/a.once"
kill "$pa"
expect "the daemon restarted a with the hoard" wait_until 30 restarted a "$sa"
s1=$(date +%s.%N)
rm -f "$T/a.limits"  # a's next start (after the kill) has the daemon's usual limits
expect "a may swap: memory.swap.max 256M ($(cat "$A/memory.swap.max" 2> /dev/null)), memory.max 64M" \
  eval '[ "$(cat "$A/memory.swap.max")" = $((256 << 20)) ] && [ "$(cat "$A/memory.max")" = $((64 << 20)) ]'
# The daemon starts a again when its hoard dies; who killed it is read afterwards.
expect "a's hoard died and the daemon restarted a" wait_until 90 restarted a $((sa + 1))
s2=$(date +%s.%N)
kill "$sampler" 2> /dev/null || true
cat /tmp/oomd-pressure.out
o1=$(xattr "$A" user.oomd_ooms)
expect "systemd-oomd killed a (user.oomd_ooms on subc-modules/a: ${o0:-none} before, ${o1:-none} after)" \
  eval '[ -n "$o1" ] && [ "$o1" -gt "${o0:-0}" ]'
ojournal=$(oomd_journal_since "$t0")
echo "$ojournal"
killed=$(grep -m1 'Killed ' <<< "$ojournal" | sed 's/^[^]]*] //' || true)
expect "systemd-oomd's journal names subc-modules/a (${killed:-no Killed line})" \
  grep -q "Killed $cgpath/subc-modules/a due to memory pressure" <<< "$ojournal"
expect "a's user.oomd_kill counts the processes it killed ($(xattr "$A" user.oomd_kill))" \
  eval '[ "$(xattr "$A" user.oomd_kill)" -ge 1 ]'
expect "the kernel's OOM killer did not kill a (oom_kill $k0 before, $(keyed "$A/memory.events" oom_kill) after)" \
  [ "$(keyed "$A/memory.events" oom_kill)" = "$k0" ]
expect "the service is active ($(sctl is-active "$UNIT"))" is_active
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
expect "b kept its pid ($pb, now $(mod_pid b))" eval '[ "$(mod_pid b)" = "$pb" ] && alive "$pb"'
expect "c kept its pid ($pc, now $(mod_pid c))" eval '[ "$(mod_pid c)" = "$pc" ] && alive "$pc"'
for d in daemon subc-modules/b subc-modules/c; do
  expect "oomd killed nothing in $d (user.oomd_ooms: $(xattr "$SVC/$d" user.oomd_ooms))" \
    [ -z "$(xattr "$SVC/$d" user.oomd_ooms)" ]
done
json=$("$CK" status --json a --root "$SVC")
echo "$json"
ooms=$(jq -c '.modules[0].oomd_ooms' <<< "$json")
expect "ck-cgroup status --json a: oomd_ooms >= 1 from user.oomd_ooms ($ooms)" \
  jq_is "$json" '.modules[0].oomd_ooms.value >= 1 and (.modules[0].oomd_ooms.source | test("user.oomd_ooms"))'
expect "ck-cgroup status --json a: oomd_kill >= 1 ($(jq -c '.modules[0].oomd_kill' <<< "$json"))" \
  jq_is "$json" '.modules[0].oomd_kill.value >= 1'
kill "$watch_pid" 2> /dev/null || true
wait "$watch_pid" 2> /dev/null || true
cat /tmp/oomd-watch.out /tmp/oomd-watch.err
expect "watch reported a's oomd_kill (from user.oomd_ooms)" \
  jq_lines_any /tmp/oomd-watch.out '.module == "a" and .event == "oomd_kill" and .value >= 1 and .source == "user.oomd_ooms"'
expect "watch's emptied event for a says systemd-oomd killed it" \
  jq_lines_any /tmp/oomd-watch.out '.module == "a" and .event == "emptied" and (.killed_by // [] | index("systemd-oomd"))'
expect "watch reported no oomd kill of b, c" \
  eval '! jq_lines_any /tmp/oomd-watch.out "(.module == \"b\" or .module == \"c\") and .event == \"oomd_kill\""'
journal=$(journal_since "$t0")
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited|Scheduled restart' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
oomd_unmonitor "$UNIT"
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
