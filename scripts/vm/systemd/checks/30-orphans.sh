# shellcheck shell=bash
# Replay 2, the orphans: module b's command starts a child that starts a grandchild and exits, so
# the grandchild is reparented away from b's main process. Ending b's main process makes the
# daemon restart b: it runs `ck-cgroup kill b --grace 1s` on what is left, then starts b again.
# No process of an old b survives, and twenty restarts leave the number of processes in the
# service and of cgroup directories as they were.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin orphans
SVC=$(svc_cg)
B=$SVC/subc-modules/b
echo '( sleep 1001 & ); exec sleep infinity' > "$T/b.cmd"
restart_b() {  # end b's main process; wait for the new b with its orphan
  local s
  s=$(starts b)
  kill "$(mod_pid b)"
  wait_until 30 restarted b "$s" && wait_until 10 has_procs "$B" 2
}
expect "b restarted with the orphan-making command, 2 processes" restart_b
orphan=$(grep -vx "$(mod_pid b)" "$B/cgroup.procs" | head -n 1 || true)
expect "the grandchild ${orphan:-(none)} is reparented away from b's main process $(mod_pid b) (ppid $(ppid_of "$orphan"))" \
  eval '[ -n "$orphan" ] && [ "$(ppid_of "$orphan")" != "$(mod_pid b)" ]'
t0=$(date +%s)
twenty_restarts "in the service" "$SVC" "$B/cgroup.procs" restart_b
journal_since "$t0" | tail -n 8 || true
check_end
