# shellcheck shell=dash
# Helpers for the guest's check files (busybox sh in lane 1; lane 2's bash sources it too through
# lib-systemd.sh). Source it: . /lane/lib.sh
#
# A check:
#   check_begin NAME            start a named check
#   expect "DESCRIPTION" CMD... run CMD; the check fails if it fails (DESCRIPTION says what was
#                               expected, with the values seen)
#   note "TEXT"                 add TEXT to the check's detail
#   check_end                   print CHECK NAME PASS|FAIL DETAIL
# A file may hold several checks.

CG=/sys/fs/cgroup
CK=/lane/bin/ck-cgroup
# shellcheck disable=SC2034 # for the check files that source this
MEMHOG=/lane/bin/memhog FORKN=/lane/bin/forkn

check_begin() {
  _check=$1
  _passed=""
  _failed=""
  echo "== check $_check"
}
_append() {  # _append VAR TEXT: VAR="VAR; TEXT"
  eval "_cur=\${$1}"
  if [ -z "$_cur" ]; then eval "$1=\$2"; else eval "$1=\"\$_cur; \$2\""; fi
}
expect() {
  local what=$1
  shift
  if "$@"; then
    echo "ok:     $what"
    _append _passed "$what"
  else
    echo "FAILED: $what"
    _append _failed "$what"
  fi
}
note() {
  echo "note:   $1"
  _append _passed "$1"
}
check_end() {
  if [ -z "$_failed" ]; then
    echo "CHECK $_check PASS $_passed"
  else
    echo "CHECK $_check FAIL not: $_failed"
  fi
}

# wait_until SECONDS CMD...: poll CMD every 50 ms until it succeeds; fail after SECONDS. CMD is
# run again each time: pass a function (has_procs DIR 7), not a "$(...)" evaluated once.
wait_until() {
  local left=$(( $1 * 20 ))
  shift
  while ! "$@"; do
    [ "$left" -gt 0 ] || return 1
    left=$(( left - 1 ))
    sleep 0.05
  done
}

# has_words "LIST" WORD...: every WORD is one of LIST's words.
has_words() {
  local list word
  # shellcheck disable=SC2086,SC2116 # $1's words, one space between them
  list=" $(echo $1) "
  shift
  for word in "$@"; do
    case "$list" in *" $word "*) ;; *) return 1 ;; esac
  done
}

# JSON (`--json` output, `watch` lines) is read with jq (/lane/bin/jq in lane 1, the root's in
# lane 2), never by matching substrings.
# jq_get JSON FILTER [JQ_ARG...]: jq -r FILTER of the JSON text.
jq_get() {
  local json=$1 filter=$2
  shift 2
  printf '%s\n' "$json" | jq -r "$@" "$filter"
}
# jq_is JSON FILTER [JQ_ARG...]: FILTER (a test, such as '.empty == true') holds for the JSON
# text: jq -e, so false, null, an error or text that is not JSON fail.
jq_is() {
  local json=$1 filter=$2
  shift 2
  printf '%s\n' "$json" | jq -e "$@" "$filter" > /dev/null
}
# jq_lines_any FILE FILTER [JQ_ARG...]: some line of FILE (one JSON value a line, as `watch`
# writes) passes the test FILTER. A line cut short, or a file that is not there, fails.
jq_lines_any() {
  local file=$1 filter=$2
  shift 2
  jq -e -s "$@" "any(.[]; $filter)" "$file" > /dev/null 2>&1
}

# keyed FILE KEY: the value of KEY in a flat-keyed cgroup file (memory.events, pids.events).
keyed() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
count_procs() { wc -l < "$1/cgroup.procs" | tr -d ' '; }
has_procs() { [ "$(count_procs "$1")" = "$2" ]; }  # has_procs DIR N (for wait_until)
is_member() { grep -qx "$2" "$1/cgroup.procs"; }
populated() { [ "$(keyed "$1/cgroup.events" populated)" = 1 ]; }
# empty DIR: cgroup.events says populated 0 (a cgroup that is not there is not "empty").
empty() { [ "$(keyed "$1/cgroup.events" populated 2> /dev/null)" = 0 ]; }
# alive PID: the process exists and is not a zombie.
alive() {
  [ -r "/proc/$1/stat" ] || return 1
  [ "$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)" != Z ]
}
# none_alive PID...: none of them is alive; no pid at all is a failure (a list that could not
# be read must not pass).
none_alive() {
  local pid
  [ $# -gt 0 ] || return 1
  for pid in "$@"; do
    if alive "$pid"; then return 1; fi
  done
}
ppid_of() { sed -n 's/.*) . \([0-9]*\).*/\1/p' "/proc/$1/stat" 2>/dev/null; }
not_exists() { [ ! -e "$1" ]; }

# remove_tree DIR: SIGKILL everything below a cgroup and remove it, deepest first.
remove_tree() {
  [ -d "$1" ] || return 0
  echo 1 > "$1/cgroup.kill" 2>/dev/null || true
  wait_until 10 empty "$1" || true
  find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

# set_limit ID FILE VALUE --FLAG [ARG]: set a module's limit through `ck-cgroup set ID --FLAG
# [ARG]` when this build's `set` has --FLAG, else by writing VALUE to the module's FILE. Says which.
set_limit() {
  local id=$1 file=$2 value=$3
  shift 3
  if "$CK" set --help 2> /dev/null | grep -q -- "$1 "; then
    if "$CK" set "$id" "$@" > /dev/null; then
      echo "limit: ck-cgroup set $id $*"
    else
      echo "limit: ck-cgroup set $id $* FAILED"
    fi
  else
    echo "$value" > "$MODS/$id/$file"
    echo "limit: $value written to $file (this build's set has no $1)"
  fi
}

# service_new NAME: a service-like root $CG/NAME with a stand-in daemon (a sleep) in it, as systemd
# would start the daemon in its service cgroup. Sets SVC, MODS (its subc-modules/), DAEMON_PID and
# exports CK_CGROUP_ROOT. `ck-cgroup init` then moves the daemon into daemon/.
service_new() {
  SVC=$CG/$1
  MODS=$SVC/subc-modules
  mkdir "$SVC"
  sleep 3600 &
  DAEMON_PID=$!
  echo "$DAEMON_PID" > "$SVC/cgroup.procs"
  export CK_CGROUP_ROOT=$SVC
}
# service_end: kill and remove the whole service root, stand-in daemon included.
service_end() {
  remove_tree "$SVC"
  wait "$DAEMON_PID" 2>/dev/null || true
  unset CK_CGROUP_ROOT
}
