# shellcheck shell=bash
# oomd-daemon-spared: systemd-oomd takes every leaf under the unit it monitors for a candidate,
# the daemon's own daemon/ too; if it picks daemon/, the daemon dies and the service with it (the
# incident). Here daemon/ is the worst candidate by oomd's ranking: on request (SIGUSR1,
# $T/daemon.hoard) the stand-in daemon starts `memchurn` as its own child, so in daemon/, under a
# MemoryMax= of the whole service (oomd-hoard's properties plus MemoryMax=$SPARED_MAX) with
# swap, and daemon/ reclaims far more than any module (pgscan, oomd's key). oomd must still never
# kill it, because `ck-cgroup init` marked daemon/ with user.oomd_omit=1: it kills a module
# instead (its journal names subc-modules/<id>, never daemon/), the daemon keeps its pid and the
# hoard lives until the check ends it, the service stays active, and the daemon restarts the
# module. With a helper built with CK_MUTATION=no-oomd-omit (init sets no mark) this check fails
# (scripts/vm-mutation). Starts the service when it does not run (vm-mutation boots without 10).
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
SPARED_MAX=160M
check_begin oomd-daemon-spared
is_active || systemctl start "$UNIT"
SVC=$(svc_cg)
cgpath=${SVC#"$CG"}
D=$SVC/daemon
expect "modules a b c run" wait_until 30 all_running
mark=$(xattr "$D" user.oomd_omit)
expect "ck-cgroup init marked daemon/ with user.oomd_omit=1 (${mark:-no mark})" [ "$mark" = 1 ]
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
expect "systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION" oomd_up
t0=$(date +%s) s0=$(date +%s.%N)
oomd_monitor "$UNIT" "MemoryMax=$SPARED_MAX"
expect "systemd-oomd monitors $cgpath for memory pressure (oomctl dump)" wait_until 30 oomd_monitored "$cgpath"
expect "the service's memory.max is $SPARED_MAX ($(cat "$SVC/memory.max"))" \
  [ "$(cat "$SVC/memory.max")" = $((160 << 20)) ]
mp=$(main_pid)
declare -A pid0=() st0=()
for id in a b c; do pid0[$id]=$(mod_pid "$id") st0[$id]=$(starts "$id"); done
echo "before: daemon $mp, a ${pid0[a]}, b ${pid0[b]}, c ${pid0[c]}"
pressure_sampler "$SVC" "$D" "$SVC/subc-modules/a" "$SVC/subc-modules/b" "$SVC/subc-modules/c" > /tmp/oomd-pressure.out &
sampler=$!
echo "exec $MEMCHURN 256" > "$T/daemon.hoard"
rm -f "$T/daemon.hoard.pid"
kill -USR1 "$mp"
sh=$(date +%s.%N)
expect "the daemon started its hoard" wait_until 30 test -s "$T/daemon.hoard.pid"
hp=$(cat "$T/daemon.hoard.pid" 2> /dev/null || echo none)
expect "the hoard ($hp) runs in daemon/" is_member "$D" "$hp"
# oomd's ranking: reclaim (pgscan) rate first. Two readings a few seconds apart, once the hoard
# has passed the service's MemoryMax (the service swaps).
pgscan() { keyed "$1/memory.stat" pgscan; }
swapping() { [ "$(keyed "$D/memory.stat" pgscan)" -gt 0 ]; }
wait_until 60 swapping || true
declare -A g0=() g1=()
for d in daemon subc-modules/a subc-modules/b subc-modules/c; do g0[$d]=$(pgscan "$SVC/$d"); done
sleep 3
for d in daemon subc-modules/a subc-modules/b subc-modules/c; do g1[$d]=$(pgscan "$SVC/$d"); done
rates="" worst=1
# shellcheck disable=SC2034 # worst: read in an eval string below
for d in daemon subc-modules/a subc-modules/b subc-modules/c; do
  rates="$rates ${d#subc-modules/} +$((g1[$d] - g0[$d]))"
  [ "$d" = daemon ] || [ $((g1[daemon] - g0[daemon])) -gt $((g1[$d] - g0[$d])) ] || worst=
done
expect "daemon/ reclaims hardest: the worst candidate by oomd's ranking (pgscan over 3 s:$rates)" \
  eval '[ -n "$worst" ] && [ $((g1[daemon] - g0[daemon])) -gt 0 ]'
killed_line() { oomd_journal_since "$t0" | grep -m1 'Killed '; }
expect "systemd-oomd killed a cgroup of the service" wait_secs 90 killed_line
s1=$(date +%s.%N)
hoard_alive=no
alive "$hp" && hoard_alive=yes
kill "$hp" 2> /dev/null || true
kill "$sampler" 2> /dev/null || true
cat /tmp/oomd-pressure.out
ojournal=$(oomd_journal_since "$t0")
echo "$ojournal"
line=$(killed_line | sed 's/^[^]]*] //' || true)
victim=$(sed -n "s|.*: Killed $cgpath/subc-modules/\([^ ]*\) due to memory pressure.*|\1|p" <<< "$line")
expect "oomd killed a module, not daemon/ (${line:-no Killed line})" [ -n "$victim" ]
expect "oomd never killed in daemon/ (user.oomd_ooms: $(xattr "$D" user.oomd_ooms))" \
  [ -z "$(xattr "$D" user.oomd_ooms)" ]
expect "the daemon's hoard lived until the check ended it ($hoard_alive)" [ "$hoard_alive" = yes ]
expect "the service is active ($(sctl is-active "$UNIT"))" is_active
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
if [ -n "$victim" ] && [ -n "${st0[$victim]:-}" ]; then
  expect "$victim's user.oomd_ooms counts the kill ($(xattr "$SVC/subc-modules/$victim" user.oomd_ooms))" \
    oomd_killed "$SVC/subc-modules/$victim"
  expect "the daemon restarted $victim" wait_until 30 restarted "$victim" "${st0[$victim]}"
fi
for id in a b c; do
  [ "$id" = "$victim" ] && continue
  expect "$id kept its pid (${pid0[$id]}, now $(mod_pid "$id"))" \
    eval '[ "$(mod_pid "$id")" = "${pid0[$id]}" ] && alive "${pid0[$id]}"'
done
journal=$(journal_since "$t0")
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited|Scheduled restart' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
oomd_unmonitor "$UNIT" MemoryMax=infinity
expect "the service's memory.max is max again ($(cat "$SVC/memory.max" 2> /dev/null))" \
  [ "$(cat "$SVC/memory.max" 2> /dev/null)" = max ]
expect "swap off" swap_down
rm -f "$T/daemon.hoard" "$T/daemon.hoard.pid"
note "oomd killed ${victim:-nothing} $(awk -v a="$sh" -v b="$s1" 'BEGIN { printf "%.1f", b - a }') s after the hoard was asked for (limit $OOMD_LIMIT, duration $OOMD_DURATION, MemoryMax=$SPARED_MAX); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
