# shellcheck shell=bash
# user-oomd-hoard: oomd-hoard under the user manager, as Fedora and Ubuntu ship systemd-oomd:
# ManagedOOMMemoryPressure=kill on user@.service (here on the instance, user@UID.service of the
# lingering user `lane`, with `systemctl set-property --runtime`: the same setting, without a
# daemon-reload), so oomd watches the user's whole manager and every leaf below it is a
# candidate (its init.scope, the user's ck-subc.service's daemon/ and modules). Module a of the
# user's stand-in daemon hoards with swap (`memchurn 128` past its memory.max 64M): oomd must kill
# a alone (its journal names .../ck-subc.service/subc-modules/a), the user service stays active
# with the daemon's pid, b and c keep theirs, the daemon restarts a, and ck-cgroup's status and
# watch (as the user) say systemd-oomd killed it. daemon/ is marked user.oomd_omit=1 by the
# user's `ck-cgroup init`, which oomd 252 honours here (the candidate's owner is the monitored
# cgroup's owner, lane).
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-oomd-hoard
s0=$(date +%s.%N) t0=$(date +%s)
expect "the user's manager runs" user_up
rc=0; u systemctl --user start ck-subc.service || rc=$?
expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
A=$USVC/subc-modules/a
expect "modules a b c run in the user service" wait_until 30 uall
# shellcheck disable=SC2154 # uid: set by user_up
manager=user@$uid.service
mcg=$(sctl show -P ControlGroup "$manager")
mark=$(xattr "$USVC/daemon" user.oomd_omit)
expect "the user's ck-cgroup init marked daemon/ with user.oomd_omit=1 (${mark:-no mark}; owner $(stat -c %U "$USVC/daemon"))" [ "$mark" = 1 ]
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
expect "systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION" oomd_up
u "$CK" watch --root "$USVC" > /tmp/uoomd-watch.out 2> /tmp/uoomd-watch.err &
watch_pid=$!
oomd_monitor "$manager"
expect "systemd-oomd monitors $mcg for memory pressure (oomctl dump)" wait_until 30 oomd_monitored "$mcg"
ump=$(u systemctl --user show -P MainPID ck-subc.service)
pa=$(umod_pid a) pb=$(umod_pid b) pc=$(umod_pid c) sa=$(ustarts a)
k0=$(keyed "$A/memory.events" oom_kill) o0=$(xattr "$A" user.oomd_ooms)
echo "before: daemon $ump, a $pa, b $pb, c $pc, a started $sa times, a's oom_kill $k0, user.oomd_ooms ${o0:-none}"
pressure_sampler "$CG$mcg" "$USVC" "$A" > /tmp/uoomd-pressure.out &
sampler=$!
echo "--memory-max 64M --memory-swap-max 256M" > "$UT/a.limits"
echo "exec $MEMCHURN 128" > "$UT/a.once"
chown lane "$UT/a.limits" "$UT/a.once"
kill "$pa"
expect "the daemon restarted a with the hoard" wait_until 30 urestarted a "$sa"
s1=$(date +%s.%N)
rm -f "$UT/a.limits"
expect "a may swap: memory.swap.max 256M ($(cat "$A/memory.swap.max" 2> /dev/null))" \
  [ "$(cat "$A/memory.swap.max")" = $((256 << 20)) ]
expect "a's hoard died and the daemon restarted a" wait_until 90 urestarted a $((sa + 1))
s2=$(date +%s.%N)
kill "$sampler" 2> /dev/null || true
cat /tmp/uoomd-pressure.out
o1=$(xattr "$A" user.oomd_ooms)
expect "systemd-oomd killed a (user.oomd_ooms on subc-modules/a: ${o0:-none} before, ${o1:-none} after)" \
  eval '[ -n "$o1" ] && [ "$o1" -gt "${o0:-0}" ]'
ojournal=$(oomd_journal_since "$t0")
echo "$ojournal"
killed=$(grep -m1 'Killed ' <<< "$ojournal" | sed 's/^[^]]*] //' || true)
expect "systemd-oomd's journal names the user service's subc-modules/a (${killed:-no Killed line})" \
  grep -q "Killed ${USVC#"$CG"}/subc-modules/a due to memory pressure for $mcg " <<< "$ojournal"
expect "the kernel's OOM killer did not kill a (oom_kill $k0 before, $(keyed "$A/memory.events" oom_kill) after)" \
  [ "$(keyed "$A/memory.events" oom_kill)" = "$k0" ]
expect "the user service is active" eval '[ "$(u systemctl --user is-active ck-subc.service)" = active ]'
expect "the daemon kept its pid ($ump)" eval '[ "$(u systemctl --user show -P MainPID ck-subc.service)" = "$ump" ]'
expect "b and c kept their pids ($pb $pc)" eval '[ "$(umod_pid b)" = "$pb" ] && [ "$(umod_pid c)" = "$pc" ] && alive "$pb" && alive "$pc"'
for d in daemon subc-modules/b subc-modules/c; do
  expect "oomd killed nothing in $d (user.oomd_ooms: $(xattr "$USVC/$d" user.oomd_ooms))" \
    [ -z "$(xattr "$USVC/$d" user.oomd_ooms)" ]
done
json=$(u "$CK" status --json a --root "$USVC")
echo "$json"
expect "ck-cgroup status --json a (as the user): oomd_ooms >= 1 from user.oomd_ooms ($(jq -c '.modules[0].oomd_ooms' <<< "$json"))" \
  jq_is "$json" '.modules[0].oomd_ooms.value >= 1 and (.modules[0].oomd_ooms.source | test("user.oomd_ooms"))'
kill "$watch_pid" 2> /dev/null || true
wait "$watch_pid" 2> /dev/null || true
grep -v '"memory_max"' /tmp/uoomd-watch.out || true
cat /tmp/uoomd-watch.err
expect "watch (as the user) reported a's oomd_kill" \
  jq_lines_any /tmp/uoomd-watch.out '.module == "a" and .event == "oomd_kill" and .value >= 1'
expect "watch's emptied event for a says systemd-oomd killed it" \
  jq_lines_any /tmp/uoomd-watch.out '.module == "a" and .event == "emptied" and (.killed_by // [] | index("systemd-oomd"))'
journal=$(ujournal_since "$t0")
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited' <<< "$journal" || true)
expect "the journal shows no stop of the user service (${stops:-none})" [ -z "$stops" ]
oomd_unmonitor "$manager"
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
timeout 30 loginctl disable-linger lane || true
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
