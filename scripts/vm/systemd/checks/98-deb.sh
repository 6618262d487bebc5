# shellcheck shell=bash
# The Debian packages' lifecycle under systemd as PID 1: scripts/build-deb's ck-cgroup and
# ck-subc-units (built on the host by scripts/vm/systemd/build-debs with the helper under test,
# read through the repository's share), with ck-subc-lane-daemon providing ck-subc-daemon.
# dpkg -i (nothing enabled or started), the operator's `systemctl enable --now`, an upgrade to the
# next revision (the running daemon is neither stopped nor restarted), dpkg -r (prerm stops the
# service), dpkg -P (no file, enable link or deb-systemd-helper state left). The packages
# replace the make-installed copy the other checks use: its files are saved first and put back
# at the end, so this check runs last.
set -euo pipefail
# shellcheck source=scripts/vm/systemd/guest/lib-systemd.sh
. /lane/lib-systemd.sh
# shellcheck source=/dev/null # written by scripts/vm/systemd/build-initramfs: REPO
. /lane/env
D=$REPO/target/vm/systemd/debs
check_begin deb-lifecycle
deb1=$(ls "$D"/ck1/ck-cgroup_*.deb 2> /dev/null || true)
units1=$(ls "$D"/ck1/ck-subc-units_*.deb 2> /dev/null || true)
deb2=$(ls "$D"/ck2/ck-cgroup_*.deb 2> /dev/null || true)
units2=$(ls "$D"/ck2/ck-subc-units_*.deb 2> /dev/null || true)
dummy=$D/ck-subc-lane-daemon_1_all.deb
if [ -z "$deb1" ] || [ -z "$units1" ] || [ -z "$deb2" ] || [ -z "$units2" ] || [ ! -f "$dummy" ]; then
  expect "the host built the packages ($(cat "$D/why" 2> /dev/null || echo "none in $D"))" false
  check_end
  exit 0
fi
v1=$(dpkg-deb -f "$deb1" Version) v2=$(dpkg-deb -f "$deb2" Version)
PKGS=(ck-subc-units ck-cgroup ck-subc-lane-daemon)
# status_of PKG: dpkg's status letters and version ("ii 0.1.0-0~ck1"); empty when dpkg has no
# record of it.
status_of() { dpkg-query -W -f '${db:Status-Abbrev}${Version}' "$1" 2> /dev/null | tr -s ' ' || true; }
is_status() { [ "$(status_of "$1")" = "$2" ]; }
# forgotten PKG: not installed and no conffile kept (purged, or never there).
forgotten() { local s; s=$(status_of "$1"); [ -z "$s" ] || [ "${s:0:2}" = un ] || [ "${s:0:2}" = pn ]; }
helper_version() { ck-cgroup --version 2> /dev/null | awk '{ print $2 }'; }
# The make-installed copy (what the other checks use), by the packages' own paths (through the
# root's /lib -> usr/lib where the deb says /lib), saved to be put back.
bak=$(mktemp -d)
deb_paths() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }'; }
mapfile -t files < <(deb_paths "$deb1"; deb_paths "$units1")
saved=()
for p in "${files[@]}"; do
  if [ -e "$p" ] || [ -L "$p" ]; then saved+=("${p#/}"); fi
done
[ "${#saved[@]}" = 0 ] || tar -C / -cf "$bak/installed.tar" "${saved[@]}"
echo "saved the make-installed copy: ${#saved[@]} files"
sctl stop "$UNIT" 2> /dev/null || true
sctl disable "$UNIT" 2> /dev/null || true

elapsed() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
t=$(date +%s%N)
# 1. Install.
rc=0; dpkg -i "$dummy" "$deb1" "$units1" || rc=$?
expect "dpkg -i of the three packages exit 0 ($rc)" [ "$rc" = 0 ]
s=$(status_of ck-cgroup) u=$(status_of ck-subc-units)
expect "ck-cgroup and ck-subc-units installed ($s; $u)" eval 'is_status ck-cgroup "ii $v1" && is_status ck-subc-units "ii $v1"'
missing=$(for p in "${files[@]}"; do [ -e "$p" ] || [ -L "$p" ] || echo "$p"; done)
expect "every file of the packages is there (${#files[@]} files; missing: ${missing:-none})" [ -z "$missing" ]
ver=$(helper_version || true)
expect "the packaged ck-cgroup --version runs (${ver:-nothing})" [ "$ver" = "${v1%%-*}" ]
frag=$(sctl show -P FragmentPath "$UNIT")
expect "systemd loads the packaged unit ($frag)" [ "$(readlink -f "$frag")" = "$(readlink -f /lib/systemd/system/ck-subc.service)" ]
en=$(sctl is-enabled "$UNIT" 2> /dev/null || true) ac=$(sctl is-active "$UNIT" 2> /dev/null || true)
expect "the install enabled and started nothing ($en, $ac)" eval '[ "$en" = disabled ] && [ "$ac" = inactive ]'
dsh=/var/lib/systemd/deb-systemd-helper-enabled
expect "deb-systemd-helper records the unit's enable link ($(tr '\n' ' ' < "$dsh/ck-subc.service.dsh-also" 2> /dev/null))" \
  grep -qx /etc/systemd/system/multi-user.target.wants/ck-subc.service "$dsh/ck-subc.service.dsh-also"

