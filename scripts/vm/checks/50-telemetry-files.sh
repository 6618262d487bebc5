# shellcheck shell=dash
# The files the telemetry work reads exist in a module on this kernel, with the expected format:
# memory.peak (5.19+) and the PSI files (CONFIG_PSI, not disabled by psi=0).
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

check_begin telemetry-files
service_new svc-tele
"$CK" init > /dev/null
"$CK" create tele > /dev/null
dir=$MODS/tele
rc=0
"$CK" exec tele -- "$MEMHOG" 16 > /dev/null || rc=$?
expect "a 16 MiB memhog exits 0 in the module (rc=$rc)" [ "$rc" = 0 ]
for file in memory.peak memory.current memory.stat memory.events memory.pressure \
            cpu.pressure io.pressure cpu.stat pids.current; do
  expect "$file exists" [ -r "$dir/$file" ]
done
peak=$(cat "$dir/memory.peak" 2>/dev/null || echo unknown)
expect "memory.peak=$peak >= 16 MiB" eval '[ "$peak" != unknown ] && [ "$peak" -ge 16777216 ]'
psi_line='^\(some\|full\) avg10=[0-9.]* avg60=[0-9.]* avg300=[0-9.]* total=[0-9]*$'
for file in memory.pressure cpu.pressure io.pressure; do
  expect "$file has some/full lines" [ "$(grep -c "$psi_line" "$dir/$file")" = 2 ]
done
head -n 20 "$dir"/memory.pressure "$dir"/cpu.pressure "$dir/memory.events" "$dir/cpu.stat"
rc=0
"$CK" remove tele > /dev/null || rc=$?
expect "remove exits 0 (rc=$rc)" [ "$rc" = 0 ]
check_end
service_end
