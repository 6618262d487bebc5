# shellcheck shell=bash
# The CPU knobs' effects, in a `ck-cgroup sandbox` (a delegated scope: every controller).
#   cpu-max  two busy loops side by side, one made with `exec --cpu-max 20000/100000` (20 ms of
#            CPU in each 100 ms), one without: over 3 s of wall time the limited one's cpu.stat
#            usage_usec grows by at most 30% of the wall time (its limit is 20%) and its nr_throttled rises;
#            the unlimited one gets at least twice as much
#   cpuset   a busy loop made with `exec --cpus 1`: the module's cpuset.cpus.effective is 1, the
#            process's Cpus_allowed_list is 1, and 20 samples of the CPU it last ran on (field 39
#            of /proc/PID/stat) are all 1
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
sandbox_up
M=$CK_CGROUP_ROOT/subc-modules
now_us() { echo $(($(date +%s%N) / 1000)); }

check_begin cpu-max
lim=$(spin_in lim --cpu-max 20000/100000) free=$(spin_in free)
echo "lim $lim, free $free"
expect "cpu.max of the limited module is 20000 100000 ($(cat "$M/lim/cpu.max"))" \
  [ "$(cat "$M/lim/cpu.max")" = "20000 100000" ]
sleep 0.5
l0=$(keyed "$M/lim/cpu.stat" usage_usec) t0=$(keyed "$M/lim/cpu.stat" nr_throttled)
f0=$(keyed "$M/free/cpu.stat" usage_usec) w0=$(now_us)
sleep 3
l1=$(keyed "$M/lim/cpu.stat" usage_usec) t1=$(keyed "$M/lim/cpu.stat" nr_throttled)
f1=$(keyed "$M/free/cpu.stat" usage_usec) w1=$(now_us)
wall=$((w1 - w0)) dl=$((l1 - l0)) df=$((f1 - f0))
pct() { echo $(($1 * 100 / wall)); }
echo "wall ${wall} us; limited +${dl} us, nr_throttled ${t0} -> ${t1}; unlimited +${df} us"
# The limit is 20%; the bound is 30%, since under TCG on a loaded host the measured share was 17
# to 22% (the wall time and usage are read a few ms apart); an unlimited loop gets 99%.
expect "the limited loop used at most 30% of the wall time ($(pct "$dl")%: ${dl} us of ${wall} us)" \
  [ $((dl * 10)) -le $((wall * 3)) ]
expect "its nr_throttled rose (${t0} -> ${t1})" [ "$t1" -gt "$t0" ]
expect "the unlimited loop got at least twice as much ($(pct "$df")%: ${df} us)" [ "$df" -ge $((2 * dl)) ]
kill "$lim" "$free" 2> /dev/null || true
check_end

check_begin cpuset
pin=$(spin_in pin --cpus 1)
eff=$(cat "$M/pin/cpuset.cpus.effective")
expect "the module's cpuset.cpus.effective is 1 ($eff)" [ "$eff" = 1 ]
allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$pin/status")
expect "the loop's Cpus_allowed_list is 1 ($allowed)" [ "$allowed" = 1 ]
# Field 39 (processor): the 37th after the ") " that ends the command's name.
cpus=$(for _ in $(seq 20); do sed 's/.*) //' "/proc/$pin/stat" | awk '{ print $37 }'; sleep 0.1; done | sort | uniq -c | awk '{ printf "cpu %s: %s; ", $2, $1 }')
expect "20 samples of the CPU it ran on are all CPU 1 (${cpus%; })" [ "$cpus" = "cpu 1: 20; " ]
kill "$pin" 2> /dev/null || true
check_end

sandbox_down
