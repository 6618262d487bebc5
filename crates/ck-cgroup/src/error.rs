//! One error type for the crate, with the exit code each variant maps to.
//!
//! Every message follows `<what failed>: <path>: <errno>` and may carry a hint that says what to
//! run instead. The binary prints `ck-cgroup: <message>` and, on a second line, `hint: <hint>`.

use std::fmt;
use std::path::PathBuf;

use rustix::io::Errno;

/// What kind of failure, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The operation was attempted and failed (exit 1).
    Failed,
    /// Bad input, usage, or an unsupported root or kernel (exit 2). Nothing was changed on disk.
    BadInput,
}

impl Class {
    /// The process exit code for this class: 1 or 2. Never 255.
    pub fn exit_code(self) -> i32 {
        match self {
            Class::Failed => 1,
            Class::BadInput => 2,
        }
    }
}

/// A crate error: a message in the `<what>: <path>: <errno>` shape, a class, and an optional hint.
#[derive(Debug)]
pub struct Error {
    class: Class,
    message: String,
    errno: Option<Errno>,
    hint: Option<String>,
    /// No cgroup namespace could be made for a module's process (nothing was started).
    no_cgroup_namespace: bool,
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A failed system call on `path`: `failed to <what> <path>: <ERRNO> (<description>)`.
    pub fn io(what: impl fmt::Display, path: impl Into<PathBuf>, errno: Errno) -> Error {
        let path: PathBuf = path.into();
        Error {
            class: Class::Failed,
            message: format!("failed to {what} {}: {}", path.display(), errno_text(errno)),
            errno: Some(errno),
            hint: None,
            no_cgroup_namespace: false,
        }
    }

    /// No cgroup namespace could be made for a process of the module at `path` (nothing was
    /// started); see [`Error::is_no_cgroup_namespace`].
    pub fn no_cgroup_namespace(path: impl Into<PathBuf>, errno: Errno) -> Error {
        let path: PathBuf = path.into();
        Error {
            class: Class::Failed,
            message: format!(
                "failed to make a cgroup namespace (unshare CLONE_NEWCGROUP, then with a user namespace) for a process of {}: {}",
                path.display(),
                errno_text(errno)
            ),
            errno: Some(errno),
            hint: Some("start it without one (`--no-cgroup-namespace`, `ModuleCommand::cgroup_namespace(false)`), or allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone)".into()),
            no_cgroup_namespace: true,
        }
    }

    /// Whether this is [`Error::no_cgroup_namespace`]: the spawn can be tried again without one.
    pub fn is_no_cgroup_namespace(&self) -> bool {
        self.no_cgroup_namespace
    }

    /// Bad input or an unsupported environment (exit 2).
    pub fn bad_input(message: impl Into<String>) -> Error {
        Error {
            class: Class::BadInput,
            message: message.into(),
            errno: None,
            hint: None,
            no_cgroup_namespace: false,
        }
    }

    /// An operation that failed for a reason that is not a single errno (exit 1).
    pub fn failed(message: impl Into<String>) -> Error {
        Error {
            class: Class::Failed,
            message: message.into(),
            errno: None,
            hint: None,
            no_cgroup_namespace: false,
        }
    }

    /// Attach a hint: what to run or change instead.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// Reclassify (for example an `ENOENT` on a root that the user named is bad input).
    #[must_use]
    pub fn with_class(mut self, class: Class) -> Error {
        self.class = class;
        self
    }

    /// The class, which decides the exit code.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The errno of the failed call, when there was one.
    pub fn errno(&self) -> Option<Errno> {
        self.errno
    }

    /// The hint, when there is one.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The message without the hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exit code: 1 failed, 2 bad input or unsupported.
    pub fn exit_code(&self) -> i32 {
        self.class.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `EBUSY (Device or resource busy)`: the symbolic name operators search for, and the text.
pub fn errno_text(errno: Errno) -> String {
    let raw = errno.raw_os_error();
    let text = std::io::Error::from_raw_os_error(raw).to_string();
    // std appends " (os error N)"; keep the description only.
    let text = text
        .split(" (os error")
        .next()
        .unwrap_or(text.as_str())
        .to_string();
    match errno_name(raw) {
        Some(name) => format!("{name} ({text})"),
        None => format!("errno {raw} ({text})"),
    }
}

fn errno_name(raw: i32) -> Option<&'static str> {
    Some(match raw {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_names_path_and_errno() {
        let e = Error::io(
            "write \"1\" to",
            "/sys/fs/cgroup/x/cgroup.kill",
            Errno::BUSY,
        );
        assert_eq!(
            e.to_string(),
            "failed to write \"1\" to /sys/fs/cgroup/x/cgroup.kill: EBUSY (Device or resource busy)"
        );
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn bad_input_is_exit_2() {
        assert_eq!(Error::bad_input("x").exit_code(), 2);
    }
}