note "install $(elapsed "$t") s"; t=$(date +%s%N)
# 2. The operator enables and starts it.
rc=0; sctl enable --now "$UNIT" || rc=$?
expect "systemctl enable --now exit 0 ($rc)" [ "$rc" = 0 ]
expect "modules a b c run" wait_until 30 all_running
SVC=$(svc_cg) pid=$(main_pid)
before=$(subtree_pids "$SVC")
echo "running: daemon $pid, service processes $before"

t=$(date +%s%N)
# 3. Upgrade to the next revision.
rc=0; dpkg -i "$deb2" "$units2" || rc=$?
expect "dpkg -i of the next revision exit 0 ($rc)" [ "$rc" = 0 ]
s=$(status_of ck-cgroup) u=$(status_of ck-subc-units)
expect "both upgraded ($s; $u)" eval 'is_status ck-cgroup "ii $v2" && is_status ck-subc-units "ii $v2"'
expect "the upgrade kept the daemon running: no stop, no restart (pid $pid, now $(main_pid))" \
  eval 'is_active && [ "$(main_pid)" = "$pid" ]'
expect "still enabled ($(sctl is-enabled "$UNIT" 2> /dev/null || true))" [ "$(sctl is-enabled "$UNIT" 2> /dev/null)" = enabled ]
ver=$(helper_version || true)
expect "ck-cgroup --version runs after the upgrade (${ver:-nothing})" [ "$ver" = "${v2%%-*}" ]

note "upgrade $(elapsed "$t") s"; t=$(date +%s%N)
# 4. Remove: prerm stops the service.
rc=0; dpkg -r "${PKGS[@]}" || rc=$?
expect "dpkg -r exit 0 ($rc)" [ "$rc" = 0 ]
ac=$(sctl is-active "$UNIT" 2> /dev/null || true)
expect "the removal stopped the service ($ac)" eval '[ "$ac" = inactive ] || [ "$ac" = failed ]'
# shellcheck disable=SC2086 # pids, one word each
expect "no process of the service is alive (of: $before)" none_alive $before
expect "the service's cgroup is gone" wait_until 10 not_exists "$SVC"
s=$(status_of ck-cgroup) u=$(status_of ck-subc-units)
# rc: removed, its conffile (ck-cgroup) or its postrm (both) kept for the purge.
expect "both removed, kept for the purge ($s; $u)" eval 'is_status ck-cgroup "rc $v2" && is_status ck-subc-units "rc $v2"'
link=/etc/systemd/system/multi-user.target.wants/ck-subc.service
note "after dpkg -r the enable link is $([ -L "$link" ] && echo "still there (a purge removes it)" || echo gone)"

note "remove $(elapsed "$t") s"; t=$(date +%s%N)
# 5. Purge.
rc=0; dpkg -P "${PKGS[@]}" || rc=$?
expect "dpkg -P exit 0 ($rc)" [ "$rc" = 0 ]
s=$(status_of ck-cgroup)
expect "dpkg has forgotten the packages (${s:-no record})" eval 'forgotten ck-cgroup && forgotten ck-subc-units && forgotten ck-subc-lane-daemon'
left=$(for p in "${files[@]}" /etc/ck-cgroup/policy.toml; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done || true)
expect "no file of the packages is left (${#files[@]} checked; left: ${left:-none})" [ -z "$left" ]
links=$(find /etc/systemd/system /etc/systemd/user -name 'ck-subc.service' 2> /dev/null | tr '\n' ' ' || true)
expect "no enable link of ck-subc.service under /etc/systemd (${links:-none})" [ -z "$links" ]
state=$(find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-user-helper-enabled \
  /var/lib/systemd/deb-systemd-helper-masked /var/lib/systemd/deb-systemd-user-helper-masked \
  -name '*ck-subc*' 2> /dev/null | tr '\n' ' ' || true)
expect "no deb-systemd-helper state for it (${state:-none})" [ -z "$state" ]

note "purge $(elapsed "$t") s"
# The make-installed copy back, for whatever runs after.
[ ! -f "$bak/installed.tar" ] || tar -C / -xf "$bak/installed.tar"
rm -rf "$bak"
sctl daemon-reload
frag=$(sctl show -P FragmentPath "$UNIT")
expect "the make-installed copy is back (ck-cgroup $(helper_version || true), unit ${frag:-none})" \
  eval '[ -n "$frag" ] && [ -x /usr/bin/ck-cgroup ]'
check_end
