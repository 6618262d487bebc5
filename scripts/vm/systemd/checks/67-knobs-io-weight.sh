# shellcheck shell=bash
# io.weight's effect, in a `ck-cgroup sandbox` (a delegated scope: every controller), on a loop
# device over a sparse file in /dev/shm. The guest's kernel has no IO scheduler that weighs
# (BFQ is a module the lane does not load) but has io.cost (CONFIG_BLK_CGROUP_IOCOST=y), which
# weighs only where it is enabled: the check enables it for the loop device at the hierarchy's
# root with a user model of a slow disk (4 MiB/s of writes, vrate pinned at 100%) and disables
# it at the end.
#   io-weight  two modules made with `exec --io-weight 400` and `--io-weight 100` write to the
#              device at the same time (dd oflag=direct); when the first has written 12 MiB, the
#              second has written at most half as much (io.stat wbytes)
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin io-weight
img=/dev/shm/lane-iow.img
loop_up "$img" 64M
echo "$majmin ctrl=user model=linear rbps=4194304 rseqiops=1000 rrandiops=1000 wbps=4194304 wseqiops=1000 wrandiops=1000" \
  > "$CG/io.cost.model"
echo "$majmin enable=1 ctrl=user rpct=0 rlat=0 wpct=0 wlat=0 min=100 max=100" > "$CG/io.cost.qos"
echo "io.cost.qos: $(grep "^$majmin" "$CG/io.cost.qos")"
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
wbytes() { awk -v d="$majmin" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) print substr($i, 8) }' "$M/$1/io.stat" 2> /dev/null; }
"$CK" exec heavy --io-weight 400 -- dd if=/dev/zero of="$dev" bs=256K count=64 oflag=direct 2> /dev/null &
heavy=$!
"$CK" exec light --io-weight 100 -- dd if=/dev/zero of="$dev" bs=256K count=64 seek=128 oflag=direct 2> /dev/null &
light=$!
weights() { grep -qx "default 400" "$M/heavy/io.weight" && grep -qx "default 100" "$M/light/io.weight"; } 2> /dev/null
rc=0; wait_until 10 weights || rc=$?
expect "io.weight is default 400 and default 100 ($(head -n 1 "$M/heavy/io.weight" 2> /dev/null), $(head -n 1 "$M/light/io.weight" 2> /dev/null))" [ "$rc" = 0 ]
twelve() { [ "$(wbytes heavy || echo 0)" -ge $((12 * 1048576)) ] 2> /dev/null; }
t0=$(date +%s%N)
expect "the weight-400 module wrote 12 MiB within 30 s" wait_until 30 twelve
t1=$(date +%s%N)
h=$(wbytes heavy) l=$(wbytes light)
mibs() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
expect "the weight-100 module wrote at most half as much meanwhile ($(mibs "${l:-0}") MiB against $(mibs "${h:-0}") MiB in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s)" \
  [ $((${l:-0} * 2)) -le "${h:-0}" ]
kill "$heavy" "$light" 2> /dev/null || true
sandbox_down
echo "$majmin enable=0" > "$CG/io.cost.qos"
losetup -d "$dev"
rm -f "$img"
check_end
