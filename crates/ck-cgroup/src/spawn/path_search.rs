//! The program's path, found as `execvp(3)` finds it, before anything is spawned: one lookup for
//! `Root::spawn` and the CLI's `exec`, `run`, `sandbox` and `init -- CMD`.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use rustix::fs::{Access, AtFlags, CWD, FileType, accessat, stat};
use rustix::io::Errno;

use super::ModuleCommand;
use super::clone3::cstring;

use crate::mutation::{self, Control};

/// Find `prog` as `execvp(3)` does: a name with a `/` is taken as it is; any other is looked up
/// in each directory of `path` (`None`: `/bin:/usr/bin`, glibc's default; an empty entry is the
/// current directory). The first regular file that this process may execute wins, by
/// `execve(2)`'s own rule: the **effective** uid and gid (`faccessat(X_OK, AT_EACCESS)`, which
/// also refuses a `noexec` mount), so a setuid caller and the kernel agree. Returns the path to
/// execute; `argv[0]` stays `prog`.
///
/// Errors: `ENOENT` when nothing of that name was found (an empty name too), `EACCES` for a
/// candidate that is no regular file or that may not be executed, or another errno a candidate
/// gave (as `execvp`, a candidate that exists but cannot be executed is remembered and the
/// search goes on; `ENOENT`, `ENOTDIR`, `ENAMETOOLONG` and `ELOOP` are not remembered);
/// `InvalidInput` for a name with a NUL byte. A command run as another
/// [`uid`](ModuleCommand::uid) is found by the caller's ids: `execve` in the child then decides.
pub fn find_program(prog: &OsStr, path: Option<&OsStr>) -> io::Result<PathBuf> {
    let name = prog.as_bytes();
    if name.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the program's name contains a NUL byte",
        ));
    }
    if name.is_empty() {
        return Err(Errno::NOENT.into());
    }
    if name.contains(&b'/') {
        let p = PathBuf::from(prog);
        return runnable(&p).map(|()| p).map_err(Into::into);
    }
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    let mut saw = Errno::NOENT;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let mut candidate = if dir.is_empty() {
            b".".to_vec()
        } else {
            dir.to_vec()
        };
        candidate.push(b'/');
        candidate.extend_from_slice(name);
        let candidate = PathBuf::from(OsString::from_vec(candidate));
        match runnable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG | Errno::LOOP) => {}
            Err(e) => saw = e,
        }
    }
    Err(saw.into())
}

/// `path` is a regular file this process may execute (`stat(2)`, then `faccessat(2)` with
/// `X_OK` and `AT_EACCESS`); a directory or a device is `EACCES`, as `execve(2)` says.
fn runnable(path: &std::path::Path) -> Result<(), Errno> {
    let st = stat(path)?;
    if !FileType::from_raw_mode(st.st_mode).is_file() {
        return Err(Errno::ACCESS);
    }
    // Mutation control (`CK_MUTATION=lookup-real-uid`): the real ids, as `access(2)`.
    let ids = if mutation::active(Control::LookupRealUid) {
        AtFlags::empty()
    } else {
        AtFlags::EACCESS
    };
    accessat(CWD, path, Access::EXEC_OK, ids)
}

/// The path to pass to `execve(2)`: a program with a `/` as it is (the spawn path checks
/// nothing that `execve` in the child checks and reports anyway: no `stat`, no `faccessat` on a
/// daemon's every spawn), any other found by [`find_program`] in the command's `PATH`.
pub(super) fn resolve_program(cmd: &ModuleCommand) -> io::Result<CString> {
    let name = cmd.program.as_bytes();
    if name.contains(&b'/') {
        return cstring(name);
    }
    let path = cmd.search_path();
    let found = find_program(&cmd.program, path.as_deref())?;
    cstring(found.as_os_str().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn errno(r: io::Result<PathBuf>) -> Option<i32> {
        r.err().and_then(|e| e.raw_os_error())
    }

    #[test]
    fn found_not_found_and_not_executable() {
        let path = OsStr::new("/nonexistent:/bin:/usr/bin");
        let find = |p: &str| find_program(OsStr::new(p), Some(path));
        assert!(find("sh").unwrap().ends_with("sh"));
        assert_eq!(errno(find("")), Some(libc::ENOENT));
        assert_eq!(errno(find("no-such-cmd-ck")), Some(libc::ENOENT));
        assert_eq!(errno(find("/nonexistent/x")), Some(libc::ENOENT));
        assert_eq!(errno(find("/etc")), Some(libc::EACCES));
        assert_eq!(
            find("a\0b").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("noexec");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(errno(find(f.to_str().unwrap())), Some(libc::EACCES));
        // Found in PATH but not executable there, and nowhere else: EACCES, as execvp.
        let only = find_program(OsStr::new("noexec"), Some(dir.path().as_os_str()));
        assert_eq!(errno(only), Some(libc::EACCES));
        // An executable later in PATH wins over one that is not.
        let sh = format!("{}:/bin", dir.path().display());
        std::fs::write(dir.path().join("sh"), "").unwrap();
        assert_eq!(
            find_program(OsStr::new("sh"), Some(OsStr::new(&sh))).unwrap(),
            PathBuf::from("/bin/sh")
        );
    }
}
