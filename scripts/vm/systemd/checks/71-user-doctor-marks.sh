# shellcheck shell=bash
# user-doctor-marks: doctor as the user of a user manager's ck-subc.service (the incident's own
# setting) reads the owner rule of systemd-oomd's marks: daemon/ is the user's, not root's, so
# systemd-oomd's swap path (ManagedOOMSwap=kill, on the system's -.slice in Fedora and Ubuntu,
# which the user manager does not show) would ignore its user.oomd_omit. doctor names that, with
# the fix; then, daemon/ handed to root (the fix), it says the mark counts on every path.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
check_begin user-doctor-marks
user_service_up
# marks JSON: doctor's `systemd-oomd marks` check, as the user, on the user service.
marks() {
  u "$CK" --json doctor --user --unit ck-subc.service --root "$USVC" 2> /dev/null |
    jq -c '.checks[] | select(.name == "systemd-oomd marks")' || true
}
m=$(marks)
echo "as the user: $m"
expect "doctor says daemon/ is the user's, not root's ($(stat -c %u "$USVC/daemon"))" \
  eval 'jq -e ".detail | test(\"daemon/ is owned by uid $uid, not root\")" <<< "$m" > /dev/null'
expect "doctor names the swap path as ignoring the mark, with the fix" \
  eval 'jq -e "(.outcome != \"ok\") and (.detail | test(\"ManagedOOMSwap=kill\")) and (.detail | test(\"ignore\")) and (.fix | test(\"root-owned\"))" <<< "$m" > /dev/null'
# The fix: root owns the directory (its files stay the user's: the daemon still moves through them).
chown root "$USVC/daemon"
m=$(marks)
echo "daemon/ root's: $m"
expect "with daemon/ root's, doctor says the mark counts on every path" \
  eval 'jq -e "(.outcome == \"ok\") and (.detail | test(\"root-owned\"))" <<< "$m" > /dev/null'
chown "$uid" "$USVC/daemon"
rc=0; u systemctl --user stop ck-subc.service || rc=$?
expect "systemctl --user stop exit 0 ($rc)" [ "$rc" = 0 ]
timeout 30 loginctl disable-linger lane || true
check_end
