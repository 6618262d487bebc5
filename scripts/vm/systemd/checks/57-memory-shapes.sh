# shellcheck shell=bash
# Records the series the hoard alert is tested on, from real processes where the memory
# controller exists: memshape (scripts/vm/tools/memshape.c) in its three shapes, churn, workload
# and cache, each as a module of a `ck-cgroup sandbox`, through 3 cycles of 24 s of work and 12 s
# of rest, 80 MiB a busy phase; `ck-cgroup status --format prometheus` is sampled, 0.25 s apart
# (`$EPOCHREALTIME`, the module's anonymous memory, CPU seconds and swap) into
# /out/memory-shapes.samples; then again with swap on (zram, lib-systemd.sh: swap_up) and each
# module made with `--memory-high 40M --memory-swap-max max`, so that what a shape holds past
# 40 MiB is pushed to swap, into /out/memory-shapes-swap.samples. scripts/record-shapes turns
# them into packaging/prometheus/recorded/ (one step of 0.25 s a 5-minute scrape: a cycle is 12
# hours), which `make test` runs promtool on. A recorder, not a judge of the alert: CI's lane 2
# leaves it out (VM_SKIP); `make vm-test LANE=systemd VM_CHECKS=57 VM_NO_TESTS=1
# VM_NO_REAL_DAEMON=1` records anew. A trough below is a shape's idle phase, from its log (each
# line stamped with the time it came).
#   memory-shapes  each shape ran its 3 cycles in its module (then held, until killed), every sample has the three
#                  modules' anon, CPU and swap figures, and the shapes are as described: churn's
#                  memory in its last trough is above its first trough's by at least 100 MiB,
#                  workload's falls in each trough below a quarter of its peak, cache's holds
#   memory-shapes-swap  the same, with swap on and memory.high 40M: what each holds is anon +
#                  swap; churn's in its last trough is above its first trough's by at least 100
#                  MiB while its anon in each trough stays within memory.high (the hoard went to
#                  swap: its anon floor does not rise), workload swapped at its peak and falls in
#                  each trough below a quarter of its peak, cache's holds
# check-timeout: 900
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# record OUT FLAG...: the three shapes, each as a module made with FLAGs (`ck-cgroup exec`), in a
# sandbox of their own, sampled into OUT as `T MODULE ANON CPU SWAP` lines until each has run its
# cycles; memshape's log of MODE in /tmp/memshape-MODE.log, each line `T memshape: ...`.
record() {
  local out=$1 mode
  shift
  sandbox_up
  : > "$out"
  for mode in churn workload cache; do
    "$CK" exec "shape-$mode" "$@" -- /lane/bin/memshape "$mode" 3 24000 12000 80 2>&1 |
      while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done > "/tmp/memshape-$mode.log" &
  done
  local t_end=$((SECONDS + 400))
  until done_all || [ "$SECONDS" -ge "$t_end" ]; do
    sample >> "$out"
    sleep 0.25
  done
  sample >> "$out"
  expect "each shape ran its 3 cycles ($(cat /tmp/memshape-*.log | grep -c 'memshape: done') of 3 done)" done_all
  for mode in churn workload cache; do "$CK" kill "shape-$mode" > /dev/null || true; done
  sandbox_down
  local n missing
  n=$(wc -l < "$out")
  missing=$(awk 'NF != 5 || $4 == "-" || $5 == "-"' "$out" | wc -l)
  expect "$n samples, none without a figure ($missing)" eval '[ "$n" -gt 300 ] && [ "$missing" = 0 ]'
  for mode in churn workload cache; do
    echo "$mode (MiB anon+swap): $(awk -v m="shape-$mode" '$2 == m { printf "%d+%d ", $3 / 1048576, $5 / 1048576 }' "$out")"
    echo "$mode phases (s): $(awk 'NR == 1 { t0 = $1 } { printf "%s %s %.1f; ", $4, $5, $1 - t0 }' "/tmp/memshape-$mode.log")"
  done
}
# done_all: every shape has run its cycles (and holds what it kept, asleep, until killed).
done_all() { for m in churn workload cache; do grep -q 'memshape: done' "/tmp/memshape-$m.log" || return 1; done; }
# sample: one status of the three modules, as `T MODULE ANON CPU SWAP` lines.
sample() {
  local t=$EPOCHREALTIME
  "$CK" status --format prometheus shape-churn shape-workload shape-cache 2> /dev/null |
    awk -v t="$t" '
      function mod() { match($0, /module="[^"]*"/); return substr($0, RSTART + 8, RLENGTH - 9) }
      /^ck_cgroup_memory_anon_bytes\{/ { anon[mod()] = $2 }
      /^ck_cgroup_cpu_usage_seconds_total\{/ { cpu[mod()] = $2 }
      /^ck_cgroup_memory_swap_current_bytes\{/ { swap[mod()] = $2 }
      END { for (m in anon) print t, m, anon[m], (m in cpu) ? cpu[m] : "-", (m in swap) ? swap[m] : "-" }'
}
# troughs OUT MODE FIELDS: MODE's floor in each of its troughs (its idle phases, from its log:
# from `cycle N idle` to the next `busy` or `done`), in MiB, of the sum of FIELDS of its samples
# (3 anon, 5 swap: `3`, or `3 5`); `-` for a trough with no sample.
troughs() {
  awk -v m="shape-$2" -v fields="$3" '
    FNR == NR { if ($3 == "cycle" && $5 == "idle") from[++n] = $1; else if (n && !(n in to) && ($3 == "cycle" || $3 == "done")) to[n] = $1; next }
    $2 == m { v = 0; k = split(fields, f, " "); for (i = 1; i <= k; i++) v += $(f[i] + 0)
      for (i = 1; i <= n; i++) if ($1 >= from[i] && (!(i in to) || $1 <= to[i]) && (!(i in lo) || v < lo[i])) lo[i] = v }
    END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), (i in lo) ? int(lo[i] / 1048576) : "-"; print "" }
  ' "/tmp/memshape-$2.log" "$1"
}
# peak OUT MODE FIELDS / last OUT MODE FIELDS: MODE's highest and last sum of FIELDS, in MiB.
peak() { awk -v m="shape-$2" -v fields="$3" '$2 == m { v = 0; k = split(fields, f, " "); for (i = 1; i <= k; i++) v += $(f[i] + 0); if (v > p) p = v } END { print int(p / 1048576) }' "$1"; }
last() { awk -v m="shape-$2" -v fields="$3" '$2 == m { v = 0; k = split(fields, f, " "); for (i = 1; i <= k; i++) v += $(f[i] + 0) } END { print int(v / 1048576) }' "$1"; }
# nums LIST: LIST is one or more numbers. first_of/last_of LIST: its first and last.
nums() { [[ $1 =~ ^[0-9]+( [0-9]+)*$ ]]; }
first_of() { echo "${1%% *}"; }
last_of() { echo "${1##* }"; }
# rises_by LIST N: LIST's last number is N or more above its first.
rises_by() { nums "$1" && [ $(($(last_of "$1") - $(first_of "$1"))) -ge "$2" ]; }
# falls_below_quarter LIST PEAK: LIST's last number is below a quarter of PEAK.
falls_below_quarter() { nums "$1" && [ $(($(last_of "$1") * 4)) -lt "$2" ]; }
# holds LAST PEAK: LAST is nine tenths of PEAK or more.
holds() { nums "$1 $2" && [ $(($1 * 10)) -ge $(($2 * 9)) ]; }

check_begin memory-shapes
out=/out/memory-shapes.samples
record "$out"
held=$(troughs "$out" churn 3)
expect "churn keeps what it took: its floor in each trough $held MiB" rises_by "$held" 100
w_peak=$(peak "$out" workload 3) w_floors=$(troughs "$out" workload 3)
expect "workload falls when its work stops: peak ${w_peak} MiB, its floor in each trough $w_floors MiB" \
  falls_below_quarter "$w_floors" "$w_peak"
c_peak=$(peak "$out" cache 3) c_last=$(last "$out" cache 3)
expect "cache holds what it filled: peak ${c_peak} MiB, ${c_last} MiB at the end" holds "$c_last" "$c_peak"
check_end

check_begin memory-shapes-swap
expect "swap on zram (512M)" swap_up 512M
echo "swaps: $(swaps)"
out=/out/memory-shapes-swap.samples
record "$out" --memory-high 40M --memory-swap-max max
held=$(troughs "$out" churn "3 5") anon=$(troughs "$out" churn 3)
expect "churn keeps what it took, in swap: anon + swap in each trough $held MiB, anon $anon MiB" \
  rises_by "$held" 100
expect "churn's anon floor stays at memory.high 40M: $anon MiB" \
  eval 'nums "$anon" && ! rises_by "$anon" 32 && [ "$(last_of "$anon")" -le 40 ]'
w_peak=$(peak "$out" workload "3 5") w_swap=$(peak "$out" workload 5) w_floors=$(troughs "$out" workload "3 5")
expect "workload swaps at its peak and falls when its work stops: peak ${w_peak} MiB (swap ${w_swap} MiB), its floor in each trough $w_floors MiB" \
  eval '[ "$w_swap" -ge 16 ] && falls_below_quarter "$w_floors" "$w_peak"'
c_peak=$(peak "$out" cache "3 5") c_last=$(last "$out" cache "3 5") c_swap=$(last "$out" cache 5)
expect "cache holds what it filled: peak ${c_peak} MiB, ${c_last} MiB at the end (swap ${c_swap} MiB)" \
  holds "$c_last" "$c_peak"
expect "swap off" swap_down
check_end
