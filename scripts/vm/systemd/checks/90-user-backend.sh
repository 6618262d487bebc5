# shellcheck shell=bash
# The systemd backend and the scope sandbox under a user manager, as an unprivileged user
# (`lane`, lingering; its session bus comes from dbus-user-session). The user's side runs as a
# transient service of its own manager (`systemd-run --user`), as a user's daemon would: a
# process outside the user's subtree cannot be moved into it (the cgroup2 common-ancestor rule).
# `exec --backend systemd` (the user manager is the default for a non-root caller) puts a module
# in a scope inside user@UID.service with its memory limit, `list`/`status` see it, `kill`
# removes scope and slice; `sandbox` makes its isolated root in a delegated scope of the user
# manager and leaves nothing behind.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-backend
expect "the user's manager runs" user_up
bus_up() { [ -S "/run/user/$uid/bus" ]; }
expect "it has a session bus (/run/user/$uid/bus)" wait_until 30 bus_up
# shellcheck disable=SC2034 # read in an eval string below
UM=$CG/user.slice/user-$uid.slice/user@$uid.service/module.slice
cat > /tmp/user-backend.sh <<'SCRIPT'
set -u
ck-cgroup exec --backend systemd u1 --memory-max 32M -- sh -c 'echo $$ > /tmp/u1.pid; exec sleep 300' &
for i in $(seq 100); do [ -s /tmp/u1.pid ] && break; sleep 0.1; done
echo "PID $(cat /tmp/u1.pid)"
echo "CGROUP $(sed -n 's/^0:://p' /proc/$(cat /tmp/u1.pid)/cgroup)"
echo "LIST $(ck-cgroup --json list --backend systemd | jq -c '[.modules[] | {module: .module, procs: .procs}]')"
echo "MAX $(ck-cgroup --json status --backend systemd u1 | jq -r '.modules[0].limits.memory_max.value')"
k=$(ck-cgroup --json kill --backend systemd u1); echo "KILL $? $(jq -c '{method: .method, removed: .removed, error: .error}' <<< "$k")"
wait
echo "UNITS $(systemctl --user list-units --all --no-legend '*u1*' | wc -l)"
ck-cgroup sandbox -- bash -c 'echo "ROOT $CK_CGROUP_ROOT"; ck-cgroup exec m --memory-max 16M -- sleep 300 & for i in $(seq 100); do grep -qx "$!" "$CK_CGROUP_ROOT/subc-modules/m/cgroup.procs" 2> /dev/null && break; sleep 0.1; done; echo "SMAX $(ck-cgroup --json status m | jq -r ".modules[0].limits.memory_max.value")"'
echo "SANDBOX $?"
SCRIPT
chmod 644 /tmp/user-backend.sh
rm -f /tmp/u1.pid
rc=0
out=$(u systemd-run --user --quiet --wait --pipe --collect bash /tmp/user-backend.sh 2>&1) || rc=$?
echo "$out"
val() { sed -n "s/^$1 //p" <<< "$out" | head -n 1; }
pid=$(val PID)
expect "the user's script ran (systemd-run --user exit $rc)" [ "$rc" = 0 ]
expect "exec --backend systemd as lane: the module ran in its scope in the user manager ($(val CGROUP))" \
  eval '[[ "$(val CGROUP)" == */user@$uid.service/module.slice/module-u1.slice/subc-module-u1.scope ]]'
expect "list --backend systemd as lane showed u1 with 1 process ($(val LIST))" [ "$(val LIST)" = '[{"module":"u1","procs":1}]' ]
expect "the scope had memory.max 32M ($(val MAX))" [ "$(val MAX)" = 33554432 ]
expect "kill --backend systemd u1: exit 0, method systemd, removed ($(val KILL))" \
  [ "$(val KILL)" = '0 {"method":"systemd","removed":true,"error":null}' ]
expect "the module's process ($pid) is gone and no unit of u1 is left ($(val UNITS))" \
  eval '[ -n "$pid" ] && ! alive "$pid" && [ "$(val UNITS)" = 0 ] && [ ! -e "$UM/module-u1.slice" ]'
root=$(val ROOT)
expect "sandbox as lane: exit $(val SANDBOX), root in a delegated scope of the user manager ($root)" \
  eval '[ "$(val SANDBOX)" = 0 ] && [[ "$root" == */user@$uid.service/*ck-sandbox-*.scope/root ]]'
expect "a module in the user's sandbox got memory.max 16M ($(val SMAX))" [ "$(val SMAX)" = 16777216 ]
gone() { [ ! -e "$root" ] && [ -z "$(find "$CG" -name 'ck-sandbox-*')" ]; }
expect "the user's sandbox scope is gone" wait_until 10 gone
loginctl disable-linger lane || true
check_end
