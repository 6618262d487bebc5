# shellcheck shell=dash
# pids.max: a module limited to 5 tasks cannot fork a 6th, and kill still takes the whole tree.
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

check_begin pids-max
service_new svc-pids
"$CK" init > /dev/null
"$CK" create forky > /dev/null
forky=$MODS/forky
set_limit forky pids.max 5 --pids-max 5
expect "pids.max is 5" [ "$(cat "$forky/pids.max")" = 5 ]

# forkn tries 8 forks: with itself that is 9 tasks; 4 forks fit under pids.max 5.
"$CK" exec forky -- "$FORKN" 8 > /tmp/forkn.out 2>&1 &
leader=$!
expect "forkn reports its forks" wait_until 10 grep -q '^forkn:' /tmp/forkn.out
cat /tmp/forkn.out
summary=$(grep '^forkn:' /tmp/forkn.out || true)
expect "4 forks succeed and 4 fail ($summary)" [ "$summary" = "forkn: ok=4 failed=4" ]
expect "the 5th fork fails with EAGAIN" \
  grep -q '^fork 5 failed Resource temporarily unavailable' /tmp/forkn.out
current=$(cat "$forky/pids.current")
expect "pids.current=$current (5)" [ "$current" = 5 ]
max_events=$(keyed "$forky/pids.events" max)
expect "pids.events max=$max_events >= 4" [ "${max_events:-0}" -ge 4 ]
pids=$(cat "$forky/cgroup.procs")

rc=0
out=$("$CK" kill forky --json) || rc=$?
echo "kill --json: $out"
wait "$leader" 2>/dev/null || true
expect "kill exits 0 (rc=$rc)" [ "$rc" = 0 ]
expect "kill reports empty" jq_is "$out" '.empty == true'
expect "kill reports removed" jq_is "$out" '.removed == true'
expect "forky's directory is gone" not_exists "$forky"
# shellcheck disable=SC2086 # one pid a word
expect "none of the 5 processes is alive" none_alive $pids
check_end
service_end
