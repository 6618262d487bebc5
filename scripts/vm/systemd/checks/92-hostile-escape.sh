# shellcheck shell=bash
# Containment: a hostile module tries each way out of its module. Under the
# user manager (unprivileged, so `exec` makes the module's cgroup namespace with a user
# namespace), module a's command is a script that moves itself to the daemon's leaf, the service
# root, subc-modules/ and sibling b, writes its own limits, and setns(2)es into the daemon's and
# PID 1's cgroup namespaces, also from a nested cgroup namespace of its own. cgroup2 here is
# mounted with nsdelegate (systemd's default): every try must fail, what it may do inside its
# module (a sub-cgroup, a process moved there, an orphan) works, and `kill a` takes it all.
# Then, under the system service, what a root module can still do: the direct tries fail too,
# but holding CAP_SYS_ADMIN it setns(2)es into PID 1's cgroup namespace and then leaves its
# module and writes its limits; the same with CAP_SYS_ADMIN dropped at spawn (setpriv, the
# documented fix) is refused.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin hostile-escape
mi=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -n 1)
expect "cgroup2 is mounted with nsdelegate ($mi)" grep -q 'nsdelegate' <<< "$mi"
doc=$($CK doctor --root "$CG" 2> /dev/null | grep 'cgroup2 nsdelegate' || true)
expect "doctor reports nsdelegate on ($doc)" grep -q '^ok  *cgroup2 nsdelegate' <<< "$doc"

# The hostile module's script: HOSTILE SVC OUT. Each try runs in a child process that tries to
# move itself (or write, or setns); a line per try, "NAME refused: ERROR" or "NAME ESCAPED".
# What both modules' scripts begin with (sourced with their arguments SVC OUT).
cat > /lane/module-tries.sh << 'SCRIPT'
S=$1 out=$2
M=$S/subc-modules/a
: > "$out.tmp"
say() { echo "$*" >> "$out.tmp"; }
try() {
  local name=$1 err
  shift
  if err=$("$@" 2>&1); then say "$name ESCAPED"; else say "$name refused: $(tr '\n' ' ' <<< "$err")"; fi
}
SCRIPT
cat > /lane/hostile-module << 'SCRIPT'
#!/bin/bash
. /lane/module-tries.sh "$@"
# bash's echo names the errno of a failed write (dash says "I/O error" for any).
move_to() { bash -c 'echo $$ > "$1"' _ "$1/cgroup.procs"; }
say "sees $(grep '^0::' /proc/self/cgroup) uid_map $(awk '{ print $1, $2, $3 }' /proc/self/uid_map)"
try migrate-to-daemon-leaf move_to "$S/daemon"
try migrate-to-service-root move_to "$S"
try migrate-to-subc-modules move_to "$S/subc-modules"
try migrate-to-sibling-b move_to "$S/subc-modules/b"
try write-own-memory.max bash -c 'echo max > "$1/memory.max"' _ "$M"
try write-own-memory.high bash -c 'echo max > "$1/memory.high"' _ "$M"
try write-own-pids.max bash -c 'echo max > "$1/pids.max"' _ "$M"
try write-own-cpu.weight bash -c 'echo 10000 > "$1/cpu.weight"' _ "$M"
try setns-daemon-cgroupns nsenter --cgroup=/proc/$PPID/ns/cgroup true
try setns-init-cgroupns nsenter --cgroup=/proc/1/ns/cgroup true
try nested-ns-then-migrate unshare -C bash -c 'echo $$ > "$1/daemon/cgroup.procs"' _ "$S"
# What it may do inside its module: a sub-cgroup with a process moved into it, and an orphan.
mkdir "$M/sub" && say "inside: sub-cgroup made"
(bash -c 'echo $$ > "$1/cgroup.procs" && exec sleep 1001' _ "$M/sub" &)
(sleep 1002 &)
say done
mv "$out.tmp" "$out"
exec sleep infinity
SCRIPT
chmod 0755 /lane/hostile-module

# hostile_done OUT: the script finished its tries.
hostile_done() { grep -qx "done" "$1" 2> /dev/null; }

# 1. Unprivileged, under the user manager.
expect "the user's manager runs" user_up
rc=0; u systemctl --user start ck-subc.service || rc=$?
expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
expect "modules a b c run in the user service" wait_until 30 uall
UOUT=$UT/hostile.out
rm -f "$UOUT"
echo "exec /lane/hostile-module $USVC $UOUT" > "$UT/a.once"
chown lane "$UT/a.once"
sa=$(ustarts a)
kill "$(umod_pid a)"
expect "the daemon restarted a with the hostile command" wait_until 30 urestarted a "$sa"
expect "the hostile module finished its tries" wait_until 30 hostile_done "$UOUT"
cat "$UOUT" 2> /dev/null || true
A=$USVC/subc-modules/a
expect "the module sees its module as the cgroup root, its own uid mapped ($(head -n 1 "$UOUT"))" \
  grep -q "^sees 0::/ uid_map $(id -u lane) $(id -u lane) 1" "$UOUT"
tries=$(grep -cE '^[a-z.-]+ (refused|ESCAPED)' "$UOUT" || true)
escaped=$(grep ' ESCAPED$' "$UOUT" || true)
expect "11 tries, every one refused ($tries tries; escaped: ${escaped:-none})" \
  eval '[ "$tries" = 11 ] && [ -z "$escaped" ]'
