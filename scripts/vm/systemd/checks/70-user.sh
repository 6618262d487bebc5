# shellcheck shell=bash
# Stretch, the user manager: the same unit as rendered for `systemctl --user` (make install's
# /usr/lib/systemd/user/ck-subc.service), run by a lingering user's manager, whose own subtree
# systemd delegated (user@.service). Replay 1 there: module a is OOM-killed alone, the service
# stays active, the daemon and b, c keep their pids.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-hoard
t0=$(date +%s)
expect "loginctl enable-linger lane started the user's manager (user@UID.service)" user_up
uunit=$(u systemctl --user show -P FragmentPath ck-subc.service)
expect "the user manager loads make install's user unit ($uunit)" [ "$uunit" = /usr/lib/systemd/user/ck-subc.service ]
rc=0; u systemctl --user start ck-subc.service || rc=$?
expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
echo "user service cgroup: $USVC"
expect "modules a b c run in the user service" wait_until 30 uall
ctl=$(cat "$USVC/subc-modules/cgroup.subtree_control" 2> /dev/null || true)
expect "subc-modules/ has memory pids ($ctl; delegated to user@: $(cat "$USVC/../../cgroup.controllers" 2> /dev/null))" has_words "$ctl" memory pids
ump=$(u systemctl --user show -P MainPID ck-subc.service)
expect "the daemon (pid $ump, user $(stat -c %U "/proc/$ump")) is in daemon/" is_member "$USVC/daemon" "$ump"
pa=$(umod_pid a) pb=$(umod_pid b) pc=$(umod_pid c) sa=$(ustarts a)
echo "exec $MEMHOG 256" > "$UT/a.once"
chown lane "$UT/a.once"
kill "$pa"
expect "a is OOM-killed (memory.events oom_kill >= 1)" wait_until 60 oom_killed "$USVC/subc-modules/a"
expect "the daemon restarted a after the OOM kill" wait_until 30 urestarted a $((sa + 1))
json=$(u "$CK" status --json a --root "$USVC")
oom=$(jq -r '.modules[0].memory_events.value.oom_kill // "null"' <<< "$json")
expect "ck-cgroup status --json a (as the user): oom_kill >= 1 ($oom)" eval '[ "$oom" != null ] && [ "$oom" -ge 1 ]'
expect "the user service is active" eval '[ "$(u systemctl --user is-active ck-subc.service)" = active ]'
expect "the daemon kept its pid ($ump)" eval '[ "$(u systemctl --user show -P MainPID ck-subc.service)" = "$ump" ]'
expect "b and c kept their pids ($pb $pc)" eval '[ "$(umod_pid b)" = "$pb" ] && [ "$(umod_pid c)" = "$pc" ] && alive "$pb" && alive "$pc"'
journal=$(ujournal_since "$t0")
echo "$journal"
expect "the user service's journal has the daemon's lines ($(grep -c 'ck-subc\[' <<< "$journal" || true))" grep -q 'module a started' <<< "$journal"
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited' <<< "$journal" || true)
expect "the journal shows no stop of the user service (${stops:-none})" [ -z "$stops" ]
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 and the cgroup is gone" eval '[ "$rc" = 0 ] && [ ! -e "$USVC" ]'
loginctl disable-linger lane || true
check_end
