# shellcheck shell=bash
# Replays 2 and 4 under the user manager (check 70 did replay 1 there): the same unit as a user
# service of `lane`. The orphans: b's grandchild (ignoring SIGTERM) is reparented away; twenty
# restarts, each with the daemon's `kill b --grace 1s` as the user, leave no old process and the
# same processes and cgroup directories in the service. The stop: `systemctl --user stop` leaves
# no process of the service and removes its cgroup; the daemon drained.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-replays
user_service_up
B=$USVC/subc-modules/b
echo '( trap "" TERM; sleep 1001 & ); exec sleep infinity' > "$UT/b.cmd"
chown lane "$UT/b.cmd"
urestart_b() {
  local s
  s=$(ustarts b)
  kill "$(umod_pid b)"
  wait_until 30 urestarted b "$s" && wait_until 10 has_procs "$B" 2
}
expect "b restarted with the orphan-making command, 2 processes" urestart_b
orphan=$(grep -vx "$(umod_pid b)" "$B/cgroup.procs" | head -n 1 || true)
expect "the grandchild ${orphan:-(none)} is reparented away from b's main process (ppid $(ppid_of "$orphan"))" \
  eval '[ -n "$orphan" ] && [ "$(ppid_of "$orphan")" != "$(umod_pid b)" ]'
twenty_restarts "in the user service" "$USVC" "$B/cgroup.procs" urestart_b
pids=$(subtree_pids "$USVC")
t0=$(date +%s)
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
# shellcheck disable=SC2086
expect "none of the $(echo $pids | wc -w) processes of the user service survives" none_alive $pids
expect "the user service's cgroup is gone" not_exists "$USVC"
journal=$(ujournal_since "$t0")
echo "$journal"
expect "the daemon drained and exited 0" grep -q 'drained; exit 0' <<< "$journal"
rm -f "$UT/b.cmd"
loginctl disable-linger lane || true
check_end
