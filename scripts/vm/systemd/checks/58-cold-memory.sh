# shellcheck shell=bash
# Cold memory on real processes: the multi-gen LRU switched on (the guest's kernel is built with
# CONFIG_LRU_GEN, off until /sys/kernel/mm/lru_gen/enabled is set), debugfs mounted, and
# memshape (scripts/vm/tools/memshape.c) in its three shapes, churn, workload and cache, each as
# a module of a `ck-cgroup sandbox`, through 7 cycles of 24 s of work and 36 s of rest, 60 MiB a
# busy phase, then asleep. `ck-cgroup status --json --age-cold --cold-window $COLD_WINDOW`
# (default 15s, shorter than a rest as 10 minutes is shorter than a night) is run over and
# over, as the metrics timer runs it, and each module's cold_memory kept in
# /out/cold-memory.samples (`T MODULE PHASE ANON COLD COLD_FILE AGED_MS AGING_US WINDOW_MS
# SOURCE REASON`; lru_gen's text at the start and the end beside it).
#   cold-memory  every module's figure carries its source and window, and is known within a few
#                windows; at the end of each of churn's rests most of what it holds is cold, and
#                what is cold grows rest after rest (its fragmented heap, held; while it works
#                the allocator reuses the holes in it, so part of it is touched); while
#                workload works its cold memory is a small share of its anonymous memory; once
#                the shapes sleep (done), most of each module's anonymous memory is cold; aging
#                costs are recorded. A helper that reports every page as cold (control
#                cold-every-page) fails it
# check-timeout: 720
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin cold-memory
W=${COLD_WINDOW:-15s}
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
was=$(cat /sys/kernel/mm/lru_gen/enabled)
echo y > /sys/kernel/mm/lru_gen/enabled
note "lru_gen enabled: $was before, $(cat /sys/kernel/mm/lru_gen/enabled) now; window $W"
sandbox_up
out=/out/cold-memory.samples
: > "$out"
for mode in churn workload cache; do
  "$CK" exec "shape-$mode" -- /lane/bin/memshape "$mode" 7 24000 36000 60 > "/tmp/memshape-$mode.log" 2>&1 &
