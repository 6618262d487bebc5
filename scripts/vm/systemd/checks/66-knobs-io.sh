# shellcheck shell=bash
# io.max's effect, in a `ck-cgroup sandbox` (a delegated scope: every controller), on the guest's
# only kind of block device: a loop device over a sparse file in /dev/shm (the kernel's loop
# module, loaded by the initramfs).
#   io-max  `dd oflag=direct` of 8 MiB to the device from a module made with `exec --io-max
#           DEV:wbps=2M` takes at least 3 s by dd's own figure (2 MiB/s would be 4 s;
#           blk-throttle lets the first slice through), the same write from a module without it
#           at most a third of that; the module's io.stat counts the 8 MiB written on the device
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin io-max
img=/dev/shm/lane-io.img
loop_up "$img" 64M
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
# write_in ID FLAG...: 8 MiB of direct writes to the device from module ID; prints the seconds
# dd took (its own figure: the helper's start, tens of milliseconds under TCG, is not the write).
write_in() {
  local id=$1 line
  shift
  line=$("$CK" exec "$id" "$@" -- dd if=/dev/zero of="$dev" bs=1M count=8 oflag=direct 2>&1 | tail -n 1)
  echo "$id: $line" >&2
  sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' <<< "$line"
}
fast=$(write_in free)
slow=$(write_in lim --io-max "$dev:wbps=2M")
iomax=$(cat "$M/lim/io.max")
expect "the limited module's io.max is wbps=2M on $majmin ($iomax)" \
  grep -q "^$majmin rbps=max wbps=2097152 " <<< "$iomax"
expect "8 MiB under wbps=2M took at least 3 s (dd: ${slow:-no figure} s)" \
  awk -v s="$slow" 'BEGIN { exit !(s != "" && s >= 3) }'
expect "8 MiB without the limit took at most a third of that (dd: ${fast:-no figure} s)" \
  awk -v s="$slow" -v f="$fast" 'BEGIN { exit !(f != "" && f * 3 <= s) }'
wb=$(awk -v d="$majmin" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) print substr($i, 8) }' "$M/lim/io.stat")
expect "the limited module's io.stat counts the 8 MiB on $majmin (wbytes=${wb:-none})" [ "${wb:-0}" -ge 8388608 ]
sandbox_down
losetup -d "$dev"
rm -f "$img"
check_end
