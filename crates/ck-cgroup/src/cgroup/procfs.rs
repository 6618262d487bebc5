//! `/proc/<pid>/` files read as bytes. A process names itself (`comm`, `prctl(PR_SET_NAME)`) with
//! any bytes, and `stat` and `status` carry that name: read as UTF-8 text, the read of a process
//! whose name is not UTF-8 failed and the process was left out (of `ps`, of `place`'s checks, of a
//! threaded cgroup's members). The other fields are ASCII, so the lossy text parses as before;
//! the name itself is taken from the bytes ([`stat_name`]).

use std::io;

/// `/proc/<pid>/<file>` as text, any byte that is not UTF-8 replaced (U+FFFD): for the fields
/// that are numbers and letters. `Err` where it cannot be read (the process is gone).
pub fn read_text(pid: u32, file: &str) -> io::Result<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/{file}"))?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The name in `/proc/<pid>/stat` (field 2, between the first `(` and the last `)`) as its
/// bytes; `None` where the text has no such field.
pub fn stat_name(stat: &[u8]) -> Option<&[u8]> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(open + 1..close)
}

/// When process `pid` started, in clock ticks since boot: `/proc/<pid>/stat` field 22
/// (`starttime`); `None` where it cannot be read (the process is gone).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    start_ticks_of(&stat)
}

/// Field 22 of a `/proc/<pid>/stat` text: the fields after the name's last `)` start at 3.
fn start_ticks_of(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
}

/// Now, in the clock ticks of [`start_ticks`]: `CLOCK_BOOTTIME` (`clock_gettime(2)`) times
/// `sysconf(_SC_CLK_TCK)`, rounded down.
pub fn now_ticks() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let hz = rustix::param::clock_ticks_per_second();
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(hz)
        .saturating_add(nanos.saturating_mul(hz) / 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_of_any_bytes_is_taken_whole() {
        assert_eq!(stat_name(b"42 (a) b)) S 1 42"), Some(&b"a) b)"[..]));
        assert_eq!(stat_name(b"42 (\xff\xfe) S 1"), Some(&b"\xff\xfe"[..]));
        assert_eq!(stat_name(b"42 () S 1"), Some(&b""[..]));
        assert_eq!(stat_name(b"garbage"), None);
    }

    #[test]
    fn a_start_time_is_field_22_whatever_the_name() {
        let stat = b"42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 999 1";
        assert_eq!(start_ticks_of(stat), Some(12345));
        assert_eq!(start_ticks_of(b"42 (x) S 1"), None);
        let mine = start_ticks(std::process::id()).expect("this process's start");
        assert!(mine <= now_ticks(), "{mine} > {}", now_ticks());
    }

    #[test]
    fn the_text_of_this_process_reads() {
        let t = read_text(std::process::id(), "stat").unwrap();
        assert!(crate::cgroup::parse::proc_stat(&t).is_some(), "{t}");
    }
}
