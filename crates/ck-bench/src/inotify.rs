//! A small inotify (sections 3 and 4): which files `status` opens (`IN_OPEN`), and when a
//! module's `cgroup.events` changes (`IN_MODIFY`).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::Res;

pub struct Inotify(OwnedFd);

impl Inotify {
    pub fn new() -> Res<Inotify> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        if fd < 0 {
            return Err(format!("inotify_init1: {}", std::io::Error::last_os_error()).into());
        }
        // SAFETY: a fresh fd we own.
        Ok(Inotify(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn add(&self, path: &Path, mask: u32) -> Res<i32> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid fd and NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.0.as_raw_fd(), c.as_ptr(), mask) };
        if wd < 0 {
            return Err(format!(
                "inotify_add_watch {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )
            .into());
        }
        Ok(wd)
    }

    /// The (wd, mask, name) of every queued event; none when the queue is empty.
    pub fn drain(&self) -> Res<Vec<(i32, u32, String)>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match rustix::io::read(&self.0, &mut buf) {
                Ok(n) => n,
                Err(rustix::io::Errno::AGAIN) => return Ok(out),
                Err(e) => return Err(e.into()),
            };
            let mut off = 0;
            let hdr = std::mem::size_of::<libc::inotify_event>();
            while off + hdr <= n {
                // SAFETY: the kernel wrote whole events; read_unaligned copes with alignment.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[off..].as_ptr().cast()) };
                let name_bytes = &buf[off + hdr..off + hdr + ev.len as usize];
                let name = CStr::from_bytes_until_nul(name_bytes)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((ev.wd, ev.mask, name));
                off += hdr + ev.len as usize;
            }
        }
    }

    /// Block until an event arrives or `timeout` passes; the instant it woke.
    pub fn wait(&self, timeout: Duration) -> Res<Option<Instant>> {
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
        let now = Instant::now();
        if r < 0 {
            return Err(format!("poll: {}", std::io::Error::last_os_error()).into());
        }
        Ok((r > 0).then_some(now))
    }
}
