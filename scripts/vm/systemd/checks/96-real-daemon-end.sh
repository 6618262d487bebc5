# shellcheck shell=bash
# The real daemon, continued (after 95-real-daemon.sh; lib-systemd.sh: real_daemon_up):
#   real-daemon-crash  SIGKILL of the daemon: systemd restarts it, ExecStartPre prunes, no
#                      process of the old modules survives, no directory count grows
#   real-daemon-stop   `systemctl stop` with deaf ignoring TERM (its run's grace, 10 s, outlasts
#                      the daemon's 3 s drain, so the daemon SIGKILLs its helper): nothing of any
#                      module is left, within TimeoutStopSec, and systemd killed nothing itself
# Mutation controls (docs/guest-lane.md): with CK_MUTATION=no-kill-on-close, stop fails. crash has
# none of ours: KillMode=mixed makes systemd SIGKILL every process of the service before Restart=,
# and prune is the line behind it; the check shows the combination holds with the real daemon.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
if [ ! -x "$REAL" ]; then
  why=$(cat /lane/real-daemon.why 2> /dev/null || echo "no $REAL")
  for c in crash stop; do
    check_begin "real-daemon-$c"; expect "the real daemon was built ($why)" false; check_end
  done
  exit 0
fi
real_daemon_up

check_begin real-daemon-crash
mp=$(main_pid)
old=$(subtree_pids "$SVC/subc-modules")
d0=$(subtree_dirs "$SVC")
echo "daemon $mp, module processes: $old, dirs: $d0"
t0=$(date +%s)
kill -KILL "$mp"
new_daemon() { local p; p=$(main_pid); [ "$p" != 0 ] && [ "$p" != "$mp" ] && is_active && real_running; }
expect "Restart= started a new daemon with modules $REAL_MODULES" wait_until 60 new_daemon
# shellcheck disable=SC2086
expect "no process of the old modules survives ($old)" none_alive $old
pre=$(systemctl show -P ExecStartPre "$UNIT")
expect "ExecStartPre (prune --kill) ran again and exited 0" grep -q 'code=exited ; status=0[ /]' <<< "$pre"
d1=$(subtree_dirs "$SVC")
expect "cgroup directories in the service as before ($d1)" [ "$d0" = "$d1" ]
journal_since "$t0" | tail -n 12 || true
check_end

check_begin real-daemon-stop
pids=$(subtree_pids "$SVC")
echo "processes in the service: $pids"
t0=$(date +%s)
s0=$(date +%s.%N)
rc=0; systemctl stop "$UNIT" || rc=$?
s1=$(date +%s.%N)
took=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f", b - a }')
limit=$(systemctl show -P TimeoutStopUSec "$UNIT")
expect "systemctl stop exit 0 ($rc) in $took s, within TimeoutStopSec ($limit)" \
  eval '[ "$rc" = 0 ] && awk -v t="$took" "BEGIN { exit !(t < 35) }"'
# shellcheck disable=SC2086
expect "none of the $(echo $pids | wc -w) processes survives" none_alive $pids
expect "the service's cgroup $SVC is gone" not_exists "$SVC"
journal=$(journal_since "$t0")
echo "$journal" | tail -n 20
bad=$(grep -E 'timed out|Killing process|Failed with result' <<< "$journal" | sed 's/^[^]]*] //' || true)
expect "systemd killed nothing itself (${bad:-none})" [ -z "$bad" ]
check_end
real_daemon_down
