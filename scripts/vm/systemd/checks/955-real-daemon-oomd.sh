# shellcheck shell=bash
# real-daemon-oomd: oomd-hoard with the real daemon (subc-daemon 0.39.3 under the installed unit,
# lib-systemd.sh: real_daemon_up), between 95-real-daemon.sh (which leaves it running) and
# 96-real-daemon-end.sh. hog's `ck-cgroup run` gets --memory-swap-max 256M for this check
# (REAL_HOG_SWAP_MAX: a new subc.jsonc and a restart of the service), swap is on (zram), and
# systemd-oomd monitors the service (ManagedOOMMemoryPressure=kill, set-property --runtime);
# hog's next command is `memchurn 128` past its memory.max 64M. oomd must kill hog's module alone
# (its journal names subc-modules/hog; hog's user.oomd_ooms; no kernel OOM kill), the service
# stays active with the daemon's pid, orph and deaf keep theirs, the daemon restarts hog, and
# ck-cgroup says systemd-oomd killed it: run's stop report (in the daemon's capture of hog's
# stderr) and watch. Then hog's usual subc.jsonc is back.
# check-timeout: 400
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin real-daemon-oomd
if [ ! -x "$REAL" ]; then
  expect "the real daemon was built ($(cat /lane/real-daemon.why 2> /dev/null || echo "no $REAL"))" false
  check_end
  exit 0
