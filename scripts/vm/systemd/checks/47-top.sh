# shellcheck shell=bash
# `ck-cgroup top` in a real terminal: a detached tmux session (a pseudo-terminal, as over ssh)
# runs `ck-cgroup --unit ck-subc.service top` (the root from systemd over D-Bus) against the live
# service. The screen shows the header and the service's modules a b c with figures from every
# controller; `q` ends it with exit 0; the terminal's settings (`stty -a`) are the same after as
# before, and top left nothing running.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# shellcheck source=/dev/null # written by scripts/vm/systemd/build-initramfs: CHECK_TIMEOUT, REPO
. /lane/env
check_begin top-tmux
is_active || systemctl start "$UNIT"
expect "ck-subc.service runs modules a b c" wait_until 60 all_running
if ! command -v tmux > /dev/null; then
  expect "tmux is in the guest root" false
  check_end
  exit 0
fi
export TERM=xterm
rm -f /tmp/top.before /tmp/top.after /tmp/top.exit
tmux kill-server 2> /dev/null || true
tmux new-session -d -s top -x 160 -y 40 \
  "stty -a > /tmp/top.before; ck-cgroup --unit $UNIT top --interval 1; echo \$? > /tmp/top.exit; stty -a > /tmp/top.after; sleep 60"
pane() { tmux capture-pane -p -t top 2> /dev/null || true; }
rows() { pane | grep -cE '^(a|b|c) ' || true; }
expect "top draws the header (sorted by mem, 3 modules)" \
  wait_until 30 eval 'pane | grep -q "3 modules .*sorted by mem"'
expect "top shows modules a b c in the pane" wait_until 10 eval '[ "$(rows)" = 3 ]'
screen=$(pane)
echo "$screen"
# Every controller is delegated here: memory is read from memory.current, not summed from /proc.
expect "the figures come from the memory controller (no /proc fallback mark)" \
  eval '! grep -q "summed from VmRSS" <<< "$screen"'
expect "top is still running after 3 s (it waits for q)" eval 'sleep 3; [ ! -e /tmp/top.exit ]'
tmux send-keys -t top q
expect "q ends top with exit 0 ($(cat /tmp/top.exit 2> /dev/null || echo none))" \
  wait_until 10 eval '[ "$(cat /tmp/top.exit 2> /dev/null)" = 0 ]'
expect "the terminal's settings are as before top" \
  wait_until 5 eval '[ -s /tmp/top.after ] && cmp -s /tmp/top.before /tmp/top.after'
tmux kill-server 2> /dev/null || true
expect "no top is left running" eval '! pgrep -f "ck-cgroup --unit $UNIT top" > /dev/null'
check_end
