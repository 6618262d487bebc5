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
user_service_up
A=$USVC/subc-modules/a
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
pressure_sampler "$CG$mcg" "$USVC" "$A" > /tmp/uoomd-pressure.out &
sampler=$!
oomd_side user
oomd_hoard
kill "$sampler" 2> /dev/null || true
cat /tmp/uoomd-pressure.out
cat /tmp/uoomd-watch.err
oomd_judge "$watch_pid" /tmp/uoomd-watch.out "memory pressure for $mcg " "for memory pressure"
oomd_unmonitor "$manager"
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
timeout 30 loginctl disable-linger lane || true
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
