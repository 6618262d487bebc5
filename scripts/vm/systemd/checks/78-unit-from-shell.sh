# shellcheck shell=bash
# unit-from-shell: an operator's shell is no service root. From a transient scope (what
# a login session is: a cgroup with neither daemon/ nor subc-modules/), `ck-cgroup kill a` without
# a root refuses with exit 2 and one line naming that scope and --unit, and module a keeps running;
# `--unit ck-subc.service` asks systemd for the service's cgroup over D-Bus, so list, freeze, thaw
# and kill act on the service's modules from there. Fails with a helper built with
# CK_MUTATION=no-service-root-check (the kill is "already gone", exit 0) or freeze-no-wait.
# Unrun when it was written (no systemd on the development host).
# check-timeout: 300
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin unit-from-shell
rc=0; sctl start "$UNIT" || rc=$?
expect "systemctl start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
SVC=$(svc_cg)
expect "modules a b c run" wait_until 30 all_running
pa=$(mod_pid a) sa=$(starts a)
shell() { timeout 60 systemd-run --scope --quiet --collect -- "$@"; }
rc=0; err=$(shell "$CK" kill a 2>&1 > /dev/null) || rc=$?
echo "kill a from a scope: exit $rc: $err"
expect "kill a from a shell's scope without a root exits 2 ($rc)" [ "$rc" = 2 ]
expect "in one line naming the scope and --unit" \
  eval '[ "$(wc -l <<< "$err")" = 1 ] && grep -q "\.scope (discovered from this process.s cgroup) is not a service root.*--unit" <<< "$err"'
expect "module a still runs (pid $pa)" eval 'alive "$pa" && [ "$(mod_pid a)" = "$pa" ]'
rc=0; out=$(shell "$CK" list 2>&1) || rc=$?
expect "list from the scope exits 2 too, no empty table ($rc: $out)" [ "$rc" = 2 ]
rc=0; json=$(shell "$CK" --unit "$UNIT" --json list) || rc=$?
echo "$json"
expect "list --unit $UNIT from the scope exits 0 ($rc)" [ "$rc" = 0 ]
expect "its root is the service's cgroup $SVC" jq_is "$json" '.root == $r' --arg r "$SVC"
expect "it lists a b c" eval 'for m in a b c; do jq -e --arg m "$m" ".modules[] | select(.name == \$m)" <<< "$json" > /dev/null || exit 1; done'
rc=0; shell "$CK" --unit "$UNIT" freeze b || rc=$?
expect "freeze b --unit exits 0 ($rc) and b's cgroup.events says frozen 1 at once" \
  eval '[ "$rc" = 0 ] && [ "$(keyed "$SVC/subc-modules/b/cgroup.events" frozen)" = 1 ]'
rc=0; CK_CGROUP_UNIT=$UNIT shell "$CK" thaw b || rc=$?
expect "thaw b (CK_CGROUP_UNIT) exits 0 ($rc) and b's cgroup.events says frozen 0" \
  eval '[ "$rc" = 0 ] && [ "$(keyed "$SVC/subc-modules/b/cgroup.events" frozen)" = 0 ]'
rc=0; shell "$CK" --unit "$UNIT" kill a || rc=$?
expect "kill a --unit from the scope exits 0 ($rc) and a's process is gone" eval '[ "$rc" = 0 ] && ! alive "$pa"'
expect "the daemon started a again" wait_until 30 restarted a "$sa"
rc=0; err=$(shell "$CK" --unit no-such.service list 2>&1) || rc=$?
expect "--unit of a unit that does not run: exit 2 in one line ($rc: $err)" \
  eval '[ "$rc" = 2 ] && [ "$(wc -l <<< "$err")" = 1 ]'
check_end
