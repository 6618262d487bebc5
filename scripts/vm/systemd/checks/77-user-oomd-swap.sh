# shellcheck shell=bash
# user-oomd-swap: the incident's own path. systemd-oomd's swap path, as Fedora and Ubuntu ship it
# (ManagedOOMSwap=kill on the system's -.slice, here with `systemctl set-property --runtime`),
# against the user service of a user manager (the lingering user `lane`), the setting of seed
# 003. oomd's swap path acts when memory used and swap used are both above SwapUsedLimit= (90% by
# default; a drop-in sets 10% so a 256M zram swap and the guest's 1G act within seconds), and
# kills the candidate that uses the most swap (above 5% of it). Every leaf below / is a
# candidate: module a of the user's stand-in daemon hoards into swap (`memchurn 128` past its
# memory.max 64M, memory.swap.max 256M); oomd must kill a alone (its journal names
# .../ck-subc.service/subc-modules/a and the swap), the user service stays active with the
# daemon's pid, b and c keep theirs, the daemon restarts a, and ck-cgroup's status and watch (as
# the user) say systemd-oomd killed it. daemon/'s user.oomd_omit is the user's mark, which this
# path ignores (71-user-doctor-marks has doctor say so); each module is a candidate of its own
# (memory.oom.group 1), so the kill ends at the module, not at the service. -.slice's
# ManagedOOMSwap is set back to what it was (Debian's systemd-oomd ships it kill).
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-oomd-swap
s0=$(date +%s.%N) t0=$(date +%s)
expect "the user's manager runs" user_up
rc=0; u systemctl --user start ck-subc.service || rc=$?
expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
A=$USVC/subc-modules/a
expect "modules a b c run in the user service" wait_until 30 uall
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
expect "systemd-oomd runs" oomd_up
expect "systemd-oomd acts on swap above SwapUsedLimit=$OOMD_SWAP_LIMIT" oomd_swap_limit "$OOMD_SWAP_LIMIT"
awk '/^(MemTotal|MemAvailable|SwapTotal|SwapFree):/ { printf "%s %s kB  ", $1, $2 } END { print "" }' /proc/meminfo
u "$CK" watch --root "$USVC" > /tmp/uswap-watch.out 2> /tmp/uswap-watch.err &
watch_pid=$!
# What -.slice had (Debian's systemd-oomd package may ship it kill already): set back at the end.
swap0=$(sctl show -P ManagedOOMSwap -- -.slice)
rc=0; sctl set-property --runtime -- -.slice ManagedOOMSwap=kill || rc=$?
expect "-.slice gets ManagedOOMSwap=kill ($rc)" [ "$rc" = 0 ]
expect "systemd-oomd monitors / for swap (oomctl dump)" wait_until 30 oomd_swap_monitored
oomctl dump 2> /dev/null | head -n 12 || true
ump=$(u systemctl --user show -P MainPID ck-subc.service)
pa=$(umod_pid a) pb=$(umod_pid b) pc=$(umod_pid c) sa=$(ustarts a)
k0=$(keyed "$A/memory.events" oom_kill) o0=$(xattr "$A" user.oomd_ooms)
echo "before: daemon $ump, a $pa, b $pb, c $pc, a started $sa times, a's oom_kill $k0, user.oomd_ooms ${o0:-none}"
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
echo "swaps: $(swaps)"
o1=$(xattr "$A" user.oomd_ooms)
expect "systemd-oomd killed a (user.oomd_ooms on subc-modules/a: ${o0:-none} before, ${o1:-none} after)" \
  eval '[ -n "$o1" ] && [ "$o1" -gt "${o0:-0}" ]'
ojournal=$(oomd_journal_since "$t0")
echo "$ojournal"
killed=$(grep -m1 'Killed ' <<< "$ojournal" | sed 's/^[^]]*] //' || true)
expect "systemd-oomd's journal names the user service's subc-modules/a and the swap (${killed:-no Killed line})" \
  grep -q "Killed ${USVC#"$CG"}/subc-modules/a due to memory used .* and swap used " <<< "$ojournal"
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
grep -v '"memory_max"' /tmp/uswap-watch.out || true
cat /tmp/uswap-watch.err
expect "watch (as the user) reported a's oomd_kill" \
  jq_lines_any /tmp/uswap-watch.out '.module == "a" and .event == "oomd_kill" and .value >= 1'
expect "watch's emptied event for a says systemd-oomd killed it" \
  jq_lines_any /tmp/uswap-watch.out '.module == "a" and .event == "emptied" and (.killed_by // [] | index("systemd-oomd"))'
journal=$(ujournal_since "$t0")
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited' <<< "$journal" || true)
expect "the journal shows no stop of the user service (${stops:-none})" [ -z "$stops" ]
sctl set-property --runtime -- -.slice "ManagedOOMSwap=${swap0:-auto}" || true
note "-.slice's ManagedOOMSwap is back to ${swap0:-auto} ($(sctl show -P ManagedOOMSwap -- -.slice))"
expect "systemd-oomd's SwapUsedLimit is back to its default" oomd_swap_limit_default
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
timeout 30 loginctl disable-linger lane || true
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (SwapUsedLimit=$OOMD_SWAP_LIMIT); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
