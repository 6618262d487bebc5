# shellcheck shell=bash
# Helpers for the systemd lane's check files (bash). Source it: . /lane/lib-systemd.sh
# It sources lane 1's /lane/lib.sh (check_begin, expect, note, check_end, wait_until, keyed,
# alive, none_alive, ...) and points $CK at the installed helper.
# shellcheck source=scripts/vm/guest/lib.sh
. /lane/lib.sh
CK=/usr/bin/ck-cgroup
# shellcheck disable=SC2034 # for the check files that source this
MEMHOG=/lane/bin/memhog FORKN=/lane/bin/forkn
T=/run/ck-subc-test
UNIT=ck-subc.service

# systemctl with a limit: a manager that does not answer fails the check that asked, instead of
# using up the check file's time.
sctl() { timeout 30 systemctl "$@"; }
svc_cg() {  # the service's cgroup directory ("" when the unit has none)
  local cg
  cg=$(sctl show -P ControlGroup "$UNIT")
  [ -n "$cg" ] && echo "$CG$cg"
}
main_pid() { sctl show -P MainPID "$UNIT"; }
mod_pid() { cat "$T/$1.pid" 2> /dev/null; }
# starts ID: how many times the daemon started the module; fails when that cannot be read.
starts() { cat "$T/$1.starts"; }
# subtree_pids DIR: every pid in DIR and below, sorted, one line.
subtree_pids() { find "$1" -name cgroup.procs -exec cat {} + 2> /dev/null | sort -n | tr '\n' ' '; }
# subtree_dirs DIR: every cgroup directory in DIR and below, relative, sorted, one line.
subtree_dirs() { (cd "$1" && find . -type d | sort | tr '\n' ' '); }
is_active() { [ "$(sctl is-active "$UNIT")" = active ]; }
# module_running ID: the module's main process is alive and inside the module ($SVC when set: a
# `systemctl show` per poll is slow under TCG).
module_running() {
  local pid
  pid=$(mod_pid "$1")
  [ -n "$pid" ] && alive "$pid" &&
    grep -qx "$pid" "${SVC:-$(svc_cg)}/subc-modules/$1/cgroup.procs" 2> /dev/null
}
all_running() { module_running a && module_running b && module_running c; }
# restarted ID OLD_STARTS: the daemon has started the module again and it runs.
restarted() { [ "$(starts "$1")" -gt "$2" ] && module_running "$1"; }
# journal_since T: the unit's journal since T. `--sync` first: journald takes PID 1's lines and
# the daemon's output on separate paths, and a query right after an event can miss the later.
journal_since() {
  journalctl --sync 2> /dev/null || true
  journalctl -q --no-pager -o short-monotonic -u "$UNIT" --since "@$1"
}

# The user manager (checks 70, 72): a lingering user `lane` and its manager.
# user_up: make the user, enable lingering, wait for user@UID.service and its private socket;
# sets $uid and $UT (the stand-in daemon's test files under that user).
user_up() {
  id -u lane > /dev/null 2>&1 || useradd -m -s /bin/bash lane
  uid=$(id -u lane)
  UT=/run/user/$uid/ck-subc-test
  loginctl enable-linger lane
  wait_until 60 user_manager_up
}
user_manager_up() { [ -S "/run/user/$uid/systemd/private" ] && [ "$(systemctl is-active "user@$uid.service")" = active ]; }
u() {
  runuser -u lane -- env XDG_RUNTIME_DIR="/run/user/$uid" \
    DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" "$@"
}
# user_service_up: the user's manager (user_up) and its ck-subc.service started, with a b c
# running in it; sets $USVC, the service's cgroup directory.
user_service_up() {
  local rc=0
  expect "the user's manager runs" user_up
  u systemctl --user start ck-subc.service || rc=$?
  expect "systemctl --user start ck-subc exit 0 ($rc)" [ "$rc" = 0 ]
  USVC=$CG$(u systemctl --user show -P ControlGroup ck-subc.service)
  expect "modules a b c run in the user service" wait_until 30 uall
}
umod_pid() { cat "$UT/$1.pid" 2> /dev/null; }
ustarts() { cat "$UT/$1.starts"; }
# urunning ID: the module's main process is alive and in the user service's module ($USVC).
urunning() { local p; p=$(umod_pid "$1"); [ -n "$p" ] && alive "$p" && grep -qx "$p" "$USVC/subc-modules/$1/cgroup.procs" 2> /dev/null; }
uall() { urunning a && urunning b && urunning c; }
urestarted() { [ "$(ustarts "$1")" -gt "$2" ] && urunning "$1"; }
# ujournal_since T: the user service's journal since T: its own processes' lines and its user
# manager's lines about it. (`journalctl --user-unit` run as root also matches _UID=0, so it
# finds nothing.)
ujournal_since() {
  journalctl --sync 2> /dev/null || true
  journalctl -q --no-pager -o short-monotonic --since "@$1" \
    _SYSTEMD_USER_UNIT=ck-subc.service + USER_UNIT=ck-subc.service 2> /dev/null || true
}

