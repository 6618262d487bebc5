# Helpers for the systemd lane's check files (bash). Source it: . /lane/lib-systemd.sh
# It sources lane 1's /lane/lib.sh (check_begin, expect, note, check_end, wait_until, keyed,
# alive, none_alive, ...) and points $CK at the installed helper.
. /lane/lib.sh
CK=/usr/bin/ck-cgroup
MEMHOG=/lane/bin/memhog
FORKN=/lane/bin/forkn
T=/run/ck-subc-test
UNIT=ck-subc.service

svc_cg() {  # the service's cgroup directory ("" when the unit has none)
  local cg
  cg=$(systemctl show -P ControlGroup "$UNIT")
  [ -n "$cg" ] && echo "$CG$cg"
}
main_pid() { systemctl show -P MainPID "$UNIT"; }
mod_pid() { cat "$T/$1.pid" 2> /dev/null; }
starts() { cat "$T/$1.starts" 2> /dev/null || echo 0; }
# subtree_pids DIR: every pid in DIR and below, sorted, one line.
subtree_pids() { find "$1" -name cgroup.procs -exec cat {} + 2> /dev/null | sort -n | tr '\n' ' '; }
# subtree_dirs DIR: every cgroup directory in DIR and below, relative, sorted, one line.
subtree_dirs() { (cd "$1" && find . -type d | sort | tr '\n' ' '); }
is_active() { [ "$(systemctl is-active "$UNIT")" = active ]; }
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
journal_since() { journalctl -q --no-pager -o short-monotonic -u "$UNIT" --since "@$1"; }

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
u() { runuser -u lane -- env XDG_RUNTIME_DIR="/run/user/$uid" "$@"; }
umod_pid() { cat "$UT/$1.pid" 2> /dev/null; }
ustarts() { cat "$UT/$1.starts" 2> /dev/null || echo 0; }
# urunning ID: the module's main process is alive and in the user service's module ($USVC).
urunning() { local p; p=$(umod_pid "$1"); [ -n "$p" ] && alive "$p" && grep -qx "$p" "$USVC/subc-modules/$1/cgroup.procs" 2> /dev/null; }
uall() { urunning a && urunning b && urunning c; }
urestarted() { [ "$(ustarts "$1")" -gt "$2" ] && urunning "$1"; }
# ujournal_since T: the user service's journal since T: its own processes' lines and its user
# manager's lines about it. (`journalctl --user-unit` run as root also matches _UID=0, so it
# finds nothing.)
ujournal_since() {
  journalctl -q --no-pager -o short-monotonic --since "@$1" \
    _SYSTEMD_USER_UNIT=ck-subc.service + USER_UNIT=ck-subc.service 2> /dev/null || true
}
