# shellcheck shell=dash
# The telemetry commands on real controllers: a module over its memory.max is OOM-killed alone;
# `status` shows its oom_kill and its limits with their sources; `watch` reported the rise as it
# happened and killed nothing; `create` sets memory.oom.group 1 by default; `doctor` passes the
# controller checks.
set -euo pipefail
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh

check_begin status-watch
service_new svc-tel
"$CK" init > /dev/null
"$CK" create hog --memory-max 32M --memory-swap-max 0 > /dev/null
"$CK" create calm > /dev/null
hog=$MODS/hog
calm=$MODS/calm
expect "create set memory.oom.group 1 by default ($(cat "$calm/memory.oom.group"))" \
  [ "$(cat "$calm/memory.oom.group")" = 1 ]

"$CK" watch > /tmp/watch.out &
watch_pid=$!
# watch is ready when it reports a module made after it started (a new name each try: one made
# before watch's first scan is never reported as appearing).
w=0
watching() {
  w=$((w + 1))
  "$CK" create "wready$w" > /dev/null && sleep 0.1 &&
    jq_lines_any /tmp/watch.out '.module == $m' --arg m "wready$w"
}
expect "watch is watching (it reported the module wready appearing)" wait_until 5 watching
"$CK" exec calm -- sleep 600 &
calm_pid=$!
expect "calm's sleep is in calm" wait_until 5 is_member "$calm" "$calm_pid"
rc=0
"$CK" exec hog -- "$MEMHOG" 256 > /dev/null 2>&1 || rc=$?
expect "the hog died of SIGKILL (rc=$rc)" [ "$rc" = 137 ]
sleep 0.3

st=$("$CK" --json status hog)
echo "$st" | head -c 600; echo
kills=$(jq_get "$st" '.modules[0].memory_events.value.oom_kill // 0' || echo 0)
expect "status shows hog's oom_kill=$kills >= 1" jq_is "$st" '.modules[0].memory_events.value.oom_kill >= 1'
expect "status is hog's ($(jq_get "$st" '[.modules[].module] | join(" ")' || true))" \
  jq_is "$st" '[.modules[].module] == ["hog"]'
expect "status shows memory.max 33554432 from memory.max" \
  jq_is "$st" '.modules[0].limits.memory_max == {value: 33554432, source: "memory.max"}'
expect "status reads memory.current from the kernel, not /proc" \
  jq_is "$st" '.modules[0].memory_current.source == "memory.current"'
peak=$(cat "$hog/memory.peak")
expect "status shows memory.peak $peak, the kernel's" \
  jq_is "$st" '.modules[0].memory_peak == {value: $p, source: "memory.peak"}' --argjson p "$peak"
"$CK" status --format prometheus --output /tmp/status.prom
expect "prometheus has hog's oom_kill counter" \
  grep -q 'ck_cgroup_memory_events_total{module="hog",layout="ck",slot="main",event="oom_kill"} [1-9]' /tmp/status.prom
expect "prometheus has hog's memory.max in bytes" \
  grep -qx 'ck_cgroup_memory_max_bytes{module="hog",layout="ck",slot="main"} 33554432' /tmp/status.prom
expect "prometheus has calm's memory.max as +Inf" \
  grep -qx 'ck_cgroup_memory_max_bytes{module="calm",layout="ck",slot="main"} +Inf' /tmp/status.prom
expect "prometheus has memory.current" grep -q '^ck_cgroup_memory_current_bytes' /tmp/status.prom
expect "prometheus has no /proc sums" sh -c '! grep -q rss_proc /tmp/status.prom' 

kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
cat /tmp/watch.out
expect "watch reported hog's oom_kill rise" \
  jq_lines_any /tmp/watch.out '.module == "hog" and .event == "memory_oom_kill"'
expect "watch's output is JSON lines" jq -e -s 'length > 0' /tmp/watch.out
calm_quiet() { ! jq_lines_any /tmp/watch.out '.module == "calm" and (.event | startswith("memory_oom"))'; }
expect "watch reported nothing of the kind for calm" calm_quiet
expect "calm's sleep survived (watch never kills)" alive "$calm_pid"
expect "the stand-in daemon is alive in daemon/" is_member "$SVC/daemon" "$DAEMON_PID"

doc=$("$CK" --json doctor || true)
expect "doctor: controllers delegated" \
  jq_is "$doc" 'any(.checks[]; .name == "controllers delegated" and .outcome == "ok")'

"$CK" kill calm > /dev/null || true
wait "$calm_pid" 2>/dev/null || true
"$CK" kill hog > /dev/null || true
for i in $(seq 1 "$w"); do "$CK" kill "wready$i" > /dev/null || true; done
check_end
service_end
