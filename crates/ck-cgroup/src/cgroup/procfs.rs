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
    fn the_text_of_this_process_reads() {
        let t = read_text(std::process::id(), "stat").unwrap();
        assert!(crate::cgroup::parse::proc_stat(&t).is_some(), "{t}");
    }
}
