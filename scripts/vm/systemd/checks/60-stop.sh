# shellcheck shell=bash
# Replay 4: `systemctl stop ck-subc` leaves no process behind and the service's cgroup is gone.
# SIGTERM goes to the daemon alone (KillMode=mixed), which drains: `ck-cgroup kill ID --grace 2s`
# for each module (b's orphan-making command included), then exit 0.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin stop
SVC=$(svc_cg)
pids=$(subtree_pids "$SVC")
echo "processes in the service: $pids"
t0=$(date +%s)
s0=$(date +%s.%N)
rc=0; systemctl stop "$UNIT" || rc=$?
s1=$(date +%s.%N)
expect "systemctl stop exit 0 ($rc)" [ "$rc" = 0 ]
expect "the unit is inactive ($(systemctl is-active "$UNIT" || true))" \
  eval '[ "$(systemctl is-active "$UNIT")" = inactive ]'
# shellcheck disable=SC2086
expect "none of the $(echo $pids | wc -w) processes survives" none_alive $pids
expect "the service's cgroup $SVC is gone" not_exists "$SVC"
journal=$(journal_since "$t0")
echo "$journal"
expect "the daemon drained and exited 0" grep -q 'drained; exit 0' <<< "$journal"
bad=$(grep -E 'timed out|Killing process|Failed with result' <<< "$journal" | sed 's/^[^]]*] //' || true)
expect "systemd killed nothing itself (${bad:-none})" [ -z "$bad" ]
note "stop took $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f", b - a }') s"
check_end