fi
s0=$(date +%s.%N)
expect "swap on zram" swap_up
echo "swaps: $(swaps)"
REAL_HOG_SWAP_MAX=256M real_daemon_up
cgpath=${SVC#"$CG"}
H=$SVC/subc-modules/hog
expect "the real daemon runs hog orph deaf ($(main_pid): $(tr '\0' ' ' < "/proc/$(main_pid)/cmdline"))" real_running
expect "hog may swap: memory.swap.max 256M ($(cat "$H/memory.swap.max")), memory.max 64M ($(cat "$H/memory.max"))" \
  eval '[ "$(cat "$H/memory.swap.max")" = $((256 << 20)) ] && [ "$(cat "$H/memory.max")" = $((64 << 20)) ]'
expect "systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION" oomd_up
t0=$(date +%s)
"$CK" watch --root "$SVC" > /tmp/roomd-watch.out 2> /tmp/roomd-watch.err &
watch_pid=$!
oomd_monitor "$UNIT"
expect "systemd-oomd monitors $cgpath for memory pressure (oomctl dump)" wait_until 30 oomd_monitored "$cgpath"
mp=$(main_pid) po=$(mod_pid orph) pd=$(mod_pid deaf) sh0=$(starts hog)
hog_ooms() { dmesg | grep -c 'oom_memcg=.*/subc-modules/hog,' || true; }
k0=$(hog_ooms)
echo "before: daemon $mp, orph $po, deaf $pd, hog started $sh0 times, kernel OOM kills of hog in dmesg $k0"
pressure_sampler "$SVC" "$H" "$SVC/daemon" > /tmp/roomd-pressure.out &
sampler=$!
# The daemon's capture of hog's stderr (<run dir>/logs/hog.stderr.log), and how much of it is
# older than this check (95's kernel OOM kill is reported there too).
cap=$(find "$REAL_HOME" -name hog.stderr.log 2> /dev/null | head -n 1)
c0=$(wc -l < "$cap" 2> /dev/null || echo 0)
echo "exec $MEMCHURN 128" > "$T/hog.once"
kill "$(mod_pid hog)"  # the daemon restarts hog, whose next command is the hoard
expect "the daemon restarted hog with the hoard" wait_until 30 restarted hog "$sh0"
s1=$(date +%s.%N)
expect "hog's hoard died and the daemon restarted hog" wait_until 90 restarted hog $((sh0 + 1))
s2=$(date +%s.%N)
kill "$sampler" 2> /dev/null || true
cat /tmp/roomd-pressure.out
ojournal=$(oomd_journal_since "$t0")
echo "$ojournal" | grep -v '^\[.*\]: *\(Memory\|Pressure\|Current\|Pgscan\|Last\)' || true
killed=$(grep -m1 'Killed ' <<< "$ojournal" | sed 's/^[^]]*] //' || true)
expect "systemd-oomd's journal names subc-modules/hog (${killed:-no Killed line})" \
  grep -q "Killed $cgpath/subc-modules/hog due to memory pressure" <<< "$ojournal"
# (hog's memory.events is its new directory's; the kernel's kills are in dmesg too)
expect "the kernel's OOM killer did not kill hog (its lines for subc-modules/hog in dmesg: $k0 before, $(hog_ooms) after)" \
  [ "$(hog_ooms)" = "$k0" ]
expect "the service is active ($(sctl is-active "$UNIT"))" is_active
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
expect "orph kept its pid ($po)" eval '[ "$(mod_pid orph)" = "$po" ] && alive "$po"'
expect "deaf kept its pid ($pd)" eval '[ "$(mod_pid deaf)" = "$pd" ] && alive "$pd"'
for d in daemon subc-modules/orph subc-modules/deaf; do
  expect "oomd killed nothing in $d (user.oomd_ooms: $(xattr "$SVC/$d" user.oomd_ooms))" \
    [ -z "$(xattr "$SVC/$d" user.oomd_ooms)" ]
done
# `run` removes the module it ran when its command ends, the killed directory and its
# user.oomd_* with it (status of the new hog counts nothing); what it read before the rmdir is
# its stop report, a line on its stderr, which the real daemon keeps in its capture of hog's
# stderr.
[ -n "$cap" ] || cap=$(find "$REAL_HOME" -name hog.stderr.log 2> /dev/null | head -n 1)
echo "hog's stderr since the check began, as the daemon captured it (${cap:-no capture file}):"
tail -n +$((c0 + 1)) "$cap" 2> /dev/null || true
said=$(tail -n +$((c0 + 1)) "$cap" 2> /dev/null | grep -m1 'module hog: killed by' || true)
expect "run's report in the daemon's capture of hog's stderr says systemd-oomd killed it (${said:-nothing})" \
  grep -q 'ck-cgroup: module hog: killed by systemd-oomd' <<< "$said"
kill "$watch_pid" 2> /dev/null || true
wait "$watch_pid" 2> /dev/null || true
grep -v '"memory_max"' /tmp/roomd-watch.out || true
cat /tmp/roomd-watch.err
expect "watch reported hog's oomd_kill" \
  jq_lines_any /tmp/roomd-watch.out '.module == "hog" and .event == "oomd_kill" and .value >= 1'
# run removes the killed directory within milliseconds: watch saw hog's emptied 16 ms before its
# removed in one run and not at all in another (removed came first). Where it saw one after the
# kill, that one must name systemd-oomd.
emptied_after_kill='[.[] | select(.module == "hog")] | (map(.event) | index("oomd_kill")) as $i
  | [.[$i + 1:][] | select(.event == "emptied")] | all(.killed_by // [] | index("systemd-oomd"))'
expect "watch's emptied event for hog after the kill, if it saw one before run removed it, says systemd-oomd ($(jq -c -s '[.[] | select(.module == "hog" and .event == "emptied")] | map(.killed_by)' /tmp/roomd-watch.out 2> /dev/null | tr -d '\n'))" \
  jq -e -s "$emptied_after_kill" /tmp/roomd-watch.out
journal=$(journal_since "$t0")
echo "$journal" | grep -i -E 'hog|crash' | tail -n 6 || true
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
oomd_unmonitor "$UNIT"
real_daemon_up  # hog's usual subc.jsonc (no swap) and a restart
expect "hog's usual limits are back (memory.swap.max $(cat "$H/memory.swap.max" 2> /dev/null))" \
  [ "$(cat "$H/memory.swap.max" 2> /dev/null)" = 0 ]
expect "swap off" swap_down
note "hog restarted $(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1f", b - a }') s after its hoard started (limit $OOMD_LIMIT, duration $OOMD_DURATION); the check took $(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
check_end
