# shellcheck shell=bash
# ExecStartPre=ck-cgroup prune --kill: it runs in systemd's .control leaf of the service, takes
# the service's cgroup as the root, and kills what a previous daemon left before the new daemon
# starts.
#   prune-crash     the daemon alone is SIGKILLed (systemctl kill --kill-whom=main); Restart=
#                   starts it again; no module of the old daemon runs beside the new one (the
#                   journal says whether systemd's stop or prune killed them)
#   prune-leftover  a module tree left in the service's cgroup while the unit was stopped (what a
#                   daemon that did not stop cleanly leaves): the next start's prune kills and
#                   removes it, before the new daemon's init
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# For the two starts below, a drop-in adds a second control process after prune that logs its own
# cgroup (the one prune ran in): systemd's .control leaf, or the service's cgroup itself.
mkdir -p /run/systemd/system/ck-subc.service.d
cat > /run/systemd/system/ck-subc.service.d/lane.conf << 'CONF'
[Service]
ExecStartPre=/bin/sh -c 'echo "lane: control processes run in $(cat /proc/self/cgroup)"'
CONF
systemctl daemon-reload
trap 'rm -rf /run/systemd/system/ck-subc.service.d; systemctl daemon-reload' EXIT
control_leaf() {  # control_leaf JOURNAL: where the start's control processes ran, checked
  local ctl
  ctl=$(grep -o 'lane: control processes run in .*' <<< "$1" | head -n 1 | sed 's/.* in 0:://')
  case "$ctl" in
    "$cgpath/.control") echo "in the .control leaf ($ctl)" ;;
    "$cgpath") echo "in the service's own cgroup ($ctl), not a .control leaf" ;;
    *) echo "elsewhere: ${ctl:-no line}"; return 1 ;;
  esac
}
cgpath=$(systemctl show -P ControlGroup "$UNIT")

check_begin prune-crash
SVC=$(svc_cg)
mp=$(main_pid)
old=$(subtree_pids "$SVC/subc-modules")
echo "daemon $mp, module processes: $old"
t0=$(date +%s)
systemctl kill -s KILL --kill-whom=main "$UNIT"
new_daemon() { local p; p=$(main_pid); [ "$p" != 0 ] && [ "$p" != "$mp" ] && is_active && all_running; }
expect "Restart= started a new daemon with modules a b c" wait_until 60 new_daemon
# shellcheck disable=SC2086
expect "no process of the old modules survives ($old)" none_alive $old
journal=$(journal_since "$t0")
echo "$journal"
pre=$(systemctl show -P ExecStartPre "$UNIT")
expect "ExecStartPre ran again and exited 0" grep -q 'code=exited ; status=0[ /]' <<< "$pre"
by_prune=$(grep -E 'ck-subc\[[0-9]+\]: .*(killed|removed)' <<< "$journal" | sed 's/^[^]]*] //' | tr '\n' ' ' || true)
by_systemd=$(grep -E 'Killing process|Main process exited|Failed with result' <<< "$journal" | sed 's/^[^]]*] //' | tr '\n' ' ' || true)
where=$(control_leaf "$journal") || true
expect "prune ran in the service's cgroup or its .control leaf: $where" control_leaf "$journal"
note "prune said: ${by_prune:-nothing killed}; systemd said: ${by_systemd:-nothing}"
check_end

check_begin prune-leftover
SVC=$(svc_cg)
systemctl stop "$UNIT"
expect "the service's cgroup is gone after stop" not_exists "$SVC"
# A module left behind: made by hand where the daemon makes modules.
mkdir -p "$SVC/subc-modules/stray"
sleep 1003 &
stray=$!
echo "$stray" > "$SVC/subc-modules/stray/cgroup.procs"
disown "$stray" 2> /dev/null || true
echo "stray module: pid $stray in $(cat /proc/$stray/cgroup)"
t0=$(date +%s)
rc=0; systemctl start "$UNIT" || rc=$?
expect "systemctl start exit 0 ($rc)" [ "$rc" = 0 ]
expect "modules a b c run" wait_until 30 all_running
expect "the stray module's process $stray is dead" wait_until 5 eval '! alive '"$stray"
expect "the stray module's directory is gone" not_exists "$SVC/subc-modules/stray"
journal=$(journal_since "$t0")
echo "$journal"
line=$(grep -E 'ck-subc\[[0-9]+\]: stray' <<< "$journal" | sed 's/^[^]]*] //' || true)
expect "the journal shows prune killed it: ${line:-no line}" [ -n "$line" ]
# Order: prune's line comes before the daemon's init.
pl=$(grep -n -E 'ck-subc\[[0-9]+\]: stray' <<< "$journal" | head -n 1 | cut -d: -f1)
il=$(grep -n 'init done' <<< "$journal" | head -n 1 | cut -d: -f1)
expect "prune (journal line ${pl:-?}) ran before the daemon's init (line ${il:-?})" \
  eval '[ -n "$pl" ] && [ -n "$il" ] && [ "$pl" -lt "$il" ]'
where=$(control_leaf "$journal") || true
expect "prune ran in the service's cgroup or its .control leaf: $where" control_leaf "$journal"
warn=$(grep -i 'left-over' <<< "$journal" | sed 's/^[^]]*] //' | head -n 1 || true)
note "systemd: ${warn:-no left-over warning}"
check_end
