# shellcheck shell=bash
# The systemd backend where the service is not delegated (the incident host's Delegate=no): a
# drop-in turns delegation off and sets CK_CGROUP_BACKEND=systemd, so the stand-in daemon's
# `ck-cgroup exec` asks systemd for a scope per module (subc-module-ID.scope in
# module-ID.slice, the limits as unit properties) and its `ck-cgroup kill` has systemd kill it.
# Replay 1 (the hoard) and replay 2 (the orphans) then run against those scopes, and
# `systemctl stop` leaves no scope and no process.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin backend-systemd
systemctl stop "$UNIT" 2> /dev/null || true
rm -rf "$T"
dropin=/run/systemd/system/$UNIT.d/backend-systemd.conf
mkdir -p "$(dirname "$dropin")"
# --no-oom-group: the scopes get OOMPolicy=continue, so an OOM kill takes the hog and the module
# lives on with its counters (with systemd's default, stop, the scope is stopped and its cgroup
# and counters go with it; the first run of this check showed that).
# The package's ExecStartPre=ck-cgroup prune --kill stays: with the variable set it prunes the
# module scopes PartOf= this service.
printf '[Service]\nDelegate=no\nEnvironment=CK_CGROUP_BACKEND=systemd CK_SUBC_EXEC_FLAGS=--no-oom-group\n' > "$dropin"
cleanup() { systemctl stop "$UNIT" 2> /dev/null || true; rm -f "$dropin"; systemctl daemon-reload; }
trap cleanup EXIT
systemctl daemon-reload
MS=$CG/module.slice
scope() { echo "$MS/module-$1.slice/subc-module-$1.scope"; }
srunning() {  # the module's main process runs in its scope
  local pid
  pid=$(mod_pid "$1")
  [ -n "$pid" ] && alive "$pid" && grep -qx "$pid" "$(scope "$1")/cgroup.procs" 2> /dev/null
}
sall() { srunning a && srunning b && srunning c; }
srestarted() { [ "$(starts "$1")" -gt "$2" ] && srunning "$1"; }
rc=0; systemctl start "$UNIT" || rc=$?
expect "systemctl start with Delegate=no exit 0 ($rc)" [ "$rc" = 0 ]
expect "Delegate=no is in force ($(systemctl show -P Delegate "$UNIT"))" [ "$(systemctl show -P Delegate "$UNIT")" = no ]
expect "modules a b c run, each in its scope" wait_until 30 sall
SVC=$(svc_cg) mp=$(main_pid)
expect "the service's cgroup holds only the daemon ($(subtree_pids "$SVC"); dirs: $(subtree_dirs "$SVC"))" \
  eval '[ "$(subtree_pids "$SVC")" = "$mp " ] && [ "$(subtree_dirs "$SVC")" = ". " ]'
for id in a b c; do
  expect "subc-module-$id.scope: memory.max 64M from the exec flags ($(cat "$(scope "$id")/memory.max"))" \
    [ "$(cat "$(scope "$id")/memory.max")" = 67108864 ]
  expect "subc-module-$id.scope has OOMPolicy=continue ($(systemctl show -P OOMPolicy "subc-module-$id.scope"))" \
    [ "$(systemctl show -P OOMPolicy "subc-module-$id.scope")" = continue ]
  expect "subc-module-$id.scope is PartOf the service ($(systemctl show -P PartOf "subc-module-$id.scope")), TimeoutStopSec 10s ($(systemctl show -P TimeoutStopUSec "subc-module-$id.scope"))" \
    eval '[ "$(systemctl show -P PartOf "subc-module-$id.scope")" = "$UNIT" ] && [ "$(systemctl show -P TimeoutStopUSec "subc-module-$id.scope")" = 10s ]'

  expect "the daemon ($mp) is the parent of $id's main process ($(mod_pid "$id"))" \
    [ "$(ppid_of "$(mod_pid "$id")")" = "$mp" ]
