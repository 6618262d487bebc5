# shellcheck shell=bash
# oomd-hoard: the incident's own killer. systemd-oomd (Debian's 252) monitors ck-subc.service
# (`systemctl set-property --runtime`: ManagedOOMMemoryPressure=kill, ManagedOOMMemoryPressureLimit=$OOMD_LIMIT;
# oomd.conf's DefaultMemoryPressureDurationSec=$OOMD_DURATION) and module a hoards: with swap
# (zram, lib-systemd.sh: swap_up) and its memory.max 64M, `memchurn 128` swaps out and in
# without end, so the service's memory pressure (PSI full avg10) passes the limit with reclaim.
# oomd must kill a, and only a: its journal names subc-modules/a, a's user.oomd_ooms counts the
# kill and the kernel's OOM killer did nothing (a's memory.events oom_kill unchanged); the
# service stays active with the daemon's pid, b and c keep theirs, the daemon restarts a, and
# ck-cgroup's status and watch say systemd-oomd killed it: lib-systemd.sh's oomd scenario
# (oomd_side system, oomd_hoard, oomd_judge), which 73, 77 and 955 run too.
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
pressure_sampler "$SVC" "$A" "$SVC/daemon" > /tmp/oomd-pressure.out &
sampler=$!
oomd_side system
oomd_hoard
kill "$sampler" 2> /dev/null || true
cat /tmp/oomd-pressure.out
cat /tmp/oomd-watch.err
oomd_judge "$watch_pid" /tmp/oomd-watch.out "memory pressure" "for memory pressure"
oomd_unmonitor "$UNIT"
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
