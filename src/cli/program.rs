//! CMD found before anything is made: `exec`, `run`, `sandbox` and `init -- CMD` look the program
//! up as `execvp(3)` would (the library's [`find_program`], the same lookup as `Root::spawn`'s), so that a command that cannot run (an empty name, one not found, one
//! not executable) is refused before a module, a sandbox or a layout is made for it.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::PathBuf;

use ck_cgroup::spawn::find_program;

use super::exit::{CmdEnd, NotRunnable, cmd_status};

/// Find `prog` as `execvp(3)` does, in `PATH`: the library's [`find_program`] (its rule: the
/// effective ids), with its error as the shell's exit code and one line.
pub fn resolve(prog: &str) -> Result<PathBuf, NotRunnable> {
    resolve_in(prog, std::env::var_os("PATH"))
}

fn resolve_in(prog: &str, path: Option<OsString>) -> Result<PathBuf, NotRunnable> {
    find_program(OsStr::new(prog), path.as_deref()).map_err(|e| {
        let not_found = e.kind() == io::ErrorKind::InvalidInput
            || matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
        NotRunnable {
            code: cmd_status(if not_found {
                CmdEnd::NotFound
            } else {
                CmdEnd::NotExecutable
            }) as u8,
            message: format!("failed to execute {prog:?}: {e}"),
        }
    })
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