done
"$CK" list --backend systemd
"$CK" status --backend systemd
rc=0; doc=$("$CK" doctor --backend systemd --unit "$UNIT" 2>&1) || rc=$?
echo "$doc"
expect "doctor --backend systemd on the undelegated service: exit 0 ($rc; $(grep -E '^(ok|FAIL) +(Delegate=|systemd backend|controllers for)' <<< "$doc" | tr -s ' ' | tr '\n' ' '))" \
  eval '[ "$rc" = 0 ] && grep -q "^ok *Delegate=: no: not needed" <<< "$doc" && grep -q "^ok *controllers for module scopes" <<< "$doc"'

# Replay 1, the hoard: a restarts with a command whose child allocates past memory.max; the
# kernel OOM-kills that child, inside a's scope only.
t0=$(date +%s)
pb=$(mod_pid b) pc=$(mod_pid c) sa=$(starts a)
echo "$MEMHOG 256; exec sleep infinity" > "$T/a.once"
kill "$(mod_pid a)"
expect "the daemon restarted a in a new scope" wait_until 30 srestarted a "$sa"
pa=$(mod_pid a)
expect "a's hog is OOM-killed (memory.events oom_kill >= 1)" wait_until 60 oom_killed "$(scope a)"
json=$("$CK" status --backend systemd --json a)
echo "$json"
oom=$(jq -r '.modules[0].memory_events.value.oom_kill // "null"' <<< "$json")
layout=$(jq -r '.modules[0].layout' <<< "$json")
expect "ck-cgroup status --backend systemd --json a: oom_kill >= 1 ($oom), layout $layout" \
  eval '[ "$oom" != null ] && [ "$oom" -ge 1 ] && [ "$layout" = systemd ]'
expect "the service is active ($(systemctl is-active "$UNIT"))" is_active
expect "a's main process ($pa) outlived its hog's OOM kill in the same scope" srunning a
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
expect "b and c kept their pids ($pb $pc)" \
  eval '[ "$(mod_pid b)" = "$pb" ] && [ "$(mod_pid c)" = "$pc" ] && alive "$pb" && alive "$pc"'
for id in b c; do
  expect "$id had no OOM kill ($(keyed "$(scope "$id")/memory.events" oom_kill))" \
    [ "$(keyed "$(scope "$id")/memory.events" oom_kill)" = 0 ]
done
journal=$(journal_since "$t0")
expect "the journal holds the daemon's lines" has_daemon_lines "$journal"
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited|Scheduled restart' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]

# Replay 2, the orphans: b's command leaves a grandchild reparented away from b's main process;
# each restart has the daemon run `ck-cgroup kill b --grace 1s` (systemd's KillUnit) first. The
# grandchild ignores SIGTERM, so only the SIGKILL step removes it (a build with
# CK_MUTATION=no-kill fails here: see docs/guest-lane.md).
echo '( trap "" TERM; sleep 1001 & ); exec sleep infinity' > "$T/b.cmd"
restart_b() {
  local s
  s=$(starts b)
  kill "$(mod_pid b)"
  wait_until 30 srestarted b "$s" && wait_until 10 has_procs "$(scope b)" 2
}
expect "b restarted with the orphan-making command, 2 processes" restart_b
orphan=$(grep -vx "$(mod_pid b)" "$(scope b)/cgroup.procs" | head -n 1 || true)
expect "the grandchild ${orphan:-(none)} is reparented away from b's main process (ppid $(ppid_of "$orphan"))" \
  eval '[ -n "$orphan" ] && [ "$(ppid_of "$orphan")" != "$(mod_pid b)" ]'
s0=$(subtree_pids "$SVC")
twenty_restarts "under module.slice" "$MS" "$(scope b)/cgroup.procs" restart_b
expect "the service's cgroup still holds only the daemon" [ "$(subtree_pids "$SVC")" = "$s0" ]
left=$(systemctl list-units --all --no-legend 'subc-module-*.scope' | wc -l)
expect "3 module scopes loaded ($left)" [ "$left" = 3 ]

