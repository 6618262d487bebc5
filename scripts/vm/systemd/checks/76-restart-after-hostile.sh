# shellcheck shell=bash
# restart-after-hostile: a module that leaves an empty threaded sub-cgroup and control files and
# directories with mode 000 behind cannot stop `systemctl restart ck-subc` from succeeding.
# Under the user manager (user `lane`, as 70-user.sh): there the daemon, its modules, the drain's
# `ck-cgroup kill` and the unit's ExecStartPre=`ck-cgroup prune --kill` share one uid, so the
# modes deny them (as root, CAP_DAC_OVERRIDE ignores modes, and the system manager removes what
# is left itself). Module a becomes (conformance.rs's Threaded and Chmod cases at once):
#   a/t  an empty threaded sub-cgroup (its cgroup.procs reads EOPNOTSUPP)
#   a/s  a sub-cgroup whose cgroup.procs, cgroup.events and directory are mode 000
#   a    cgroup.procs, cgroup.kill, cgroup.events, cgroup.freeze, cgroup.stat, cgroup.threads,
#        cgroup.type and the directory itself mode 000
# Then `systemctl --user restart`: the stand-in daemon's drain (`kill a --grace 2s`) or, for what
# it leaves, the start's `prune --kill`, must stop and remove it; the restart exits 0, a b c run
# again under a new daemon, no process of the old service is left, and a's directory is fresh.
# Fails with a helper built with CK_MUTATION=no-threads-fallback or CK_MUTATION=no-mode-restore
# (scripts/vm-mutation).
# check-timeout: 600
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin restart-after-hostile
user_service_up
ump=$(u systemctl --user show -P MainPID ck-subc.service)
# shellcheck disable=SC2034 # read in an eval string below
pa=$(umod_pid a) sa=$(ustarts a)
# The module's path is given: inside its cgroup namespace (rooted at the module) the module reads
# 0::/ in /proc/self/cgroup.
{ echo "m=$USVC/subc-modules/a"; cat; } > "$UT/a.once" << 'CMD'
mkdir "$m/t" && echo threaded > "$m/t/cgroup.type" || exit 1
mkdir "$m/s" && chmod 000 "$m/s/cgroup.procs" "$m/s/cgroup.events" "$m/s" || exit 1
cd "$m" && chmod 000 cgroup.procs cgroup.kill cgroup.events cgroup.freeze cgroup.stat cgroup.threads cgroup.type || exit 1
chmod 000 "$m" || exit 1
cd / && echo ready > "$XDG_RUNTIME_DIR/ck-subc-test/a.hostile"
exec sleep infinity
CMD
chown lane "$UT/a.once"
rm -f "$UT/a.hostile"
kill "$pa"
expect "the daemon restarted a with the hostile command" wait_until 60 eval '[ -e "$UT/a.hostile" ] && urestarted a "$sa"'
A=$USVC/subc-modules/a
state="a: $(stat -c %a "$A"), a/cgroup.procs: $(stat -c %a "$A/cgroup.procs"), a/t: $(cat "$A/t/cgroup.type" 2> /dev/null), a/s: $(stat -c %a "$A/s")"
expect "a is hostile ($state)" eval '[ "$(stat -c %a "$A")" = 0 ] && [ "$(stat -c %a "$A/cgroup.procs")" = 0 ] && [ "$(cat "$A/t/cgroup.type")" = threaded ]'
# (cat fails on the threaded t/cgroup.procs, EOPNOTSUPP; t holds no process)
old=$(subtree_pids "$USVC" || true)
echo "old service processes: $old"
t0=$(date +%s)
rc=0
# shellcheck disable=SC2154 # uid: set by user_up
timeout 150 runuser -u lane -- env XDG_RUNTIME_DIR="/run/user/$uid" \
  DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" systemctl --user restart ck-subc.service || rc=$?
expect "systemctl --user restart ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
new_daemon() {
  local p
  p=$(u systemctl --user show -P MainPID ck-subc.service)
  [ "$p" != 0 ] && [ "$p" != "$ump" ] && [ "$(u systemctl --user is-active ck-subc.service)" = active ]
}
if [ "$rc" = 0 ]; then
  expect "a new daemon runs (was $ump) and the service is active" wait_until 30 new_daemon
  USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
  A=$USVC/subc-modules/a
  expect "modules a b c run again" wait_until 60 uall
  # shellcheck disable=SC2086 # pids, one word each
  expect "no process of the old service is left" none_alive $old
  expect "a's directory is a new one (modes $(stat -c %a "$A" "$A/cgroup.procs" 2> /dev/null | tr '\n' ' ')without t/ or s/)" \
    eval '[ "$(stat -c %a "$A")" != 0 ] && [ "$(stat -c %a "$A/cgroup.procs")" != 0 ] && [ ! -e "$A/t" ] && [ ! -e "$A/s" ]'
fi
journal=$(timeout 30 bash -c "$(declare -f ujournal_since); ujournal_since $t0" || true)
echo "$journal"
# The drain's line on a (the stand-in daemon drops kill's output), and what prune said.
said=$(grep -E 'ck-subc\[[0-9]+\]: .*(module a stopped|kill a failed|no modules|a .*(killed|removed|failed)|ck-cgroup: )' <<< "$journal" | sed 's/^[^]]*] //' | tr '\n' ' ' || true)
note "the journal: ${said:-no line of the drain or prune on a}"
# Clean up, bounded; what a failed restart leaves (mode-000 cgroups, their processes) root
# kills and removes, so that the next check starts clean.
timeout 60 runuser -u lane -- env XDG_RUNTIME_DIR="/run/user/$uid" \
  DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" systemctl --user stop ck-subc.service || true
[ ! -d "$USVC" ] || remove_tree "$USVC"
timeout 30 loginctl disable-linger lane || true
check_end
