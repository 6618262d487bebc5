# shellcheck shell=dash
# kill with each --method on a 7-process tree: the module's process, a child, a child with two
# grandchildren, and two orphans whose parent exited (reparented to PID 1, found by membership).
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

TREE='sleep 600 &
sh -c "sleep 600 & sleep 600 & wait" &
sh -c "sleep 600 & sleep 600 &"
exec sleep 600'

service_new svc-kill
"$CK" init > /dev/null
for method in cgroup-kill freeze signal; do
  check_begin "kill-$method"
  module=tree-$method
  dir=$MODS/$module
  "$CK" create "$module" > /dev/null
  "$CK" exec "$module" -- sh -c "$TREE" &
  leader=$!
  expect "7 processes in the module" wait_until 10 has_procs "$dir" 7
  pids=$(cat "$dir/cgroup.procs")
  orphans=0
  for pid in $pids; do
    [ "$(ppid_of "$pid")" = 1 ] && orphans=$((orphans + 1))
  done
  expect "2 orphans reparented to PID 1 ($orphans)" [ "$orphans" = 2 ]

  rc=0
  out=$("$CK" kill "$module" --method "$method" --json) || rc=$?
  echo "kill --json: $out"
  wait "$leader" 2>/dev/null || true
  expect "kill exits 0 (rc=$rc)" [ "$rc" = 0 ]
  expect "kill used method $method" jq_is "$out" '.method == $m' --arg m "$method"
  expect "kill fell through nothing" jq_is "$out" '.fell_through == []'
  expect "kill reports empty" jq_is "$out" '.empty == true'
  expect "kill reports removed" jq_is "$out" '.removed == true'
  expect "the module's directory is gone" not_exists "$dir"
  # shellcheck disable=SC2086 # one pid a word
  expect "none of the 7 processes is alive" wait_until 5 none_alive $pids
  check_end
done
service_end
