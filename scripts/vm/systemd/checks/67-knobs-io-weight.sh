# shellcheck shell=bash
# io.weight's effect, in a `ck-cgroup sandbox` (a delegated scope: every controller), on a loop
# device over a sparse file in /dev/shm. The guest's kernel has no IO scheduler that weighs
# (BFQ is a module the lane does not load) but has io.cost (CONFIG_BLK_CGROUP_IOCOST=y), which
# weighs only where it is enabled: the check enables it for the loop device at the hierarchy's
# root with a user model of a slow disk (4 MiB/s of writes, vrate pinned at 100%) and disables
# it at the end.
#   io-weight  two modules made with `exec --io-weight 400` and `--io-weight 100` write to the
#              device at the same time (dd oflag=direct); from when both have written 2 MiB (both
#              run, and io.cost weighs them), in a window in which the first writes 12 MiB, the
#              second writes at most half as much (io.stat wbytes, the readings' differences).
#              Up to three windows, one after the other; the check passes on the first that
#              shows it, and the detail names each (their MiB/s too). With the weights equal
#              the second writes about as much as the first in every window. Why windows: on a
#              loaded host (TCG) io.cost did not hold the loop device to its model's 4 MiB/s
#              (7 MiB/s were written), and a single count from the start found the weight-100
#              module's share at 40% three times; the start is left out (one dd may run alone
#              for a moment, before the other starts).
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin io-weight
img=/dev/shm/lane-iow.img
loop_up "$img" 96M
echo "$majmin ctrl=user model=linear rbps=4194304 rseqiops=1000 rrandiops=1000 wbps=4194304 wseqiops=1000 wrandiops=1000" \
  > "$CG/io.cost.model"
echo "$majmin enable=1 ctrl=user rpct=0 rlat=0 wpct=0 wlat=0 min=100 max=100" > "$CG/io.cost.qos"
echo "io.cost.qos: $(grep "^$majmin" "$CG/io.cost.qos")"
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
wbytes() { awk -v d="$majmin" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) print substr($i, 8) }' "$M/$1/io.stat" 2> /dev/null; }
"$CK" exec heavy --io-weight 400 -- dd if=/dev/zero of="$dev" bs=256K count=192 oflag=direct 2> /dev/null &
heavy=$!
"$CK" exec light --io-weight 100 -- dd if=/dev/zero of="$dev" bs=256K count=192 seek=192 oflag=direct 2> /dev/null &
light=$!
weights() { grep -qx "default 400" "$M/heavy/io.weight" && grep -qx "default 100" "$M/light/io.weight"; } 2> /dev/null
rc=0; wait_until 10 weights || rc=$?
expect "io.weight is default 400 and default 100 ($(head -n 1 "$M/heavy/io.weight" 2> /dev/null), $(head -n 1 "$M/light/io.weight" 2> /dev/null))" [ "$rc" = 0 ]
mib=1048576
both_two() { [ "$(wbytes heavy || echo 0)" -ge $((2 * mib)) ] && [ "$(wbytes light || echo 0)" -ge $((2 * mib)) ]; } 2> /dev/null
expect "both modules wrote 2 MiB within 60 s" wait_until 60 both_two
mibs() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
# window: until heavy has written 12 MiB more; sets h, l (the bytes each wrote in it) and ms; 1 if
# heavy did not within 60 s.
window() {
  local h0 l0 t0 t1
  h0=$(wbytes heavy || echo 0) l0=$(wbytes light || echo 0) t0=$(date +%s%N)
  twelve_more() { [ "$(wbytes heavy || echo 0)" -ge $((h0 + 12 * mib)) ] 2> /dev/null; }
  wait_until 60 twelve_more || return 1
  t1=$(date +%s%N)
  h=$(($(wbytes heavy || echo 0) - h0)) l=$(($(wbytes light || echo 0) - l0)) ms=$(((t1 - t0) / 1000000))
}
seen="" verdict=""
for n in 1 2 3; do
  if ! window; then seen="$seen; window $n: the weight-400 module did not write 12 MiB within 60 s"; break; fi
  rate=$(awk -v b=$((h + l)) -v ms="$ms" 'BEGIN { printf "%.1f", (ms > 0) ? b / 1048576 / (ms / 1000) : 0 }')
  seen="$seen; window $n: $(mibs "$l") MiB against $(mibs "$h") MiB in $((ms / 1000)).$((ms % 1000 / 100)) s ($rate MiB/s)"
  if [ $((l * 2)) -le "$h" ]; then verdict=met; break; fi
done
expect "in a window, the weight-100 module wrote at most half as much as the weight-400 one (${seen#; })" \
  [ "$verdict" = met ]
kill "$heavy" "$light" 2> /dev/null || true
sandbox_down
echo "$majmin enable=0" > "$CG/io.cost.qos"
losetup -d "$dev"
rm -f "$img"
check_end
