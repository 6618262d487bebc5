# shellcheck shell=bash
# memory.low's and memory.min's effect: protection under pressure, in a `ck-cgroup sandbox` (a
# delegated scope: every controller). The guest has no swap, so the protected memory is page
# cache, which reclaim can take: each of three modules reads its own 48 MiB of a loop device
# (over a sparse file in /dev/shm, held open by the check so that its cache stays) and keeps
# the pages charged to it. The modules' parent
# (subc-modules/) gets memory.max 208M; then a fourth module's memhog takes 96 MiB of anonymous
# memory and holds it, so the parent must reclaim about 40 MiB of cache.
#   memory-protection  the module made with `exec --memory-low 48M` and the one made with
#                      `--memory-min 48M` keep at least 90% of their 48 MiB (memory.current);
#                      the unprotected twin loses more than half of its cache
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin memory-protection
img=/dev/shm/lane-mem.img
loop_up "$img" 256M
# The device's page cache is dropped when its last opener closes it (dd's exit): this shell
# holds it open until the end.
exec {hold}< "$dev"
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
MIB=1048576
mib() { echo $(($(cat "$M/$1/memory.current") / MIB)); }
# cache_in ID SKIP FLAG...: module ID (made with FLAGs) reads 48 MiB of the device from SKIP MiB.
cache_in() {
  local id=$1 skip=$2
  shift 2
  "$CK" exec "$id" "$@" -- dd if="$dev" of=/dev/null bs=1M count=48 skip="$skip" 2> /dev/null
}
cache_in low 0 --memory-low 48M
cache_in min 64 --memory-min 48M
cache_in twin 128
expect "memory.low 48M and memory.min 48M written ($(cat "$M/low/memory.low"), $(cat "$M/min/memory.min"))" \
  eval '[ "$(cat "$M/low/memory.low")" = $((48 * MIB)) ] && [ "$(cat "$M/min/memory.min")" = $((48 * MIB)) ]'
b_low=$(mib low) b_min=$(mib min) b_twin=$(mib twin)
echo "before: low ${b_low} MiB, min ${b_min} MiB, twin ${b_twin} MiB"
expect "each module holds its 48 MiB of cache (low ${b_low}, min ${b_min}, twin ${b_twin} MiB)" \
  eval '[ "$b_low" -ge 47 ] && [ "$b_min" -ge 47 ] && [ "$b_twin" -ge 47 ]'
echo $((208 * MIB)) > "$M/memory.max"
hog_log=/tmp/lane-memhog.log
"$CK" exec hog -- "$MEMHOG" 96 hold > "$hog_log" 2>&1 &
hog=$!
hog_done() { grep -q 'touched all' "$hog_log"; }
rc=0; wait_until 60 hog_done || rc=$?
expect "the hog took and holds 96 MiB ($(tail -n 1 "$hog_log" 2> /dev/null))" [ "$rc" = 0 ]
sleep 0.5
a_low=$(mib low) a_min=$(mib min) a_twin=$(mib twin) a_hog=$(mib hog) a_all=$(($(cat "$M/memory.current") / MIB))
echo "after: low ${a_low} MiB, min ${a_min} MiB, twin ${a_twin} MiB, hog ${a_hog} MiB, parent ${a_all} MiB"
cat "$M"/{low,min,twin}/memory.events
expect "the --memory-low module kept at least 90% of 48 MiB (${b_low} -> ${a_low} MiB)" [ "$a_low" -ge 44 ]
expect "the --memory-min module kept at least 90% of 48 MiB (${b_min} -> ${a_min} MiB)" [ "$a_min" -ge 44 ]
expect "the unprotected twin lost more than half (${b_twin} -> ${a_twin} MiB)" [ $((a_twin * 2)) -lt "$b_twin" ]
expect "the hog was not OOM-killed (pid $hog)" alive "$hog"
note "parent memory.max 208 MiB, current ${a_all} MiB, hog ${a_hog} MiB"
kill "$hog" 2> /dev/null || true
sandbox_down
exec {hold}<&-
losetup -d "$dev"
rm -f "$img"
check_end