# The daemon dies alone (SIGKILL), without draining: Restart= starts the service again. The old
# scopes are outside the service's cgroup, so KillMode= does not reach them, and a restart after
# a crash is not a job that PartOf= propagates (the first run of this check: they survived, and
# the new daemon's `exec`s met UnitExists). ExecStartPre's `prune --kill` stops them (b's orphan
# ignores SIGTERM) before the new daemon starts.
old_pids=$(subtree_pids "$MS") omp=$(main_pid)
systemctl kill -s KILL --kill-whom=main "$UNIT"
new_daemon() { local p; p=$(main_pid); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$omp" ] && sall; }
expect "after the daemon's SIGKILL, Restart= started a new daemon with a b c in scopes" wait_until 60 new_daemon
sleep 0.2
left=$(for p in $old_pids; do alive "$p" && echo "$p $(tr '\0' ' ' < "/proc/$p/cmdline")"; done || true)
expect "no process of the old modules survives ($(wc -w <<< "$old_pids") checked; alive: ${left:-none})" [ -z "$left" ]
pruned=$(journal_since "$t0" | grep -cE 'subc-module-.*: [0-9]+ process(es)?: killed and removed' || true)
expect "ExecStartPre's prune killed the old scopes ($pruned lines in the journal)" [ "$pruned" -ge 3 ]
journal_since "$t0" | grep -E 'subc-module-.*(Stopp|Deactivated|Failed)|Scheduled restart|ck-subc.service: (Main|Failed|Consumed)' | tail -n 12 || true

# Stop: the daemon drains (kill --backend systemd for each module); PartOf= stops what is left.
all=$(subtree_pids "$MS")
rc=0; systemctl stop "$UNIT" || rc=$?
expect "systemctl stop exit 0 ($rc)" [ "$rc" = 0 ]
left=$(for p in $all; do alive "$p" && echo "$p"; done || true)
expect "no module process survives the stop (${left:-none})" [ -z "$left" ]
units=$(systemctl list-units --all --no-legend 'subc-module-*.scope' 'module-*.slice' | awk '{print $1}' | tr '\n' ' ')
expect "no module scope or slice is left (${units:-none})" [ -z "$units" ]
expect "nothing is left under module.slice ($(subtree_dirs "$MS" 2> /dev/null))" \
  eval '[ ! -d "$MS" ] || [ "$(subtree_dirs "$MS")" = ". " ]'
journal_since "$t0" | tail -n 12 || true

# What the backend costs a spawn, in one run against baselines (TCG guest: compare ratios, not
# milliseconds): ten starts each of /bin/true, `ck-cgroup exec --backend systemd tN -- true`
# (a scope per start) and `systemd-run --scope --collect true`.
per_start() {  # per_start CMD...: mean µs of ten runs, "?" when a run failed; "{i}" in CMD becomes the run's number
  local t0 t1 i
  t0=$(date +%s%N)
  for i in $(seq 10); do "${@//\{i\}/$i}" > /dev/null 2>&1 || { echo '?'; return; }; done
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 10000))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && b > 0) printf "%.1fx", a / b; else printf "?" }'; }
ms() { awk -v a="$1" 'BEGIN { if (a ~ /^[0-9]+$/) printf "%.1f ms", a / 1000; else printf "? (a run failed)" }'; }
b_true=$(per_start true)
b_ck=$(per_start "$CK" exec --backend systemd 't{i}' -- true)
b_run=$(per_start systemd-run --quiet --scope --collect true)
note "spawn cost: /bin/true $(ms "$b_true"), exec --backend systemd $(ms "$b_ck") ($(ratio "$b_ck" "$b_true")), systemd-run --scope $(ms "$b_run") ($(ratio "$b_run" "$b_true"))"
expect "every benchmark start ran" eval '[ "$b_true" != "?" ] && [ "$b_ck" != "?" ] && [ "$b_run" != "?" ]'
left=$(systemctl list-units --all --no-legend 'subc-module-t*.scope' | wc -l)
expect "the benchmark's scopes ended with their command ($left left)" wait_until 10 eval '[ "$(systemctl list-units --all --no-legend "subc-module-t*.scope" | wc -l)" = 0 ]'
check_end