done
cat /sys/kernel/debug/lru_gen > /out/cold-memory.lru_gen.start
done_all() { for m in churn workload cache; do grep -q 'memshape: done' "/tmp/memshape-$m.log" || return 1; done; }
phase() { tail -n 1 "/tmp/memshape-$1.log" | awk '{ print ($NF == "done" ? "done" : $(NF - 1) "-" $NF) }'; }
# sample: one status of the three modules, one line each.
sample() {
  local t=$EPOCHREALTIME json
  json=$("$CK" status --json --age-cold --cold-window "$W" shape-churn shape-workload shape-cache 2> /dev/null) || return 0
  for m in churn workload cache; do
    jq -r --arg t "$t" --arg m "shape-$m" --arg p "$(phase "$m")" '.modules[] | select(.id == $m) |
      [$t, $m, $p, (.memory_anon.value // "null"), (.cold_memory.value // "null"),
       (.cold_memory.file // "null"), (.cold_memory.aged_ms_ago // "null"),
       (.cold_memory.aging_us // "null"), .cold_memory.window_ms, (.cold_memory.source | split(" ")[0]),
       (.cold_memory.reason // "-" | gsub(" "; "_"))] | join(" ")' <<< "$json" >> "$out"
  done
}
t_end=$((SECONDS + 560))
until done_all || [ "$SECONDS" -ge "$t_end" ]; do
  sample
  sleep 1
done
expect "each shape ran its 7 cycles ($(cat /tmp/memshape-*.log | grep -c 'memshape: done') of 3 done)" done_all
# Asleep: their memory turns cold within a few windows.
t_sleep=$((SECONDS + 45))
while [ "$SECONDS" -lt "$t_sleep" ]; do
  sample
  sleep 1
done
cat /sys/kernel/debug/lru_gen > /out/cold-memory.lru_gen.end
for mode in churn workload cache; do "$CK" kill "shape-$mode" > /dev/null || true; done
sandbox_down
echo "$was" > /sys/kernel/mm/lru_gen/enabled || true
n=$(wc -l < "$out")
echo "samples: $n"
awk '{ printf "%s %s %s anon=%dM cold=%s aged=%s aging_us=%s %s\n", $1, $2, $3, $4 / 1048576, ($5 == "null" ? "null" : int($5 / 1048576) "M"), $7, $8, $11 }' "$out"
w_ms=$(awk -v w="$W" 'BEGIN { print w * 1000 }')
src_ok=$(awk -v w="$w_ms" '$9 != w || $10 != "/sys/kernel/debug/lru_gen"' "$out" | wc -l)
expect "$n samples, each with its window ($w_ms ms) and source ($src_ok without)" \
  eval '[ "$n" -gt 30 ] && [ "$src_ok" = 0 ]'
# Known within a few windows: after the first 60 s, at least 3 in 4 samples of each module.
known() { awk -v m="shape-$1" -v t0="$(head -n 1 "$out" | cut -d' ' -f1)" '$2 == m && $1 > t0 + 60 { n++; if ($5 != "null") k++ } END { printf "%d %d", k, n }' "$out"; }
for m in churn workload cache; do
  read -r k total <<< "$(known "$m")"
  expect "$m's cold memory known in $k of its $total samples after the first minute" [ $((k * 4)) -ge $((total * 3)) ]
done
# churn: at the end of each rest (its last known sample of an idle phase) at least 4/5 of
# what it holds is cold, and what is cold at the end of its last rest is 100 MiB above its
# first.
troughs=$(awk '$2 == "shape-churn" && $3 ~ /idle/ && $5 != "null" { a[$3] = $4; c[$3] = $5 }
  END { for (k in a) printf "%s %d %d\n", k, a[k] / 1048576, c[k] / 1048576 }' "$out" | sort)
echo "churn's rests (phase, anon MiB, cold MiB):"
echo "$troughs"
mostly_cold() { [ "$(wc -l <<< "$troughs")" -ge 3 ] && awk '$3 * 5 < $2 * 4 { bad = 1 } END { exit bad }' <<< "$troughs"; }
expect "churn at the end of its rests: most of what it holds is cold ($(tr "\n" " " <<< "$troughs"))" mostly_cold
first=$(head -n 1 <<< "$troughs" | cut -d' ' -f3)
last=$(tail -n 1 <<< "$troughs" | cut -d' ' -f3)
expect "churn's cold memory grows rest after rest: ${first:-0} MiB in its first, ${last:-0} MiB in its last" \
  eval '[ $(( ${last:-0} - ${first:-0} )) -ge 100 ]'
# workload: while it works, its cold memory is at most a fifth of its anonymous memory (the
# busy samples whose figure is known and whose memory is above 20 MiB).
w=$(awk '$2 == "shape-workload" && $3 ~ /busy/ && $5 != "null" && $4 > 20971520 { n++; if ($5 * 5 > $4) hot_fail++; s += $5 / $4 } END { printf "%d %d %.2f", n, hot_fail, (n ? s / n : 0) }' "$out")
read -r w_n w_over w_mean <<< "$w"
expect "workload working: cold at most a fifth of anon in its busy samples ($w_over of $w_n over; mean share $w_mean)" \
  eval '[ "$w_n" -ge 5 ] && [ "$w_over" -le $((w_n / 10)) ]'
# Asleep: each module's last figure is at least 4/5 of its anonymous memory.
for m in churn cache; do
  read -r a c <<< "$(awk -v m="shape-$m" '$2 == m && $3 == "done" && $5 != "null" { a = $4; c = $5 } END { print a + 0, c + 0 }' "$out")"
  expect "$m asleep: $((c / 1048576)) MiB cold of $((a / 1048576)) MiB anon" eval '[ $((c * 5)) -ge $((a * 4)) ] && [ "$a" -gt 0 ]'
done
max_aging=$(awk '$8 != "null" && $8 > m { m = $8 } END { print m + 0 }' "$out")
note "aging: at most ${max_aging} us for one module in one run (TCG guest)"
check_end
