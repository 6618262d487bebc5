# shellcheck shell=bash
# doctor on a host where the service is not set up for ck-cgroup tells the operator exactly what
# to change, and its words are enough: ck-subc.service with a drop-in that undoes the package's
# settings (Delegate=no, OOMPolicy=stop, KillMode=control-group, TimeoutStopSec=90); doctor
# exits 1 with a failing line and a drop-in as the fix for each; the fixes' setting lines,
# pasted as they are into one more drop-in, make doctor exit 0 after a restart.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin doctor-fix
systemctl stop "$UNIT" 2> /dev/null || true
rm -rf "$T"
d=/run/systemd/system/$UNIT.d
mkdir -p "$d"
printf '[Service]\nDelegate=no\nOOMPolicy=stop\nKillMode=control-group\nTimeoutStopSec=90\n' > "$d/50-undelegated.conf"
cleanup() { systemctl stop "$UNIT" 2> /dev/null || true; rm -f "$d/50-undelegated.conf" "$d/60-doctor-fix.conf"; systemctl daemon-reload; }
trap cleanup EXIT
systemctl daemon-reload
rc=0; systemctl start "$UNIT" || rc=$?
expect "the undelegated service starts ($rc)" [ "$rc" = 0 ]
rc=0; json=$("$CK" --json doctor --unit "$UNIT" --root "$(svc_cg)") || rc=$?
echo "$json" | jq .
expect "doctor exit 1 on the undelegated service ($rc)" [ "$rc" = 1 ]
for name in Delegate= OOMPolicy= KillMode= TimeoutStopSec=; do
  o=$(jq -r --arg n "$name" '.checks[] | select(.name == $n) | .outcome' <<< "$json")
  f=$(jq -r --arg n "$name" '.checks[] | select(.name == $n) | .fix // ""' <<< "$json")
  expect "$name: $o, fix: $(tr '\n' ' ' <<< "$f")" eval '[ "$o" = fail ] && grep -q "^\[Service\]$" <<< "$f"'
done
fix=$(jq -r '.checks[] | select(.outcome == "fail") | .fix // empty' <<< "$json")
expect "the Delegate= fix names the systemd backend as the alternative" grep -q -- '--backend systemd' <<< "$fix"
{ echo '[Service]'; grep -E '^[A-Z][A-Za-z]*=' <<< "$fix"; } > "$d/60-doctor-fix.conf"
echo "pasted:"; cat "$d/60-doctor-fix.conf"
systemctl daemon-reload
rc=0; systemctl restart "$UNIT" || rc=$?
expect "restart with doctor's fixes ($rc)" [ "$rc" = 0 ]
expect "modules a b c run" wait_until 20 all_running
rc=0; out=$("$CK" doctor --unit "$UNIT" --root "$(svc_cg)" 2>&1) || rc=$?
echo "$out"
expect "doctor exit 0 after the fixes ($rc)" [ "$rc" = 0 ]
check_end
