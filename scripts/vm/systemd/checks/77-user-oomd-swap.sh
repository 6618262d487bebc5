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
user_service_up
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
oomd_side user
oomd_hoard
echo "swaps: $(swaps)"
cat /tmp/uswap-watch.err
oomd_judge "$watch_pid" /tmp/uswap-watch.out "memory used .* and swap used " "and the swap"
sctl set-property --runtime -- -.slice "ManagedOOMSwap=${swap0:-auto}" || true
note "-.slice's ManagedOOMSwap is back to ${swap0:-auto} ($(sctl show -P ManagedOOMSwap -- -.slice))"
expect "systemd-oomd's SwapUsedLimit is back to its default" oomd_swap_limit_default
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
timeout 30 loginctl disable-linger lane || true
expect "swap off" swap_down
note "a restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (SwapUsedLimit=$OOMD_SWAP_LIMIT); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
