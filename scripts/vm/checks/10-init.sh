# init on a fresh service-like root: every controller the modules need is enabled, none missing,
# and the stand-in daemon is moved into daemon/.
set -euo pipefail
. /lane/lib.sh

check_begin init
top=$(cat "$CG/cgroup.subtree_control")
expect "top-level subtree_control has memory pids cpu io ($top)" has_words "$top" memory pids cpu io
service_new svc
rc=0
out=$("$CK" init --json) || rc=$?
echo "init --json: $out"
enabled=$(json_array enabled "$out")
missing=$(json_array missing "$out")
expect "init exits 0 (rc=$rc)" [ "$rc" = 0 ]
expect "enabled: $enabled" has_words "$enabled" memory pids cpu io
expect "missing: [$missing]" json_has "$out" 'missing:[]'
expect "stand-in daemon $DAEMON_PID moved into daemon/" is_member "$SVC/daemon" "$DAEMON_PID"
sub=$(cat "$MODS/cgroup.subtree_control")
expect "subc-modules/ subtree_control: $sub" has_words "$sub" memory pids cpu io
rc=0
again=$("$CK" init --json) || rc=$?
expect "init again exits 0 and creates nothing (rc=$rc)" \
  eval '[ "$rc" = 0 ] && json_has "$again" "created:[]"'
check_end
service_end
