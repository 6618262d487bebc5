//! The control `grace-first-pid`'s alternative grace, compiled only into a build with it: the
//! grace waits on the first process of the tree as listed before the signal (the wrapper), as a
//! supervisor that knows one child does, then reads the tree once.

use std::time::Duration;

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::wait::{Waited, wait_events};
use crate::error::Result;

#[inline(never)] // a function of its own, so that scripts/check-release-gate can find it
pub(super) fn wait(
    dir: &CgroupDir,
    rel: &str,
    grace: Duration,
    before: Option<&[u32]>,
) -> Result<Waited> {
    if let Some(p) = before.and_then(|p| p.iter().copied().min())
        && let Some(p) = rustix::process::Pid::from_raw(p as i32)
        && let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
    {
        let ms = i32::try_from(grace.as_millis()).unwrap_or(i32::MAX);
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let ts = rustix::event::Timespec {
            tv_sec: (ms / 1000).into(),
            tv_nsec: ((ms % 1000) * 1_000_000).into(),
        };
        let _ = rustix::event::poll(&mut fds, Some(&ts));
    }
    wait_events(dir, rel, Duration::ZERO, |e| e.populated == Some(false))
}
