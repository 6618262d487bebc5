# shellcheck shell=dash
# memory.oom.group is 1 on every path that makes a module (create, exec and run without limit
# flags, place), 0 with --no-oom-group or the policy's oom_group = false, and set only when the
# module is made: a module that exists keeps what it has.
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

group_of() { cat "$MODS/$1/memory.oom.group" 2> /dev/null || echo none; }

check_begin oom-group-default
service_new svc-oomg
"$CK" init > /dev/null

"$CK" create c > /dev/null
expect "create c: memory.oom.group 1 ($(group_of c))" [ "$(group_of c)" = 1 ]
"$CK" create cn --no-oom-group > /dev/null
expect "create cn --no-oom-group: memory.oom.group 0 ($(group_of cn))" [ "$(group_of cn)" = 0 ]
printf '[defaults]\noom_group = false\n' > /tmp/oomg-policy.toml
"$CK" --policy /tmp/oomg-policy.toml create cp > /dev/null
expect "create cp under oom_group = false: memory.oom.group 0 ($(group_of cp))" \
  [ "$(group_of cp)" = 0 ]

"$CK" exec e -- sleep 600 &
e_pid=$!
expect "exec e: its sleep $e_pid is in e" wait_until 5 is_member "$MODS/e" "$e_pid"
expect "exec e (no flags): memory.oom.group 1 ($(group_of e))" [ "$(group_of e)" = 1 ]
"$CK" exec en --no-oom-group -- sleep 600 &
en_pid=$!
expect "exec en --no-oom-group: its sleep $en_pid is in en" wait_until 5 is_member "$MODS/en" "$en_pid"
expect "exec en --no-oom-group: memory.oom.group 0 ($(group_of en))" [ "$(group_of en)" = 0 ]

"$CK" run r -- sleep 600 &
r_pid=$!
expect "run r: the module is populated" wait_until 5 populated "$MODS/r"
expect "run r: memory.oom.group 1 ($(group_of r))" [ "$(group_of r)" = 1 ]

sleep 600 &
p_pid=$!
"$CK" place p "$p_pid" > /dev/null
expect "place p: $p_pid is in p" is_member "$MODS/p" "$p_pid"
expect "place p: memory.oom.group 1 ($(group_of p))" [ "$(group_of p)" = 1 ]

# Set once, when the module is made: a spawn into an existing module does not rewrite it.
echo 0 > "$MODS/c/memory.oom.group"
"$CK" exec c -- true
"$CK" create c > /dev/null
expect "exec and create of the existing c keep its 0 ($(group_of c))" [ "$(group_of c)" = 0 ]

kill "$r_pid" 2> /dev/null || true
wait "$r_pid" 2> /dev/null || true
for id in e en p; do "$CK" kill "$id" > /dev/null || true; done
wait "$e_pid" "$en_pid" "$p_pid" 2> /dev/null || true
check_end
service_end