expect "a's memory.max is still 64M ($(cat "$A/memory.max"))" [ "$(cat "$A/memory.max")" = 67108864 ]
expect "a's pids.max is still max ($(cat "$A/pids.max"))" [ "$(cat "$A/pids.max")" = max ]
expect "what it may do inside worked (a sub-cgroup with a process moved into it: $(tr '\n' ' ' < "$A/sub/cgroup.procs"))" \
  eval 'grep -qx "inside: sub-cgroup made" "$UOUT" && has_procs "$A/sub" 1'
hp=$(subtree_pids "$A")
n=$(wc -w <<< "$hp")
expect "its $n processes are all still in a ($hp)" [ "$n" -ge 3 ]
others=$(cat "$USVC/daemon/cgroup.procs" "$USVC/cgroup.procs" "$USVC/subc-modules/cgroup.procs" \
  "$USVC/subc-modules/b/cgroup.procs" | tr '\n' ' ')
leaked=$(for p in $hp; do grep -qw "$p" <<< "$others" && echo "$p"; done || true)
expect "none of them is in daemon/, the root, subc-modules/ or b (${leaked:-none})" [ -z "$leaked" ]
json=$(u "$CK" --json kill a --root "$USVC" --timeout 10s 2> /dev/null || true)
echo "$json"
expect "kill a (as the user): empty and removed" \
  eval '[ "$(jq -r .empty <<< "$json")" = true ] && [ "$(jq -r .removed <<< "$json")" = true ]'
# shellcheck disable=SC2086
expect "none of its $n processes survives" none_alive $hp
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
loginctl disable-linger lane || true

# 2. A root module under the system service: what CAP_SYS_ADMIN still allows.
systemctl is-active -q "$UNIT" || systemctl start "$UNIT"
SVC=$(svc_cg)
expect "modules a b c run in the system service" wait_until 30 all_running
cat > /lane/root-module << 'SCRIPT'
#!/bin/bash
. /lane/module-tries.sh "$@"
say "sees $(grep '^0::' /proc/self/cgroup)"
try migrate-to-daemon-leaf bash -c 'echo $$ > "$1/daemon/cgroup.procs"' _ "$S"
try write-own-memory.max bash -c 'echo max > "$1/memory.max"' _ "$M"
nofix() { setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin -- "$@"; }
try capless-setns-init-cgroupns nofix nsenter --cgroup=/proc/1/ns/cgroup true
try setns-then-write-own-memory.max nsenter --cgroup=/proc/1/ns/cgroup sh -c 'echo 100M > "$1/memory.max"' _ "$M"
nsenter --cgroup=/proc/1/ns/cgroup sh -c 'echo $$ > "$1/daemon/cgroup.procs" && exec sleep 1003' _ "$S" &
say "escapee $!"
say done
mv "$out.tmp" "$out"
exec sleep infinity
SCRIPT
chmod 0755 /lane/root-module
ROUT=$T/root-module.out
rm -f "$ROUT"
echo "exec /lane/root-module $SVC $ROUT" > "$T/a.once"
s=$(starts a)
kill "$(mod_pid a)"
expect "the daemon restarted a with the root module's command" wait_until 30 restarted a "$s"
expect "the root module finished its tries" wait_until 30 hostile_done "$ROUT"
cat "$ROUT" 2> /dev/null || true
expect "a root module sees 0::/ too" grep -qx 'sees 0::/' "$ROUT"
expect "root too: moving out directly is refused (nsdelegate)" grep -q '^migrate-to-daemon-leaf refused' "$ROUT"
expect "root too: writing its own memory.max directly is refused" grep -q '^write-own-memory.max refused' "$ROUT"
expect "with CAP_SYS_ADMIN dropped (setpriv), setns into PID 1's cgroup namespace is refused" \
  grep -q '^capless-setns-init-cgroupns refused' "$ROUT"
expect "with CAP_SYS_ADMIN it setns()es to PID 1's cgroup namespace and writes its own memory.max ($(cat "$SVC/subc-modules/a/memory.max"))" \
  eval 'grep -q "^setns-then-write-own-memory.max ESCAPED" "$ROUT" && [ "$(cat "$SVC/subc-modules/a/memory.max")" = 104857600 ]'
esc=$(sed -n 's/^escapee //p' "$ROUT")
in_daemon() { is_member "$SVC/daemon" "$esc"; }
expect "with CAP_SYS_ADMIN it setns()es and moves a process ($esc) into the daemon's leaf" wait_until 10 in_daemon
ap=$(subtree_pids "$SVC/subc-modules/a")
rc=0; $CK kill a --root "$SVC" > /dev/null || rc=$?
expect "kill a takes what stayed in a (exit $rc; $ap)" eval '[ "$rc" = 0 ] && none_alive $ap'
expect "... but not the escapee $esc, now in daemon/ (why a root module needs CAP_SYS_ADMIN dropped or its own user)" alive "$esc"
kill -KILL "$esc" 2> /dev/null || true
expect "the system service is active" is_active
rm -f /lane/hostile-module /lane/root-module /lane/module-tries.sh
check_end
