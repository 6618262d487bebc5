# Replay 2, the orphans: module b's command starts a child that starts a grandchild and exits, so
# the grandchild is reparented away from b's main process. Ending b's main process makes the
# daemon restart b: it runs `ck-cgroup kill b --grace 1s` on what is left, then starts b again.
# No process of an old b survives, and twenty restarts leave the number of processes in the
# service and of cgroup directories as they were.
set -euo pipefail
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
procs=$(cat "$B/cgroup.procs" | tr '\n' ' ')
orphan=$(grep -vx "$(mod_pid b)" "$B/cgroup.procs" | head -n 1)
expect "the grandchild $orphan is reparented away from b's main process $(mod_pid b) (ppid $(ppid_of "$orphan"))" \
  [ "$(ppid_of "$orphan")" != "$(mod_pid b)" ]
n0=$(subtree_pids "$SVC" | wc -w) d0=$(subtree_dirs "$SVC")
echo "before: b = $procs; $n0 processes in the service; dirs: $d0"
old=() failed_round=
t0=$(date +%s.%N)
for i in $(seq 1 20); do
  old+=($(cat "$B/cgroup.procs"))
  restart_b || { failed_round=$i; break; }
done
t1=$(date +%s.%N)
expect "20 restarts of b, each with its orphan (failed at: ${failed_round:-none})" [ -z "$failed_round" ]
sleep 0.2
survivors=$(for p in "${old[@]}"; do alive "$p" && echo "$p $(cat /proc/$p/cmdline | tr '\0' ' ')"; done || true)
expect "no process of an old b survives (${#old[@]} pids checked; alive: ${survivors:-none})" [ -z "$survivors" ]
n1=$(subtree_pids "$SVC" | wc -w) d1=$(subtree_dirs "$SVC")
expect "processes in the service: $n0 before, $n1 after" [ "$n0" = "$n1" ]
expect "cgroup directories unchanged ($d1)" [ "$d0" = "$d1" ]
note "20 restarts in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
journal_since "${t0%.*}" | tail -n 8 || true
check_end
