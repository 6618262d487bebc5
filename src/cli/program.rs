//! CMD found before anything is made: `exec`, `run`, `sandbox` and `init -- CMD` look the program
//! up as `execvp(3)` would, so that a command that cannot run (an empty name, one not found, one
//! not executable) is refused before a module, a sandbox or a layout is made for it.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use rustix::fs::{Access, AtFlags, CWD, FileType, accessat, stat};
use rustix::io::Errno;

use super::exit::{CmdEnd, cmd_status};

/// Why CMD cannot run, with the exit code the shell uses for it: 127 not found, 126 found but
/// not executable.
#[derive(Debug)]
pub struct NotRunnable {
    /// 126 or 127.
    pub code: u8,
    /// `failed to execute <prog>: <why>`.
    pub message: String,
}

/// Find `prog` as `execvp(3)` does: a name with a `/` is taken as it is; any other is looked up
/// in each directory of `PATH` (unset: `/bin:/usr/bin`, glibc's default; an empty entry is the
/// current directory). The first regular file there that this process may execute wins
/// (`faccessat(X_OK, AT_EACCESS)`, which also refuses a `noexec` mount). Returns the path to
/// execute; `argv[0]` stays `prog`.
pub fn resolve(prog: &str) -> Result<PathBuf, NotRunnable> {
    resolve_in(prog, std::env::var_os("PATH"))
}

fn resolve_in(prog: &str, path: Option<OsString>) -> Result<PathBuf, NotRunnable> {
    let fail = |errno: Errno| {
        let e = io::Error::from(errno);
        NotRunnable {
            code: cmd_status(if errno == Errno::NOENT || errno == Errno::NOTDIR {
                CmdEnd::NotFound
            } else {
                CmdEnd::NotExecutable
            }) as u8,
            message: format!("failed to execute {prog:?}: {e}"),
        }
    };
    if prog.is_empty() {
        return Err(fail(Errno::NOENT));
    }
    if prog.contains('\0') {
        return Err(NotRunnable {
            code: cmd_status(CmdEnd::NotFound) as u8,
            message: format!("failed to execute {prog:?}: it contains a NUL byte"),
        });
    }
    if prog.contains('/') {
        return runnable(PathBuf::from(prog)).map_err(fail);
    }
    let path = path.unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut saw = Errno::NOENT;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let mut candidate = if dir.is_empty() {
            b".".to_vec()
        } else {
            dir.to_vec()
        };
        candidate.push(b'/');
        candidate.extend_from_slice(prog.as_bytes());
        match runnable(PathBuf::from(OsString::from_vec(candidate))) {
            Ok(p) => return Ok(p),
            // As execvp: a candidate that exists but cannot be executed is remembered, and the
            // search goes on; at the end that is the error (126), else not found (127).
            Err(Errno::NOENT) | Err(Errno::NOTDIR) | Err(Errno::NAMETOOLONG) | Err(Errno::LOOP) => {
            }
            Err(e) => saw = e,
        }
    }
    Err(fail(saw))
}

/// `path` is a regular file this process may execute.
fn runnable(path: PathBuf) -> Result<PathBuf, Errno> {
    let st = stat(&path)?;
    if !FileType::from_raw_mode(st.st_mode).is_file() {
        // execve(2) of a directory or a device: EACCES.
        return Err(Errno::ACCESS);
    }
    accessat(CWD, &path, Access::EXEC_OK, AtFlags::EACCESS)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn found_not_found_and_not_executable() {
        let path = || Some(OsString::from("/nonexistent:/bin:/usr/bin"));
        assert!(resolve_in("sh", path()).unwrap().ends_with("sh"));
        assert_eq!(resolve_in("", path()).unwrap_err().code, 127);
        assert_eq!(resolve_in("no-such-cmd-ck", path()).unwrap_err().code, 127);
        assert_eq!(resolve_in("/nonexistent/x", path()).unwrap_err().code, 127);
        assert_eq!(resolve_in("/etc", path()).unwrap_err().code, 126);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("noexec");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve_in(f.to_str().unwrap(), path()).unwrap_err();
        assert_eq!(e.code, 126, "{}", e.message);
        // Found in PATH but not executable there, and nowhere else: 126, as execvp.
        let e = resolve_in("noexec", Some(dir.path().as_os_str().to_owned())).unwrap_err();
        assert_eq!(e.code, 126, "{}", e.message);
        // An executable later in PATH wins over one that is not.
        let sh = format!("{}:/bin", dir.path().display());
        std::fs::write(dir.path().join("sh"), "").unwrap();
        assert_eq!(
            resolve_in("sh", Some(OsString::from(sh))).unwrap(),
            PathBuf::from("/bin/sh")
        );
    }
}
