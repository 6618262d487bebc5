# shellcheck shell=bash
# Replay 3, test isolation: with ck-subc.service running, a test job runs from inside the service's
# own daemon/ leaf (the worst place: root discovery there finds the live service) under
# `ck-cgroup sandbox`, making, filling, limiting, OOM-killing, killing and pruning modules. The
# service's subtree (directories and processes) is the same afterwards, and no sandbox is left.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin isolation
SVC=$(svc_cg)
# shellcheck disable=SC2034 # read in an eval string below
mp=$(main_pid)
cat > /tmp/job.sh << JOB
set -eux
echo "job root: \$CK_CGROUP_ROOT"
case "\$CK_CGROUP_ROOT" in $SVC*) echo "the sandbox is inside the service"; exit 3 ;; esac
$CK list
$CK create m1 --memory-max 32M --pids-max 16
$CK exec m2 -- sleep 300 &
$CK exec m3 -- bash -c '( sleep 301 & ); exec sleep 302' &
M=\$CK_CGROUP_ROOT/subc-modules
for i in \$(seq 100); do
  [ "\$(cat \$M/m2/cgroup.procs \$M/m3/cgroup.procs 2> /dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
$CK list
$CK kill m2 --grace 1s
rc=0; $CK exec hog --memory-max 16M --memory-swap-max 0 -- $MEMHOG 64 || rc=\$?
echo "hog exit \$rc"
$CK status hog
$CK prune --kill
$CK list
JOB
before_d=$(subtree_dirs "$SVC") before_p=$(subtree_pids "$SVC")
top_before=$(find "$CG" -name "ck-sandbox-*" 2> /dev/null || true)
rc=0
bash -c "echo \$\$ > '$SVC/daemon/cgroup.procs' && exec $CK sandbox -- bash /tmp/job.sh" || rc=$?
expect "the job ran from daemon/ under sandbox and exited 0 ($rc)" [ "$rc" = 0 ]
after_d=$(subtree_dirs "$SVC") after_p=$(subtree_pids "$SVC")
echo "dirs before: $before_d"; echo "dirs after:  $after_d"
echo "pids before: $before_p"; echo "pids after:  $after_p"
expect "the service's cgroup directories are unchanged" [ "$before_d" = "$after_d" ]
expect "the service's processes are unchanged ($(wc -w <<< "$after_p"))" [ "$before_p" = "$after_p" ]
expect "the daemon kept its pid and the service is active" eval '[ "$(main_pid)" = "$mp" ] && is_active'
left=$(find "$CG" -name "ck-sandbox-*" 2> /dev/null || true)
expect "no sandbox is left (${left:-none})" [ "$left" = "$top_before" ]
check_end