# The systemd-oomd scenario: one module hoards, oomd kills it alone, the daemon restarts it and
# ck-cgroup says who killed it. Run by 22 (the system manager, the pressure path), 73 (the user
# manager, the pressure path), 77 (the user manager, the swap path) and 955 (the system manager
# with the real daemon), each with its own trigger (oomd_monitor, -.slice's ManagedOOMSwap).
# oomd_side SIDE: the service the scenario runs against, from the check's start $t0:
#   system  the installed ck-subc.service ($SVC) and its stand-in daemon: a hoards, b c live on
#   user    the user lane's ck-subc.service ($USVC), its stand-in daemon, ck-cgroup run as lane
#   real    the installed service ($SVC) with the real daemon: hog hoards, orph deaf live on; its
#           `ck-cgroup run` removes a module's directory when the module's command ends, so what
#           ck-cgroup read before that rmdir is run's report in the daemon's capture of hog's
#           stderr, not the directory's marks or `status`
oomd_side() {
  OS=$1
  case $OS in
    system) OS_SVC=$SVC OS_FILES=$T OS_HOARD=a OS_OTHERS="b c" ;;
    user) OS_SVC=$USVC OS_FILES=$UT OS_HOARD=a OS_OTHERS="b c" ;;
    real) OS_SVC=$SVC OS_FILES=$T OS_HOARD=hog OS_OTHERS="orph deaf" ;;
  esac
  OS_DIR=$OS_SVC/subc-modules/$OS_HOARD
}
# os CMD...: CMD as the service's user.
os() { if [ "$OS" = user ]; then u "$@"; else "$@"; fi; }
os_systemctl() { if [ "$OS" = user ]; then u systemctl --user "$@" ck-subc.service; else sctl "$@" "$UNIT"; fi; }
# os_pid, os_starts, os_restarted: the side's own helpers (mod_pid or umod_pid, ...).
os_pid() { if [ "$OS" = user ]; then umod_pid "$1"; else mod_pid "$1"; fi; }
os_starts() { if [ "$OS" = user ]; then ustarts "$1"; else starts "$1"; fi; }
os_restarted() { if [ "$OS" = user ]; then urestarted "$@"; else restarted "$@"; fi; }
# os_others_kept: each of the others runs with the pid it had before the hoard ($p0).
os_others_kept() {
  local id p
  for id in $OS_OTHERS; do
    p=$(os_pid "$id")
    [[ " $p0" = *" $p "* ]] && alive "$p" || return 1
  done
}
os_journal_since() { if [ "$OS" = user ]; then ujournal_since "$1"; else journal_since "$1"; fi; }
# os_kernel_kills: the kernel's OOM kills of the hoarder: its memory.events oom_kill; for the real
# daemon, whose run removes the killed directory, its lines in dmesg.
os_kernel_kills() {
  if [ "$OS" = real ]; then
    dmesg | grep -c "oom_memcg=.*/subc-modules/$OS_HOARD," || true
  else
    keyed "$OS_DIR/memory.events" oom_kill
  fi
}
# oomd_hoard: the hoarder restarted with a hoard (`memchurn 128` past its memory.max 64M,
# memory.swap.max 256M: the stand-in daemon's limits file, the real daemon's subc.jsonc), then
# waited on until it died and the daemon restarted it again. Sets what oomd_judge compares: mp
# (the daemon's pid), p0 (the others' pids), k0 o0 (the kernel's kills, user.oomd_ooms), s1 s2
# (the hoard's start, the restart after its death).
oomd_hoard() {
  local sa id
  mp=$(os_systemctl show -P MainPID) p0='' sa=$(os_starts "$OS_HOARD")
  for id in $OS_OTHERS; do p0+="$(os_pid "$id") "; done
  k0=$(os_kernel_kills) o0=$(xattr "$OS_DIR" user.oomd_ooms)
  echo "before: daemon $mp, $OS_HOARD $(os_pid "$OS_HOARD") started $sa times, $OS_OTHERS: $p0, kernel OOM kills $k0, user.oomd_ooms ${o0:-none}"
  [ "$OS" = real ] || echo "--memory-max 64M --memory-swap-max 256M" > "$OS_FILES/$OS_HOARD.limits"
  echo "exec $MEMCHURN 128" > "$OS_FILES/$OS_HOARD.once"
  [ "$OS" != user ] || chown lane "$OS_FILES/$OS_HOARD.limits" "$OS_FILES/$OS_HOARD.once"
  kill "$(os_pid "$OS_HOARD")"
  expect "the daemon restarted $OS_HOARD with the hoard" wait_until 30 os_restarted "$OS_HOARD" "$sa"
  # shellcheck disable=SC2034 # s1, s2: for the check's closing note
  s1=$(date +%s.%N)
  rm -f "$OS_FILES/$OS_HOARD.limits" # its next start (after the kill) has the daemon's usual limits
  expect "$OS_HOARD may swap: memory.swap.max 256M ($(cat "$OS_DIR/memory.swap.max" 2> /dev/null)), memory.max 64M ($(cat "$OS_DIR/memory.max" 2> /dev/null))" \
    eval '[ "$(cat "$OS_DIR/memory.swap.max")" = $((256 << 20)) ] && [ "$(cat "$OS_DIR/memory.max")" = $((64 << 20)) ]'
  expect "$OS_HOARD's hoard died and the daemon restarted $OS_HOARD" wait_until 90 os_restarted "$OS_HOARD" $((sa + 1))
  # shellcheck disable=SC2034 # see s1
  s2=$(date +%s.%N)
}
# oomd_judge WATCH_PID WATCH_OUT KILLED WHY: systemd-oomd killed the hoarder alone and ck-cgroup
# says so. Its journal has "Killed <the hoarder's cgroup> due to KILLED" (a grep pattern; WHY says
# it in words); the kernel's OOM killer did not kill it; the service, the daemon and the others
# live on, oomd marked none of daemon/ and the others; the hoarder's user.oomd_ooms and `status`
# count the kill (not for the real daemon: run removed that directory); watch (WATCH_PID, writing
# WATCH_OUT, stopped here) reports the oomd_kill, and an `emptied` after it names systemd-oomd
# (for the real daemon, if watch saw one before run removed the directory: it saw it 16 ms
# before the removal in one run and not at all in another); the journal shows no stop.
oomd_judge() {
  local watch_pid=$1 watch_out=$2 killed_re=$3 why=$4 o1 ojournal killed d json journal stops emptied
  # shellcheck disable=SC2154 # t0: the check's start, set by the check
  ojournal=$(oomd_journal_since "$t0")
  echo "$ojournal" | grep -v '^\[.*\]: *\(Memory\|Pressure\|Current\|Pgscan\|Last\)' || true
  killed=$(grep -m1 'Killed ' <<< "$ojournal" | sed 's/^[^]]*] //' || true)
  expect "systemd-oomd's journal names subc-modules/$OS_HOARD, $why (${killed:-no Killed line})" \
    grep -q "Killed ${OS_SVC#"$CG"}/subc-modules/$OS_HOARD due to $killed_re" <<< "$ojournal"
  expect "the kernel's OOM killer did not kill $OS_HOARD ($k0 before, $(os_kernel_kills) after)" \
    [ "$(os_kernel_kills)" = "$k0" ]
  expect "the service is active" eval '[ "$(os_systemctl is-active)" = active ]'
  expect "the daemon kept its pid ($mp)" eval '[ "$(os_systemctl show -P MainPID)" = "$mp" ]'
  expect "$OS_OTHERS kept their pids ($p0)" os_others_kept
  for d in daemon $OS_OTHERS; do
    [ "$d" = daemon ] || d=subc-modules/$d
    expect "oomd killed nothing in $d (user.oomd_ooms: $(xattr "$OS_SVC/$d" user.oomd_ooms))" \
      [ -z "$(xattr "$OS_SVC/$d" user.oomd_ooms)" ]
  done
  if [ "$OS" != real ]; then
    o1=$(xattr "$OS_DIR" user.oomd_ooms)
    expect "systemd-oomd marked the kill (user.oomd_ooms on subc-modules/$OS_HOARD: ${o0:-none} before, ${o1:-none} after)" \
      eval '[ -n "$o1" ] && [ "$o1" -gt "${o0:-0}" ]'
    expect "$OS_HOARD's user.oomd_kill counts the processes it killed ($(xattr "$OS_DIR" user.oomd_kill))" \
      eval '[ "$(xattr "$OS_DIR" user.oomd_kill)" -ge 1 ]'
    json=$(os "$CK" status --json "$OS_HOARD" --root "$OS_SVC")
    echo "$json"
    expect "ck-cgroup status --json $OS_HOARD: oomd_ooms >= 1 from user.oomd_ooms ($(jq -c '.modules[0].oomd_ooms' <<< "$json"))" \
      jq_is "$json" '.modules[0].oomd_ooms.value >= 1 and (.modules[0].oomd_ooms.source | test("user.oomd_ooms"))'
    expect "ck-cgroup status --json $OS_HOARD: oomd_kill >= 1 ($(jq -c '.modules[0].oomd_kill' <<< "$json"))" \
      jq_is "$json" '.modules[0].oomd_kill.value >= 1'
  fi
  kill "$watch_pid" 2> /dev/null || true
  wait "$watch_pid" 2> /dev/null || true
  grep -v '"memory_max"' "$watch_out" || true
  expect "watch reported $OS_HOARD's oomd_kill (from user.oomd_ooms)" \
    jq_lines_any "$watch_out" ".module == \"$OS_HOARD\" and .event == \"oomd_kill\" and .value >= 1 and .source == \"user.oomd_ooms\""
  expect "watch reported no oomd kill of $OS_OTHERS" \
    eval '! jq_lines_any "$watch_out" "(.module as \$m | \"$OS_OTHERS\" | split(\" \") | index(\$m)) and .event == \"oomd_kill\""'
  emptied="[.[] | select(.module == \"$OS_HOARD\")] | (map(.event) | index(\"oomd_kill\")) as \$i
    | [.[\$i + 1:][] | select(.event == \"emptied\")] | (length > 0 or \"$OS\" == \"real\")
      and all(.killed_by // [] | index(\"systemd-oomd\"))"
  expect "watch's emptied event for $OS_HOARD after the kill says systemd-oomd ($(jq -c -s "[.[] | select(.module == \"$OS_HOARD\" and .event == \"emptied\")] | map(.killed_by)" "$watch_out" 2> /dev/null | tr -d '\n'))" \
    jq -e -s "$emptied" "$watch_out"
  journal=$(os_journal_since "$t0")
  stops=$(grep -E 'Stopping|Stopped|Deactivated|Failed with result|Main process exited|Scheduled restart' <<< "$journal" || true)
  expect "the journal shows no stop of the service (${stops:-none})" [ -z "$stops" ]
}

# twenty_restarts WHERE DIR PROCS RESTART: replay 2's loop (checks 30, 72, 80). Twenty rounds
# of RESTART (a function that ends b's main process and waits for the new b with its orphan),
# b's processes (the file PROCS) remembered before each; then none of them may be alive, and
# DIR (WHERE names it) must hold as many processes and the same cgroup directories as before.
twenty_restarts() {
  local where=$1 dir=$2 procs=$3 restart=$4 n0 d0 n1 d1 t1 t2 i failed='' survivors p
  local -a b_pids=()
  n0=$(subtree_pids "$dir" | wc -w) d0=$(subtree_dirs "$dir")
  echo "before: b = $(tr '\n' ' ' < "$procs"); $n0 processes $where; dirs: $d0"
  t1=$(date +%s.%N)
  for i in $(seq 1 20); do
    # shellcheck disable=SC2207 # pids, one word each
    b_pids+=($(cat "$procs"))
    "$restart" || { failed=$i; break; }
  done
  t2=$(date +%s.%N)
  expect "20 restarts of b, each with its orphan (failed at: ${failed:-none})" [ -z "$failed" ]
  sleep 0.2
  survivors=$(for p in "${b_pids[@]}"; do alive "$p" && echo "$p $(tr '\0' ' ' < "/proc/$p/cmdline")"; done || true)
  expect "no process of an old b survives (${#b_pids[@]} pids checked; alive: ${survivors:-none})" [ -z "$survivors" ]
  n1=$(subtree_pids "$dir" | wc -w) d1=$(subtree_dirs "$dir")
  expect "processes $where: $n0 before, $n1 after" [ "$n0" = "$n1" ]
  expect "cgroup directories $where unchanged ($d1)" [ "$d0" = "$d1" ]
  note "20 restarts in $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }') s"
}
# oom_killed DIR: the cgroup's memory.events counts at least one OOM kill (unreadable: no).
oom_killed() {
  local n
  n=$(keyed "$1/memory.events" oom_kill 2> /dev/null) && [ -n "$n" ] && [ "$n" -ge 1 ]
}
# has_daemon_lines JOURNAL: the journal text holds the daemon's own lines, so that a check on
# what it lacks is not passed by an empty query.
has_daemon_lines() { grep -q 'ck-subc\[[0-9]*\]: .*module [a-z]' <<< "$1"; }

# The real daemon (checks 95, 96): subc-daemon 0.39.3 behind our bootstrap main
# (scripts/vm/real-daemon), installed as /usr/bin/ck-subc under the installed unit, its own
# placement off (SUBC_CGROUP_PLACEMENT=disabled), every module through `ck-cgroup run`:
#   hog   run --memory-max 64M --memory-swap-max 0 (replay 1's hog when $T/hog.once says so)
#   orph  run --grace 500ms; a reparented grandchild and a TERM-ignoring one
#   deaf  run (grace 10 s, past the daemon's 3 s drain); ignores TERM, with a TERM-ignoring orphan
# Each may restart 100 times in 600 s, 100 to 200 ms apart (the daemon's default: 3, then it
# gives up for 600 s). On SIGTERM the daemon sends TERM to each module's helper (`run` then stops
# the whole module) and SIGKILLs a helper still running after drain_timeout_ms.
REAL=/lane/bin/ck-subc-real
REAL_HOME=/var/lib/ck-subc-real
REAL_MODULES="hog orph deaf"
real_running() { local id; for id in $REAL_MODULES; do module_running "$id" || return 1; done; }
# real_daemon_up: the real daemon runs under the unit with modules hog orph deaf (idempotent).
# hog's memory.swap.max is $REAL_HOG_SWAP_MAX (default 0; the oomd check 955 lets it swap): a
# running real daemon whose subc.jsonc differs from the one wanted gets it and a restart (no
# daemon-reload: its drop-in is the same).
real_daemon_up() {
  local conf=$REAL_HOME/config/cortexkit/subc.jsonc
  if [ "$(readlink -f /usr/bin/ck-subc)" = "$(readlink -f "$REAL")" ] && is_active; then
    if [ "$(real_config)" != "$(cat "$conf" 2> /dev/null)" ]; then
      real_config > "$conf"
      systemctl restart "$UNIT"
    fi
    SVC=$(svc_cg)
    wait_until 60 real_running
    return
  fi
  systemctl stop "$UNIT" 2> /dev/null || true
  rm -rf "$T" && mkdir -p "$T"
  ln -sf "$REAL" /usr/bin/ck-subc
  # The daemon refuses a data directory others can read for its local socket: 0700 beforehand.
  mkdir -p /run/systemd/system/ck-subc.service.d "$REAL_HOME/config/cortexkit" \
    "$REAL_HOME/data/cortexkit/run"
  chmod 0700 "$REAL_HOME" "$REAL_HOME/data" "$REAL_HOME/data/cortexkit" "$REAL_HOME/data/cortexkit/run"
  cat > /run/systemd/system/ck-subc.service.d/real-daemon.conf << CONF
[Service]
Environment=HOME=$REAL_HOME XDG_CONFIG_HOME=$REAL_HOME/config XDG_DATA_HOME=$REAL_HOME/data
Environment=XDG_RUNTIME_DIR=/run/ck-subc-real SUBC_PORT=0 RUST_LOG=info
Environment=SUBC_CGROUP_PLACEMENT=disabled
RuntimeDirectory=ck-subc-real
RuntimeDirectoryMode=0700
CONF
  real_config > "$conf"
  echo "trap '' TERM; (sleep 1001 &); (sh -c 'trap \"\" TERM; exec sleep 1002' &); exec sleep infinity" > "$T/orph.cmd"
  echo "trap '' TERM; (sleep 1003 &); exec sleep infinity" > "$T/deaf.cmd"
  systemctl daemon-reload
  systemctl start "$UNIT"
  SVC=$(svc_cg)
  wait_until 60 real_running
}
# real_config: the real daemon's subc.jsonc.
real_config() {
  cat << JSON
{
  "version": 1,
  "drain_timeout_ms": 3000,
  "modules": {
    "hog": { "program": "/usr/bin/ck-cgroup", "protocol": "none",
      "restart": { "max_restarts": 100, "window_secs": 600, "backoff_ms": 100, "max_backoff_ms": 200 },
      "args": ["run", "hog", "--memory-max", "64M", "--memory-swap-max", "${REAL_HOG_SWAP_MAX:-0}", "--", "/lane/real-module", "hog"] },
    "orph": { "program": "/usr/bin/ck-cgroup", "protocol": "none",
      "restart": { "max_restarts": 100, "window_secs": 600, "backoff_ms": 100, "max_backoff_ms": 200 },
      "args": ["run", "orph", "--grace", "500ms", "--", "/lane/real-module", "orph"] },
    "deaf": { "program": "/usr/bin/ck-cgroup", "protocol": "none",
      "restart": { "max_restarts": 100, "window_secs": 600, "backoff_ms": 100, "max_backoff_ms": 200 },
      "args": ["run", "deaf", "--", "/lane/real-module", "deaf"] }
  }
}
JSON
}
# helper_pid ID: the `ck-cgroup run` process of a module: the parent of its namespace's init
# (the member whose innermost pid is 1).
helper_pid() {
  local p
  # shellcheck disable=SC2013 # pids, one a line
  for p in $(cat "$SVC/subc-modules/$1/cgroup.procs" 2> /dev/null); do
    if grep -qE '^NSpid:.*[[:space:]]1$' "/proc/$p/status" 2> /dev/null; then
      awk '/^PPid:/ { print $2 }' "/proc/$p/status"
      return
    fi
  done
  return 1
}
# real_daemon_down: the stand-in daemon back under the unit, stopped.
real_daemon_down() {
  systemctl stop "$UNIT" 2> /dev/null || true
  rm -f /run/systemd/system/ck-subc.service.d/real-daemon.conf
  rm -f /usr/bin/ck-subc && install -m 0755 /lane/ck-subc-standin /usr/bin/ck-subc
  systemctl daemon-reload
}

# loop_up IMG SIZE: a loop device over a sparse file IMG of SIZE (the guest's only kind of block
# device; the kernel's loop module is loaded by the initramfs); sets dev and majmin. The check
# detaches it (`losetup -d "$dev"`) at its end.
loop_up() {
  truncate -s "$2" "$1"
  dev=$(losetup --find --show "$1")
  majmin=$(cat "/sys/block/${dev#/dev/}/dev")
  echo "device $dev ($majmin)"
}

# The knob checks (64 to 67): a `ck-cgroup sandbox` held open in the background by its CMD (a
# sleep), so that the check's own shell drives the modules in it. sandbox_up exports
# CK_CGROUP_ROOT (the sandbox's root: a delegated scope, so every controller, cpuset included)
# and sets SB_PID (the sandbox) and SB_HOLD (its CMD). sandbox_down ends CMD: the sandbox then
# kills its modules and removes its scope.
sandbox_up() {
  local f=/run/lane-sandbox.root
  rm -f "$f"
  "$CK" sandbox -- bash -c 'echo "$CK_CGROUP_ROOT $$" > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 600' "$f" &
  SB_PID=$!
  wait_until 30 test -s "$f" || return 1
  read -r CK_CGROUP_ROOT SB_HOLD < "$f"
  export CK_CGROUP_ROOT
}
sandbox_down() {
  kill "$SB_HOLD" 2> /dev/null || true
  wait "$SB_PID" 2> /dev/null || true
  rm -f /run/lane-sandbox.root
  unset CK_CGROUP_ROOT
}
# spin_in ID FLAG...: a busy loop as module ID made with FLAGs (`ck-cgroup exec`, in the
# background); prints its pid once it is a member of the module.
spin_in() {
  local id=$1 pid
  shift
  "$CK" exec "$id" "$@" -- bash -c 'while :; do :; done' > /dev/null 2>&1 &
  pid=$!
  wait_until 20 is_member "$CK_CGROUP_ROOT/subc-modules/$id" "$pid" || return 1
  echo "$pid"
}

# systemd-oomd (checks 22, 23, 73, 97): Debian's systemd-oomd 252 acting on a unit with
# ManagedOOMMemoryPressure=kill (`systemctl set-property --runtime`: a drop-in under
# /run/systemd/system.control/, applied and sent to oomd without a daemon-reload, which takes 15
# to 25 s under TCG), its duration shortened by an oomd.conf drop-in. The guest has no swap of its
# own: without swap the kernel reclaims no anonymous memory, so a hoard makes no reclaim
# (memory.stat pgscan) and oomd's pressure path, which kills only with reclaim in the last 30 s
# and ranks candidates by pgscan rate, never acts. swap_up turns on swap in RAM (zram; the
# module is loaded by the initramfs) for the check; a module that may swap (its $T/ID.limits)
# and churns past its memory.max ($MEMCHURN) then reclaims and stalls without end, and nothing
# else in the service does.
# shellcheck disable=SC2034 # for the check files that source this
MEMCHURN=/lane/bin/memchurn
OOMD_DURATION=${OOMD_DURATION:-2s}   # DefaultMemoryPressureDurationSec= (oomd's minimum is 1 s)
OOMD_LIMIT=${OOMD_LIMIT:-20%}        # ManagedOOMMemoryPressureLimit= (PSI full avg10)
OOMD_SWAP_LIMIT=${OOMD_SWAP_LIMIT:-10%}  # oomd.conf SwapUsedLimit= (user-oomd-swap)
# swap_up [SIZE]: swap on /dev/zram0, SIZE (default 256M) of RAM at most (idempotent).
swap_up() {
  grep -q '^/dev/zram0 ' /proc/swaps && return 0
  [ -e /sys/block/zram0/disksize ] || { echo "no /sys/block/zram0 (is the zram module loaded?)"; return 1; }
  echo "${1:-256M}" > /sys/block/zram0/disksize && mkswap /dev/zram0 > /dev/null && swapon /dev/zram0
}
swaps() { tail -n +2 /proc/swaps | tr -s ' \t' ' ' | tr '\n' ' '; }
# swap_down: swap off, zram0 reset (its pages come back into RAM).
swap_down() {
  if grep -q '^/dev/zram0 ' /proc/swaps; then swapoff /dev/zram0 || return 1; fi
  echo 1 > /sys/block/zram0/reset
}
# oomd_up: systemd-oomd runs with DefaultMemoryPressureDurationSec=$OOMD_DURATION (the drop-in
# stays for the rest of the boot: it matters only to units with ManagedOOM*=kill).
oomd_up() {
  local conf=/run/systemd/oomd.conf.d/50-lane.conf want
  want=$(printf '[OOM]\nDefaultMemoryPressureDurationSec=%s' "$OOMD_DURATION")
  if [ "$(cat "$conf" 2> /dev/null)" != "$want" ] || ! systemctl -q is-active systemd-oomd.service; then
    mkdir -p "${conf%/*}" && echo "$want" > "$conf"
    sctl restart systemd-oomd.service || return 1
  fi
  wait_until 30 systemctl -q is-active systemd-oomd.service
}
# oomd_swap_limit PERCENT: systemd-oomd's SwapUsedLimit= (oomd.conf; its swap path acts when
# memory used and swap used are both above it) in a drop-in of its own, oomd restarted when it
# changes. oomd_swap_limit_default: the drop-in removed, oomd restarted (the default 90% again:
# -.slice has ManagedOOMSwap=kill from boot, so a low limit left behind would act in later checks).
oomd_swap_limit_default() {
  rm -f /run/systemd/oomd.conf.d/60-lane-swap.conf
  sctl restart systemd-oomd.service || return 1
  wait_until 30 systemctl -q is-active systemd-oomd.service
}
oomd_swap_limit() {
  local conf=/run/systemd/oomd.conf.d/60-lane-swap.conf want
  want=$(printf '[OOM]\nSwapUsedLimit=%s' "$1")
  if [ "$(cat "$conf" 2> /dev/null)" != "$want" ]; then
    mkdir -p "${conf%/*}" && echo "$want" > "$conf"
    sctl restart systemd-oomd.service || return 1
  fi
  wait_until 30 systemctl -q is-active systemd-oomd.service
}
# oomd_swap_monitored: systemd-oomd lists / among the cgroups it watches for swap (`oomctl dump`,
# its "Swap Monitored CGroups"; -.slice's cgroup is /).
oomd_swap_monitored() { oomctl dump 2> /dev/null | sed -n '/Swap Monitored CGroups/,/Memory Pressure Monitored CGroups/p' | grep -q 'Path: /$'; }
# oomd_monitor UNIT [PROPERTY=VALUE...]: the system manager's UNIT gets
# ManagedOOMMemoryPressure=kill, ManagedOOMMemoryPressureLimit=$OOMD_LIMIT and the PROPERTYs.
# oomd_unmonitor UNIT [PROPERTY=VALUE...]: back to ManagedOOMMemoryPressure=auto (the default).
oomd_monitor() {
  local unit=$1
  shift
  sctl set-property --runtime "$unit" ManagedOOMMemoryPressure=kill \
    "ManagedOOMMemoryPressureLimit=$OOMD_LIMIT" "$@"
}
oomd_unmonitor() {
  local unit=$1
  shift
  sctl set-property --runtime "$unit" ManagedOOMMemoryPressure=auto ManagedOOMMemoryPressureLimit=0% "$@"
}
# oomd_monitored CGPATH: systemd-oomd lists CGPATH (as /system.slice/...) among the cgroups it
# watches for memory pressure (`oomctl dump`).
oomd_monitored() { oomctl dump 2> /dev/null | grep -q "Path: $1\$"; }
# xattr DIR NAME: a cgroup's extended attribute (nothing when it has none).
xattr() { /lane/bin/cgxattr "$1" "$2" || true; }
# oomd_killed DIR: systemd-oomd killed in the cgroup (its user.oomd_ooms is 1 or more).
oomd_killed() { local n; n=$(xattr "$1" user.oomd_ooms); [ -n "$n" ] && [ "$n" -ge 1 ]; }
# oomd_journal_since T: systemd-oomd's journal since T.
oomd_journal_since() {
  journalctl --sync 2> /dev/null || true
  journalctl -q --no-pager -o short-monotonic -u systemd-oomd.service --since "@$1"
}
# wait_secs SECONDS CMD...: wait_until against the clock, polling every half second, for a CMD
# that is slow under TCG (journalctl): wait_until counts 50 ms polls, which such a CMD stretches
# many times over.
wait_secs() {
  local end=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.5
  done
}
# pressure_sampler DIR... &: every second, each DIR's memory.pressure full avg10 and pgscan (the
# two figures oomd acts on), one line, for the check's log.
pressure_sampler() {
  local d
  while :; do
    for d in "$@"; do
      printf '%s full %s pgscan %s | ' "${d##*/}" \
        "$(sed -n 's/^full avg10=\([^ ]*\).*/\1/p' "$d/memory.pressure" 2> /dev/null)" \
        "$(keyed "$d/memory.stat" pgscan 2> /dev/null)"
    done
    echo "swap $(awk '/zram0/ { print $4 }' /proc/swaps) at $(cut -d' ' -f1 /proc/uptime)"
    sleep 1
  done
}
