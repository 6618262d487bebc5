# shellcheck shell=dash
# init on a fresh service-like root: every controller the modules need is enabled, none missing,
# and the stand-in daemon is moved into daemon/.
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

check_begin init
top=$(cat "$CG/cgroup.subtree_control")
expect "top-level subtree_control has memory pids cpu io ($top)" has_words "$top" memory pids cpu io
service_new svc
rc=0
out=$("$CK" init --json) || rc=$?
echo "init --json: $out"
enabled=$(jq_get "$out" '.enabled | join(" ")' || true)
missing=$(jq_get "$out" '.missing | join(" ")' || true)
expect "init exits 0 (rc=$rc)" [ "$rc" = 0 ]
expect "enabled: $enabled" has_words "$enabled" memory pids cpu io
expect "missing: [$missing]" jq_is "$out" '.missing == []'
expect "stand-in daemon $DAEMON_PID moved into daemon/" is_member "$SVC/daemon" "$DAEMON_PID"
sub=$(cat "$MODS/cgroup.subtree_control")
expect "subc-modules/ subtree_control: $sub" has_words "$sub" memory pids cpu io
rc=0
again=$("$CK" init --json) || rc=$?
created=$(jq_get "$again" '.created | join(" ")' || echo "?")
expect "init again exits 0 (rc=$rc)" [ "$rc" = 0 ]
expect "init again creates nothing (created: [$created])" jq_is "$again" '.created == []'
check_end
service_end
