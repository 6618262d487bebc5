# shellcheck shell=bash
# The real daemon (subc-daemon 0.39.3, its placement off) under the installed unit, every module
# through `ck-cgroup run` (lib-systemd.sh: real_daemon_up). The checks:
#   real-daemon-hoard        hog past its memory.max is OOM-killed alone, whole module (oom.group);
#                            the daemon restarts it; the service and the other modules run on
#   real-daemon-helper-kill  SIGKILL of deaf's helper: nothing of deaf left within one second
#                            (kill-on-close: its namespace's init dies with it); the others
#                            untouched; the daemon restarts deaf
#   real-daemon-orphans      20 restarts of orph through the daemon, alternately by its command's
#                            exit (run stops the rest) and by SIGKILL of its helper (what the
#                            daemon's drain timeout does); processes and directories stay flat
# Mutation controls (docs/guest-lane.md): with CK_MUTATION=no-kill-on-close, helper-kill and orphans
# fail; with CK_MUTATION=no-oom-group-default, hoard fails.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
if [ ! -x "$REAL" ]; then
  why=$(cat /lane/real-daemon.why 2> /dev/null || echo "no $REAL")
  for c in hoard helper-kill orphans; do
    check_begin "real-daemon-$c"; expect "the real daemon was built ($why)" false; check_end
  done
  exit 0
fi
real_daemon_up
echo "service cgroup: $SVC; daemon: $(main_pid) $(tr '\0' ' ' < "/proc/$(main_pid)/cmdline")"
echo "daemon in: $(grep '^0::' "/proc/$(main_pid)/cgroup")"

check_begin real-daemon-hoard
mp=$(main_pid) po=$(mod_pid orph) pd=$(mod_pid deaf) sh0=$(starts hog)
t0=$(date +%s)
expect "the daemon runs in daemon/ ($(grep '^0::' "/proc/$mp/cgroup"))" grep -q '^0::.*/daemon$' "/proc/$mp/cgroup"
expect "hog's module has memory.max 64M ($(cat "$SVC/subc-modules/hog/memory.max"))" \
  [ "$(cat "$SVC/subc-modules/hog/memory.max")" = 67108864 ]
expect "hog's module has memory.oom.group 1 ($(cat "$SVC/subc-modules/hog/memory.oom.group"))" \
  [ "$(cat "$SVC/subc-modules/hog/memory.oom.group")" = 1 ]
echo "(sleep 1004 &); exec $MEMHOG 256" > "$T/hog.once"
kill "$(mod_pid hog)"  # the daemon restarts hog, whose next command is the hog
# grep reads all of dmesg (no -q): under pipefail, `dmesg | grep -q` fails when grep's early exit
# cuts dmesg's write ("dmesg: write error"), and a line that is there reads as not there.
hog_oom() { dmesg | grep 'oom_memcg=/.*/subc-modules/hog,' > /dev/null; }
expect "hog past its memory.max met the OOM killer" wait_until 60 hog_oom
# The kernel writes its group line right after the kill's (mem_cgroup_print_oom_group).
group_kill() { dmesg | grep 'subc-modules/hog are going to be killed due to memory.oom.group set' > /dev/null; }
expect "the kernel killed hog's whole module by memory.oom.group" wait_until 2 group_kill
dmesg | grep -E 'oom-kill:|Memory cgroup out of memory|memory.oom.group' | tail -n 4 || true
expect "the daemon restarted hog after the OOM kill (starts $sh0 -> $(starts hog))" \
  wait_until 60 restarted hog $((sh0 + 1))
expect "the service is active ($(sctl is-active "$UNIT"))" is_active
expect "the daemon kept its pid ($mp, now $(main_pid))" [ "$(main_pid)" = "$mp" ]
expect "orph kept its pid ($po)" eval '[ "$(mod_pid orph)" = "$po" ] && alive "$po"'
expect "deaf kept its pid ($pd)" eval '[ "$(mod_pid deaf)" = "$pd" ] && alive "$pd"'
journal=$(journal_since "$t0")
echo "$journal" | tail -n 12
stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited' <<< "$journal" || true)
expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
check_end

check_begin real-daemon-helper-kill
sd=$(starts deaf)
helper=$(helper_pid deaf || true)
old=$(tr '\n' ' ' < "$SVC/subc-modules/deaf/cgroup.procs")
others=$(cat "$SVC/subc-modules/hog/cgroup.procs" "$SVC/subc-modules/orph/cgroup.procs" | tr '\n' ' ')
echo "deaf's helper: ${helper:-none}; deaf's processes: $old; the others': $others"
expect "deaf's helper found (the parent of its namespace's init)" [ -n "$helper" ]
# shellcheck disable=SC2086
expect "deaf holds its init, its command and a TERM-ignoring orphan ($(echo $old | wc -w))" \
  [ "$(echo $old | wc -w)" -ge 3 ]
s0=$(date +%s.%N)
kill -KILL "$helper"
# shellcheck disable=SC2086
expect "nothing of deaf is left within one second of its helper's SIGKILL" wait_until 1 none_alive $old
s1=$(date +%s.%N)
note "deaf emptied in $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }') s"
all_alive() { local p; for p in "$@"; do alive "$p" || return 1; done; }
# shellcheck disable=SC2086 # one pid a word
expect "hog and orph untouched ($others)" all_alive $others
expect "the daemon restarted deaf (starts $sd -> $(starts deaf))" wait_until 60 restarted deaf "$sd"
check_end

check_begin real-daemon-orphans
O=$SVC/subc-modules/orph
round=0
# restart_orph: end orph (odd rounds: its command exits, and run stops the rest after 500 ms;
# even rounds: SIGKILL of its helper, kill-on-close), wait for the new orph with its 4 processes
# (init, command, the reparented grandchild, the TERM-ignoring one).
restart_orph() {
  local s h
  s=$(starts orph)
  round=$((round + 1))
  if [ $((round % 2)) = 1 ]; then
    kill -KILL "$(mod_pid orph)"
  else
    h=$(helper_pid orph) && kill -KILL "$h"
  fi
  wait_until 30 restarted orph "$s" && wait_until 10 has_procs "$O" 4
}
expect "orph runs with 4 processes" wait_until 10 has_procs "$O" 4
twenty_restarts "in the service" "$SVC" "$O/cgroup.procs" restart_orph
check_end
