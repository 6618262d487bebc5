//! The program's path, found like `execvp(3)` would, in the parent before anything is spawned.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use rustix::io::Errno;

use super::ModuleCommand;
use super::prepare::cstring;

/// Resolve the program like `execvp(3)` would, in the parent. Returns the
/// path to pass to `execve(2)`: the program as given when it holds a `/`, else the first
/// executable regular file of that name in [`ModuleCommand`]'s `PATH` (`/bin:/usr/bin` without
/// one); `ENOENT`, or `EACCES` when only files that may not be executed were found.
pub(super) fn resolve_program(cmd: &ModuleCommand) -> io::Result<CString> {
    let prog = cmd.program.as_bytes();
    if prog.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if prog.contains(&b'/') {
        return cstring(prog);
    }
    let path = cmd
        .search_path()
        .unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut saw_eacces = false;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let mut candidate = dir.to_vec();
        candidate.push(b'/');
        candidate.extend_from_slice(prog);
        let candidate = cstring(&candidate)?;
        match rustix::fs::stat(candidate.as_c_str()) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {}
            _ => continue,
        }
        match rustix::fs::access(candidate.as_c_str(), rustix::fs::Access::EXEC_OK) {
            Ok(()) => return Ok(candidate),
            Err(Errno::ACCESS) => saw_eacces = true,
            Err(_) => {}
        }
    }
    Err(io::Error::from_raw_os_error(if saw_eacces {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}
