# shellcheck shell=bash
# shmem-left: memory a kill cannot free. A module writes 32M into a file in /dev/shm (tmpfs: the
# pages are charged to the module's memory cgroup) and sleeps. status names them
# (`memory_shmem`); `kill --json` kills and removes the module and says they stay charged
# (`memory_left.shmem`, read from memory.stat before the rmdir), the human `kill` says so in a
# line; a module with no shared memory gets 0 and no line. Deleting the file frees them.
#   shmem-left  status memory_shmem >= 32M; kill's memory_left.shmem >= 32M; the human line;
#               the control module's memory_left.shmem 0 and no line
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin shmem-left
sandbox_up
"$CK" init > /dev/null
MB32=$((32 * 1048576))
for m in shm-json shm-human; do
  "$CK" exec "$m" -- bash -c "head -c $MB32 /dev/zero > /dev/shm/ck-lane-$m && exec sleep 300" \
    > /dev/null 2>&1 &
done
"$CK" exec plain -- sleep 300 > /dev/null 2>&1 &
shm_written() { [ "$(stat -c %s "/dev/shm/ck-lane-$1" 2> /dev/null || echo 0)" -ge "$MB32" ]; }
expect "both modules wrote 32M into /dev/shm" wait_until 30 eval 'shm_written shm-json && shm_written shm-human'
"$CK" --json status shm-json > /tmp/shm-status.json
note "status shm-json memory_shmem: $(jq -c '.modules[0].memory_shmem' /tmp/shm-status.json)"
expect "status names the shared memory (memory_shmem >= 32M)" \
  jq -e --argjson n "$MB32" '.modules[0].memory_shmem.value >= $n' /tmp/shm-status.json
"$CK" --json kill --timeout 5s shm-json > /tmp/shm-kill.json
note "kill shm-json: $(jq -c '{removed, memory_left}' /tmp/shm-kill.json)"
expect "kill removed the module and says its shared memory stays charged (memory_left.shmem >= 32M)" \
  jq -e --argjson n "$MB32" '.removed and .memory_left.shmem >= $n' /tmp/shm-kill.json
"$CK" kill --timeout 5s shm-human > /tmp/shm-kill.txt 2>&1
note "kill shm-human: $(tr "\n" " " < /tmp/shm-kill.txt)"
expect "the human kill says the shared memory stays charged" grep -q 'stays charged after the kill' /tmp/shm-kill.txt
"$CK" --json kill --timeout 5s plain > /tmp/shm-plain.json 2> /tmp/shm-plain.err
"$CK" kill --timeout 5s plain > /tmp/shm-plain.txt 2>&1 || true
note "kill plain: $(jq -c '{removed, memory_left}' /tmp/shm-plain.json)"
expect "the control module with no shared memory: memory_left.shmem 0" \
  jq -e '.removed and .memory_left.shmem == 0' /tmp/shm-plain.json
expect "and no line for it" eval '! grep -q "stays charged" /tmp/shm-plain.err'
rm -f /dev/shm/ck-lane-shm-json /dev/shm/ck-lane-shm-human
sandbox_down
check_end
