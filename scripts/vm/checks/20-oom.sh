# shellcheck shell=dash
# OOM containment: a module over its memory.max is OOM-killed as a group; a sibling module and
# the daemon's leaf keep their processes.
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

check_begin oom-containment
service_new svc-oom
"$CK" init > /dev/null
"$CK" create hog > /dev/null
"$CK" create calm > /dev/null
hog=$MODS/hog
calm=$MODS/calm

# The limits: through `ck-cgroup set` where this build has the flag, else by writing the file.
set_limit hog memory.max 32M --memory-max 32M
set_limit hog memory.swap.max 0 --memory-swap-max 0
set_limit hog memory.oom.group 1 --oom-group
expect "hog memory.max is 32 MiB ($(cat "$hog/memory.max"))" [ "$(cat "$hog/memory.max")" = 33554432 ]
expect "hog memory.swap.max is 0 ($(cat "$hog/memory.swap.max"))" [ "$(cat "$hog/memory.swap.max")" = 0 ]
expect "hog memory.oom.group is 1" [ "$(cat "$hog/memory.oom.group")" = 1 ]

"$CK" exec calm -- sleep 600 &
calm_pid=$!
expect "calm's sleep $calm_pid is in calm" wait_until 5 is_member "$calm" "$calm_pid"

# The hog's shell forks a sleep and becomes the hog: memory.oom.group must take both.
rc=0
"$CK" exec hog -- sh -c "sleep 600 & exec $MEMHOG 256" > /tmp/hog.out 2>&1 || rc=$?
cat /tmp/hog.out
expect "the hog died of SIGKILL (rc=$rc, 137 expected)" [ "$rc" = 137 ]
kills=$(keyed "$hog/memory.events" oom_kill)
expect "hog memory.events oom_kill=$kills >= 1" [ "${kills:-0}" -ge 1 ]
expect "the whole hog module is empty (memory.oom.group)" wait_until 5 empty "$hog"
expect "hog memory.peak $(cat "$hog/memory.peak") <= memory.max" \
  [ "$(cat "$hog/memory.peak")" -le 33554432 ]
expect "calm's sleep $calm_pid is alive in calm" alive "$calm_pid"
expect "calm's sleep $calm_pid is still a member" is_member "$calm" "$calm_pid"
expect "the stand-in daemon $DAEMON_PID is alive in daemon/" is_member "$SVC/daemon" "$DAEMON_PID"
calm_kills=$(keyed "$calm/memory.events" oom_kill)
expect "calm memory.events oom_kill=$calm_kills" [ "$calm_kills" = 0 ]

rc=0
"$CK" kill calm > /dev/null || rc=$?
wait "$calm_pid" 2>/dev/null || true
expect "kill calm exits 0 (rc=$rc)" [ "$rc" = 0 ]
rc=0
"$CK" kill hog > /dev/null || rc=$?
expect "kill hog (empty) exits 0 and removes it (rc=$rc)" eval '[ "$rc" = 0 ] && not_exists "$hog"'
check_end
service_end
