//! One error type for the crate, with the exit code each variant maps to.
//!
//! Every message follows `<what failed>: <path>: <errno>` and may carry a hint that says what to
//! run instead. The binary prints `ck-cgroup: <message>` and, on a second line, `hint: <hint>`;
//! with `--json` it prints one JSON object on stderr instead, whose `kind` is [`Error::kind`] in
//! snake_case (the CLI's docs/json.md).
//!
//! A caller tells failures apart by [`Error::kind`] (an [`ErrorKind`]), never by the message,
//! which is for people. The errno of a failed system call stays reachable ([`Error::errno`]),
//! and a stop that did not end carries its report ([`Error::stop_report`]).

use std::fmt;
use std::path::PathBuf;

use rustix::io::Errno;

/// What went wrong, for a caller to match on. More kinds may be added: match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input was invalid (a module id, a size, a policy, a forced kill method that cannot
    /// run, the hierarchy's root passed as a service root…). Nothing was changed.
    BadInput,
    /// The module asked for does not exist.
    NoSuchModule,
    /// The root is a cgroup2 directory but no service root: it has neither `daemon/` nor
    /// `subc-modules/` (an operator's login shell, a service not laid out by `init`). Nothing
    /// was changed (exit 2).
    NotAServiceRoot,
    /// A module's `cgroup.events` did not say `frozen 1` (or `frozen 0`) before the timeout of
    /// a freeze (or thaw); `cgroup.freeze` stays as written.
    NotFrozen,
    /// The process asked for does not exist, or exited while it was being placed.
    NoSuchProcess,
    /// A controller a limit needs is not enabled for the modules (not delegated, or `init` not run).
    ControllerMissing,
    /// The tree asked to be stopped holds the calling process: it would kill itself. Refused.
    ModuleHoldsCaller,
    /// The module is frozen: a process started in it would stop before its first instruction.
    ModuleFrozen,
    /// A system call failed with `EACCES` or `EPERM`.
    PermissionDenied,
    /// A cgroup that had to be empty is populated (`EBUSY`, `ENOTEMPTY`, or processes listed).
    Busy,
    /// A stop ended with the tree still populated or its directory not removed; the report is
    /// in [`Error::stop_report`].
    StillPopulated,
    /// No cgroup2 filesystem is mounted, or the path is not on one.
    NoCgroup2,
    /// No cgroup namespace could be made for a module's process (nothing was started): the
    /// spawn can be tried again without one.
    NoCgroupNamespace,
    /// No PID namespace could be made for a module's process, neither alone (`CAP_SYS_ADMIN`)
    /// nor with a user namespace (nothing was started): the spawn can be tried again without
    /// one.
    NoPidNamespace,
    /// systemd (the systemd backend's manager) cannot be reached over D-Bus.
    SystemdUnavailable,
    /// systemd was reached but a job or call of it failed.
    Systemd,
    /// Another failed system call (see [`Error::errno`]).
    Io,
    /// Another failure that is not a single errno.
    Other,
}

/// What kind of io failure an errno is.
pub(crate) fn io_kind(errno: Errno) -> ErrorKind {
    match errno {
        Errno::ACCESS | Errno::PERM => ErrorKind::PermissionDenied,
        Errno::BUSY | Errno::NOTEMPTY => ErrorKind::Busy,
        _ => ErrorKind::Io,
    }
}

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

/// A crate error: a message in the `<what>: <path>: <errno>` shape, a class (the exit code), a
/// kind (what a caller matches on), and an optional hint.
#[derive(Debug)]
pub struct Error {
    pub(crate) class: Class,
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) errno: Option<Errno>,
    pub(crate) hint: Option<String>,
    /// The report of a stop that did not end (a `module::StopReport`: held as `Any` so that
    /// this bottom layer imports nothing above it; `module` builds and reads it).
    pub(crate) stop: Option<Box<dyn std::any::Any + Send + Sync>>,
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
            kind: io_kind(errno),
            errno: Some(errno),
            hint: None,
            stop: None,
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
            kind: ErrorKind::NoCgroupNamespace,
            stop: None,
        }
    }

    /// No PID namespace could be made for a process of the module at `path` (nothing was
    /// started); `detail` says which steps failed, the last with `errno` (see
    /// [`Error::is_no_pid_namespace`]).
    pub fn no_pid_namespace(
        path: impl Into<PathBuf>,
        detail: impl fmt::Display,
        errno: Errno,
    ) -> Error {
        let path: PathBuf = path.into();
        Error {
            class: Class::Failed,
            message: format!("no PID namespace for a process of {} ({detail})", path.display()),
            errno: Some(errno),
            hint: Some("start it without one (`--no-pid-namespace`, `ModuleCommand::pid_namespace(false)`), or allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone)".into()),
            kind: ErrorKind::NoPidNamespace,
            stop: None,
        }
    }

    /// Whether this is [`Error::no_pid_namespace`]: the spawn can be tried again without one.
    /// The same as `kind() == ErrorKind::NoPidNamespace`.
    pub fn is_no_pid_namespace(&self) -> bool {
        self.kind == ErrorKind::NoPidNamespace
    }

    /// Whether this is [`Error::no_cgroup_namespace`]: the spawn can be tried again without one.
    /// The same as `kind() == ErrorKind::NoCgroupNamespace`.
    pub fn is_no_cgroup_namespace(&self) -> bool {
        self.kind == ErrorKind::NoCgroupNamespace
    }

    /// Bad input or an unsupported environment (exit 2).
    pub fn bad_input(message: impl Into<String>) -> Error {
        Error {
            class: Class::BadInput,
            kind: ErrorKind::BadInput,
            message: message.into(),
            errno: None,
            hint: None,
            stop: None,
        }
    }

    /// An operation that failed for a reason that is not a single errno (exit 1).
    pub fn failed(message: impl Into<String>) -> Error {
        Error {
            class: Class::Failed,
            kind: ErrorKind::Other,
            message: message.into(),
            errno: None,
            hint: None,
            stop: None,
        }
    }

    /// A failed call or job of systemd (exit 1, [`ErrorKind::Systemd`]).
    #[cfg(feature = "systemd")]
    pub(crate) fn systemd(message: impl Into<String>) -> Error {
        Error::failed(message).with_kind(ErrorKind::Systemd)
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

    /// Set the kind (the message and class stay).
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }

    /// What went wrong, for a caller to match on.
    pub fn kind(&self) -> ErrorKind {
        self.kind
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
        assert_eq!(Error::bad_input("x").kind(), ErrorKind::BadInput);
    }

    #[test]
    fn io_kind_follows_the_errno() {
        assert_eq!(
            Error::io("open", "/x", Errno::ACCESS).kind(),
            ErrorKind::PermissionDenied
        );
        assert_eq!(
            Error::io("open", "/x", Errno::PERM).kind(),
            ErrorKind::PermissionDenied
        );
        assert_eq!(
            Error::io("rmdir", "/x", Errno::BUSY).kind(),
            ErrorKind::Busy
        );
        let e = Error::io("open", "/x", Errno::NOENT);
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.errno(), Some(Errno::NOENT));
        assert!(e.stop_report().is_none());
    }
}
