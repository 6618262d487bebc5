# shellcheck shell=bash
# Records the series the hoard alert is tested on, from real processes where the memory
# controller exists: memshape (scripts/vm/tools/memshape.c) in its three shapes, churn, workload
# and cache, each as a module of a `ck-cgroup sandbox`, through 3 cycles of 24 s of work and 12 s
# of rest, 80 MiB a busy phase; `ck-cgroup status --format prometheus` is sampled, 0.25 s apart
# (`$EPOCHREALTIME`, the module's anonymous memory and CPU seconds) into
# /out/memory-shapes.samples. scripts/record-shapes turns them into
# packaging/prometheus/recorded/ (one step of 0.25 s a 5-minute scrape: a cycle is 12 hours),
# which `make test` runs promtool on. A recorder, not a judge of the alert: CI's lane 2 leaves it
# out (VM_SKIP); `make vm-test LANE=systemd VM_CHECKS=57 VM_NO_TESTS=1 VM_NO_REAL_DAEMON=1`
# records anew.
#   memory-shapes  each shape ran its 3 cycles in its module (then held, until killed), every sample has the three
#                  modules' anon and CPU figures, and the shapes are as described: churn's
#                  memory in its last trough is above its first trough's by at least 100 MiB,
#                  workload's falls in each trough below a quarter of its peak, cache's holds
# check-timeout: 600
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin memory-shapes
sandbox_up
out=/out/memory-shapes.samples
: > "$out"
for mode in churn workload cache; do
  "$CK" exec "shape-$mode" -- /lane/bin/memshape "$mode" 3 24000 12000 80 > "/tmp/memshape-$mode.log" 2>&1 &
done
# done_all: every shape has run its cycles (and holds what it kept, asleep, until killed).
done_all() { for m in churn workload cache; do grep -q 'memshape: done' "/tmp/memshape-$m.log" || return 1; done; }
# sample: one status of the three modules, as `T MODULE ANON CPU` lines.
sample() {
  local t=$EPOCHREALTIME
  "$CK" status --format prometheus shape-churn shape-workload shape-cache 2> /dev/null |
    awk -v t="$t" '
      /^ck_cgroup_memory_anon_bytes\{/ { match($0, /module="[^"]*"/); m = substr($0, RSTART + 8, RLENGTH - 9); anon[m] = $2 }
      /^ck_cgroup_cpu_usage_seconds_total\{/ { match($0, /module="[^"]*"/); m = substr($0, RSTART + 8, RLENGTH - 9); cpu[m] = $2 }
      END { for (m in anon) print t, m, anon[m], (m in cpu) ? cpu[m] : "-" }'
}
t_end=$((SECONDS + 300))
until done_all || [ "$SECONDS" -ge "$t_end" ]; do
  sample >> "$out"
  sleep 0.25
done
sample >> "$out"
expect "each shape ran its 3 cycles ($(cat /tmp/memshape-*.log | grep -c 'memshape: done') of 3 done)" done_all
for mode in churn workload cache; do "$CK" kill "shape-$mode" > /dev/null || true; done
n=$(wc -l < "$out")
missing=$(awk '$3 == "" || $4 == "-"' "$out" | wc -l)
expect "$n samples, none without a figure ($missing)" eval '[ "$n" -gt 300 ] && [ "$missing" = 0 ]'
# The shapes: MiB of anonymous memory per module over the run, per phase from memshape's log.
mib() { awk -v m="shape-$1" '$2 == m { printf "%d ", $3 / 1048576 }' "$out"; }
for mode in churn workload cache; do echo "$mode (MiB): $(mib "$mode")"; done
first_low=$(awk '$2 == "shape-churn" { v[++n] = $3 } END { print int(v[int(n * 0.30)] / 1048576) }' "$out")
last_low=$(awk '$2 == "shape-churn" { v[++n] = $3 } END { print int(v[n] / 1048576) }' "$out")
expect "churn keeps what it took: ${first_low} MiB in its first trough, ${last_low} MiB in its last" \
  [ $((last_low - first_low)) -ge 100 ]
w_peak=$(awk '$2 == "shape-workload" && $3 > p { p = $3 } END { print int(p / 1048576) }' "$out")
w_last=$(awk '$2 == "shape-workload" { v = $3 } END { print int(v / 1048576) }' "$out")
expect "workload falls when its work stops: peak ${w_peak} MiB, ${w_last} MiB at the end" \
  [ $((w_last * 4)) -lt "$w_peak" ]
c_peak=$(awk '$2 == "shape-cache" && $3 > p { p = $3 } END { print int(p / 1048576) }' "$out")
c_last=$(awk '$2 == "shape-cache" { v = $3 } END { print int(v / 1048576) }' "$out")
expect "cache holds what it filled: peak ${c_peak} MiB, ${c_last} MiB at the end" \
  [ $((c_last * 10)) -ge $((c_peak * 9)) ]
sandbox_down
check_end
