# shellcheck shell=bash
# `ck-cgroup sandbox` on a systemd host: the isolated root is inside a transient delegated scope
# (ck-sandbox-*.scope, Delegate=yes) instead of a directory beside systemd's own cgroups. The
# helper sits in helper/, CMD in cmd/, the root in root/ with the controllers the scope was
# given. A module with a memory limit runs in it; CMD leaves an orphan behind. When CMD exits,
# both are killed, and the scope, its unit and every directory are gone. Then 20 more scope
# sandboxes one after another each exit 0.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin sandbox-scope
out=/tmp/sandbox-scope.out
rc=0
"$CK" sandbox -- bash -c '
  echo "ROOT $CK_CGROUP_ROOT"
  echo "CMD $(sed -n "s/^0:://p" /proc/self/cgroup)"
  ck-cgroup exec m --memory-max 32M -- sleep 300 &
  echo "MODULE $!"
  for i in $(seq 50); do grep -qx "$!" "$CK_CGROUP_ROOT/subc-modules/m/cgroup.procs" 2> /dev/null && break; sleep 0.1; done
  echo "MAX $(ck-cgroup status --json m | jq -r ".modules[0].limits.memory_max.value")"
  ( sleep 301 & echo "ORPHAN $!" )
  echo "UNITS $(systemctl list-units --all --no-legend "ck-sandbox-*.scope" | awk "{print \$1}")"
' > "$out" 2>&1 || rc=$?
cat "$out"
val() { sed -n "s/^$1 //p" "$out" | head -n 1; }
root=$(val ROOT) module=$(val MODULE) orphan=$(val ORPHAN) unit=$(val UNITS)
expect "sandbox exit 0 ($rc)" [ "$rc" = 0 ]
expect "the root is root/ of a ck-sandbox-*.scope ($root)" eval '[[ "$root" == */ck-sandbox-*.scope/root ]]'
expect "the scope was a loaded unit while CMD ran ($unit)" eval '[[ "$unit" == ck-sandbox-*.scope ]]'
expect "CMD ran in the scope's cmd/ leaf ($(val CMD))" eval '[[ "$(val CMD)" == */ck-sandbox-*.scope/cmd ]]'
expect "the module got its memory.max in the delegated scope ($(val MAX))" [ "$(val MAX)" = 33554432 ]
expect "the module ($module) and CMD's orphan ($orphan) are gone" \
  eval '[ -n "$module" ] && [ -n "$orphan" ] && ! alive "$module" && ! alive "$orphan"'
gone() { [ ! -e "$root" ] && [ -z "$(systemctl list-units --all --no-legend 'ck-sandbox-*.scope')" ]; }
expect "the scope's cgroup and unit are gone" wait_until 10 gone
# Scope sandboxes one after another, as a developer's loop of test runs makes them: each is made
# right after the helper's D-Bus call, when a thread of its runtime may still be on its way out
# of the scope (cgroup/own_threads.rs; lane 2's user-suite-isolation once failed there, EBUSY).
bad=
for i in $(seq 20); do
  r=0 o=$("$CK" sandbox -- true 2>&1) || r=$?
  [ "$r" = 0 ] || bad="$bad run $i: exit $r ($o);"
done
expect "20 scope sandboxes in a row each exit 0 (${bad:-all did})" [ -z "$bad" ]
expect "their scopes' units are gone" wait_until 10 gone
left=$(find "$CG" -name 'ck-sandbox-*' 2> /dev/null | tr '\n' ' ')
expect "no ck-sandbox-* directory anywhere (${left:-none})" [ -z "$left" ]
check_end
