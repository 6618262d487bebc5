# shellcheck shell=bash
# The guest bench (`make vm-bench`, scripts/vm-bench): runs the bench program built on the host
# (`cargo bench --no-run --bench vm`, benches/vm/) from the repository shared read-only at its
# host path, against the installed helper /usr/bin/ck-cgroup, with the VM_BENCH_* knobs that
# scripts/vm-bench put into /lane/env. Its whole output is this file's log (/out/10-bench.log),
# which scripts/vm-bench prints. One CHECK line: PASS when the bench ran to its end (goals not
# met are reported, not failed), FAIL when it stopped with an error.
# check-timeout: 1200
set -uo pipefail
# shellcheck source=/dev/null # written by scripts/vm/systemd/build-initramfs
. /lane/env
while IFS= read -r var; do export "${var?}"; done < <(compgen -v | grep '^VM_BENCH_' || true)
bin=${VM_BENCH_BIN:-}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "CHECK bench FAIL no bench program (VM_BENCH_BIN=$bin; scripts/vm-bench builds it)"
  exit 0
fi
echo "bench: $bin, date $(date -u +%Y-%m-%dT%H:%M:%SZ), uptime $(cut -d' ' -f1 /proc/uptime) s," \
  "$(systemctl --version | head -n 1), memory $(awk '/^MemTotal/ { print $2 " " $3 }' /proc/meminfo)"
CK_VM_BENCH=1 CK_CGROUP_BIN=/usr/bin/ck-cgroup "$bin" 2>&1 | tee /tmp/bench.out
rc=${PIPESTATUS[0]}
echo "bench exit status $rc"
# The goals as the bench judged them, counted from its own output.
met=$(grep -c '^goal.* -> met$' /tmp/bench.out || true)
notmet=$(grep -c '^goal.* -> not met' /tmp/bench.out || true)
if [ "$rc" = 0 ]; then
  echo "CHECK bench PASS the bench ran to its end; goals met: ${met:-?}, not met: ${notmet:-?}"
else
  echo "CHECK bench FAIL the bench stopped with status $rc (see out/10-bench.log)"
fi
