# shellcheck shell=bash
# The installed unit starts the daemon: `make install` put the rendered units where systemd reads
# them, ExecStartPre=ck-cgroup prune --kill ran and succeeded, and `ck-cgroup init` (run by the
# daemon under the unit's hardening block) made daemon/ and subc-modules/ with the controllers.
# Leaves ck-subc.service running for the next checks.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin service-start
unit=$(systemctl show -P FragmentPath "$UNIT")
echo "unit file: $unit"; cat "$unit"
expect "the unit systemd loads is the one make install put in /lib/systemd/system ($unit)" \
  [ "$(readlink -f "$unit")" = "$(readlink -f /lib/systemd/system/ck-subc.service)" ]
expect "ExecStart is the installed daemon, started in daemon/ by the helper's init" \
  grep -qx 'ExecStart=/usr/bin/ck-cgroup init -- /usr/bin/ck-subc' "$unit"
expect "ExecStartPre is the installed helper's prune --kill --if-laid-out" \
  grep -qx 'ExecStartPre=/usr/bin/ck-cgroup prune --kill --if-laid-out' "$unit"
t0=$(date +%s)
rc=0; systemctl start "$UNIT" || rc=$?
expect "systemctl start exit 0 ($rc)" [ "$rc" = 0 ]
expect "modules a b c run" wait_until 20 all_running
SVC=$(svc_cg)
echo "service cgroup: $SVC"
pre=$(systemctl show -P ExecStartPre "$UNIT")
echo "ExecStartPre: $pre"
expect "ExecStartPre ran and exited 0 ($(echo "$pre" | grep -o 'code=[^ ;]* ; status=[^ ;]*'))" \
  grep -q 'code=exited ; status=0[ /]' <<< "$pre"
mp=$(main_pid)
expect "the daemon (pid $mp) is in daemon/ ($(cat "/proc/$mp/cgroup"))" is_member "$SVC/daemon" "$mp"
expect "the service's own cgroup has no process ($(count_procs "$SVC"))" has_procs "$SVC" 0
sc=$(cat "$SVC/subc-modules/cgroup.subtree_control")
expect "subc-modules/ has memory pids cpu io ($sc)" has_words "$sc" memory pids cpu io
for id in a b c; do
  expect "module $id: memory.max 64M ($(cat "$SVC/subc-modules/$id/memory.max"))" \
    [ "$(cat "$SVC/subc-modules/$id/memory.max")" = 67108864 ]
done
hard=$(systemctl show -p NoNewPrivileges -p LockPersonality -p RestrictRealtime -p RestrictSUIDSGID \
  -p Delegate -p DelegateControllers -p OOMPolicy -p KillMode -p TimeoutStopUSec "$UNIT" | tr '\n' ' ')
echo "settings: $hard"
expect "the hardening block is in force ($hard)" \
  has_words "$hard" NoNewPrivileges=yes LockPersonality=yes RestrictRealtime=yes RestrictSUIDSGID=yes
expect "Delegate=yes, OOMPolicy=continue, KillMode=mixed" \
  has_words "$hard" Delegate=yes OOMPolicy=continue KillMode=mixed
journal_since "$t0" || true
check_end

check_begin doctor
rc=0
out=$("$CK" doctor --unit ck-subc.service --root "$SVC" 2>&1) || rc=$?
echo "$out"
expect "doctor exit 0 ($rc)" [ "$rc" = 0 ]
expect "doctor read the unit's settings from systemd ($(grep -m1 'Delegate=' <<< "$out" | tr -s ' '))" \
  grep -q '^ok *Delegate=: yes' <<< "$out"
note "$(echo "$out" | tr -s ' ' | tr '\n' '|')"
check_end
