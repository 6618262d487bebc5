# shellcheck shell=bash
# real-daemon-oomd: oomd-hoard with the real daemon (subc-daemon 0.39.3 under the installed unit,
# lib-systemd.sh: real_daemon_up), between 95-real-daemon.sh (which leaves it running) and
# 96-real-daemon-end.sh. hog's `ck-cgroup run` gets --memory-swap-max 256M for this check
# (REAL_HOG_SWAP_MAX: a new subc.jsonc and a restart of the service), swap is on (zram), and
# systemd-oomd monitors the service (ManagedOOMMemoryPressure=kill, set-property --runtime);
# hog's next command is `memchurn 128` past its memory.max 64M. oomd must kill hog's module alone
# (its journal names subc-modules/hog; hog's user.oomd_ooms; no kernel OOM kill), the service
# stays active with the daemon's pid, orph and deaf keep theirs, the daemon restarts hog, and
# ck-cgroup says systemd-oomd killed it: run's stop report (in the daemon's capture of hog's
# stderr) and watch. lib-systemd.sh's oomd scenario (oomd_side real, oomd_hoard, oomd_judge), which
# 22, 73 and 77 run too. Then hog's usual subc.jsonc is back.
# check-timeout: 400
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin real-daemon-oomd
if [ ! -x "$REAL" ]; then
  expect "the real daemon was built ($(cat /lane/real-daemon.why 2> /dev/null || echo "no $REAL"))" false
  check_end
  exit 0
fi
s0=$(date +%s.%N)
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
REAL_HOG_SWAP_MAX=256M real_daemon_up
cgpath=${SVC#"$CG"}
H=$SVC/subc-modules/hog
expect "the real daemon runs hog orph deaf ($(main_pid): $(tr '\0' ' ' < "/proc/$(main_pid)/cmdline"))" real_running
expect "hog may swap: memory.swap.max 256M ($(cat "$H/memory.swap.max")), memory.max 64M ($(cat "$H/memory.max"))" \
  eval '[ "$(cat "$H/memory.swap.max")" = $((256 << 20)) ] && [ "$(cat "$H/memory.max")" = $((64 << 20)) ]'
expect "systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION" oomd_up
t0=$(date +%s)
"$CK" watch --root "$SVC" > /tmp/roomd-watch.out 2> /tmp/roomd-watch.err &
watch_pid=$!
oomd_monitor "$UNIT"
expect "systemd-oomd monitors $cgpath for memory pressure (oomctl dump)" wait_until 30 oomd_monitored "$cgpath"
pressure_sampler "$SVC" "$H" "$SVC/daemon" > /tmp/roomd-pressure.out &
sampler=$!
# The daemon's capture of hog's stderr (<run dir>/logs/hog.stderr.log), and how much of it is
# older than this check (95's kernel OOM kill is reported there too).
cap=$(find "$REAL_HOME" -name hog.stderr.log 2> /dev/null | head -n 1)
c0=$(wc -l < "$cap" 2> /dev/null || echo 0)
oomd_side real
oomd_hoard
kill "$sampler" 2> /dev/null || true
cat /tmp/roomd-pressure.out
cat /tmp/roomd-watch.err
oomd_judge "$watch_pid" /tmp/roomd-watch.out "memory pressure" "for memory pressure"
# `run` removes the module it ran when its command ends, the killed directory and its
# user.oomd_* with it (status of the new hog counts nothing); what it read before the rmdir is
# its stop report, a line on its stderr, which the real daemon keeps in its capture of hog's
# stderr.
[ -n "$cap" ] || cap=$(find "$REAL_HOME" -name hog.stderr.log 2> /dev/null | head -n 1)
echo "hog's stderr since the check began, as the daemon captured it (${cap:-no capture file}):"
tail -n +$((c0 + 1)) "$cap" 2> /dev/null || true
said=$(tail -n +$((c0 + 1)) "$cap" 2> /dev/null | grep -m1 'module hog: killed by' || true)
expect "run's report in the daemon's capture of hog's stderr says systemd-oomd killed it (${said:-nothing})" \
  grep -q 'ck-cgroup: module hog: killed by systemd-oomd' <<< "$said"
oomd_unmonitor "$UNIT"
real_daemon_up  # hog's usual subc.jsonc (no swap) and a restart
expect "hog's usual limits are back (memory.swap.max $(cat "$H/memory.swap.max" 2> /dev/null))" \
  [ "$(cat "$H/memory.swap.max" 2> /dev/null)" = 0 ]
expect "swap off" swap_down
note "hog restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
