//! Enabling controllers in a cgroup this process has just left, where a thread of its own may
//! still be on its way out.
//!
//! A pid written to `cgroup.procs` moves the whole process, every thread, except a thread that is
//! exiting: the kernel skips a task with `PF_EXITING` (`cgroup_migrate_add_task`), and it stays
//! counted in the old cgroup until it has passed `cgroup_exit`. Until then the old cgroup has
//! tasks, and a write of `+controller` to its `cgroup.subtree_control` fails with `EBUSY`
//! (`cgroup_vet_subtree_control_enable`). A short-lived thread is common: zbus's runtime runs its
//! work on one (`zruntime`) that ends once it is idle, right after a D-Bus call (lane 2's
//! `user-suite-isolation` in CI: a scope sandbox's `cgroup.subtree_control` answered `EBUSY`);
//! a daemon's thread pool ends idle threads the same way before it calls `Root::init`, which
//! moves it into `daemon/` and then enables the root's controllers.
//!
//! Linux 6.1 has no fd that polls readable when a thread (not a process) ends (`PIDFD_THREAD`
//! came with 6.9), so the wait here looks again after a pause: only after an `EBUSY`, only while
//! every thread the cgroup holds is one of this process's (`/proc/self/task/<tid>`), and at most
//! for [`WAIT`]. The write is then tried once more; any other errno is the write's own.

use std::time::{Duration, Instant};

use rustix::io::Errno;

use crate::cgroup::{dir::CgroupDir, parse};
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// The longest wait for this process's exiting threads to leave a cgroup.
pub const WAIT: Duration = Duration::from_secs(2);

/// Write `line` (`+memory +pids`) to the `cgroup.subtree_control` of `dir`'s sub-directory `sub`
/// (`""`: `dir` itself). On `EBUSY` while the cgroup holds only threads of this process (ones
/// that were exiting when it moved out), wait until they have left (at most [`WAIT`]) and write
/// once more. Where a thread of another process is there the `EBUSY` is returned as it is; where
/// ours outlast the wait, naming them.
pub(crate) fn enable_controllers(dir: &CgroupDir, sub: &str, line: &str) -> Result<()> {
    let file = format!("{sub}{}cgroup.subtree_control", slash(sub));
    let threads = format!("{sub}{}cgroup.threads", slash(sub));
    let deadline = Instant::now() + WAIT;
    let mut read = || Ok(parse::pids(&dir.read(&threads)?));
    let pause = |round: u32| {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1 << round.min(4)));
        true
    };
    write_after_own_threads(
        &mut || dir.write(&file, line),
        &mut || wait_while_own(&mut read, is_own, pause),
    )
    .map_err(|e| match e {
        // Another process's: the caller's hint says what it knows of the cgroup.
        Busy::Left(e, left) if !left.iter().all(|&t| is_own(t)) => e,
        Busy::Left(e, left) => e.with_hint(format!(
            "{} still holds threads {left:?} of this process, which were exiting when it moved out, after {} s",
            dir.display_path(sub).display(),
            WAIT.as_secs()
        )),
        Busy::Other(e) => e,
    })
}

/// Whether thread `tid` is one of this process's (`/proc/self/task/<tid>`).
fn is_own(tid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

fn slash(sub: &str) -> &'static str {
    if sub.is_empty() { "" } else { "/" }
}

/// How [`write_after_own_threads`] failed: with `EBUSY` while these threads were still there,
/// or otherwise (the write's own error).
enum Busy {
    Left(Error, Vec<u32>),
    Other(Error),
}

/// [`enable_controllers`]'s rule over its two acts: `write`, and on `EBUSY` `wait` (the threads
/// still there when it ends) and `write` once more where none is left.
fn write_after_own_threads(
    write: &mut dyn FnMut() -> Result<()>,
    wait: &mut dyn FnMut() -> Result<Vec<u32>>,
) -> std::result::Result<(), Busy> {
    match write() {
        Err(e) if e.errno() == Some(Errno::BUSY) => {
            // The write's errno is the one kept where the wait cannot look.
            let Ok(left) = wait() else {
                return Err(Busy::Other(e));
            };
            if !left.is_empty() {
                return Err(Busy::Left(e, left));
            }
            write().map_err(Busy::Other)
        }
        r => r.map_err(Busy::Other),
    }
}

/// The wait: `read` the cgroup's threads, tell whether one is `own`, and `pause` before the next
/// look (`false`: the deadline has passed). Returns the threads there at the end: none, as a
/// rule; a thread of another process at once (not ours to wait for); ours at the deadline.
fn wait_while_own(
    read: &mut dyn FnMut() -> Result<Vec<u32>>,
    own: impl Fn(u32) -> bool,
    mut pause: impl FnMut(u32) -> bool,
) -> Result<Vec<u32>> {
    let mut round = 0;
    loop {
        let tids = read()?;
        // Mutation control (`CK_MUTATION=exiting-thread-unwaited`): what the first look finds
        // is taken as it is.
        if tids.is_empty() || mutation::active(Control::ExitingThreadUnwaited) {
            return Ok(tids);
        }
        if !tids.iter().all(|&t| own(t)) || !pause(round) {
            return Ok(tids);
        }
        round += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// What `read` answers, look by look (the last one again once they run out), and a count of
    /// the looks.
    fn looks(answers: Vec<Vec<u32>>) -> (impl FnMut() -> Result<Vec<u32>>, Rc<Cell<usize>>) {
        let n = Rc::new(Cell::new(0));
        let seen = n.clone();
        let read = move || {
            let i = seen.get();
            seen.set(i + 1);
            Ok(answers[i.min(answers.len() - 1)].clone())
        };
        (read, n)
    }

    /// A write that answers each errno of `answers` in turn (`None`: it succeeds), and a count.
    fn writes(answers: Vec<Option<Errno>>) -> (impl FnMut() -> Result<()>, Rc<Cell<usize>>) {
        let n = Rc::new(Cell::new(0));
        let seen = n.clone();
        let write = move || {
            let i = seen.get();
            seen.set(i + 1);
            match answers[i.min(answers.len() - 1)] {
                None => Ok(()),
                Some(e) => Err(Error::io("write", "cgroup.subtree_control", e)),
            }
        };
        (write, n)
    }

    #[test]
    fn a_thread_of_ours_on_its_way_out_is_waited_for_until_it_has_left() {
        let (mut read, reads) = looks(vec![vec![41, 42], vec![42], vec![]]);
        let left = wait_while_own(&mut read, |_| true, |_| true).unwrap();
        assert_eq!(
            left,
            Vec::<u32>::new(),
            "the cgroup is waited for until it holds none"
        );
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn a_thread_of_another_process_is_not_waited_for() {
        let (mut read, reads) = looks(vec![vec![41, 7], vec![]]);
        let left = wait_while_own(&mut read, |t| t == 41, |_| panic!("no pause")).unwrap();
        assert_eq!(left, vec![41, 7]);
        assert_eq!(reads.get(), 1);
    }

    #[test]
    fn a_thread_of_ours_still_there_at_the_deadline_is_handed_back() {
        let (mut read, reads) = looks(vec![vec![41]]);
        let left = wait_while_own(&mut read, |_| true, |round| round < 3).unwrap();
        assert_eq!(left, vec![41]);
        assert_eq!(reads.get(), 4);
    }

    #[test]
    fn an_empty_cgroup_is_not_waited_for() {
        let (mut read, reads) = looks(vec![vec![]]);
        let left = wait_while_own(&mut read, |_| true, |_| panic!("no pause")).unwrap();
        assert!(left.is_empty());
        assert_eq!(reads.get(), 1);
    }

    #[test]
    fn an_ebusy_from_our_exiting_thread_is_written_again_once_it_has_left() {
        let (mut write, wrote) = writes(vec![Some(Errno::BUSY), None]);
        let (mut read, _) = looks(vec![vec![41], vec![]]);
        let r = write_after_own_threads(&mut write, &mut || {
            wait_while_own(&mut read, |_| true, |_| true)
        });
        assert!(
            r.is_ok(),
            "the second write, after the thread left, succeeds"
        );
        assert_eq!(wrote.get(), 2);
    }

    #[test]
    fn an_ebusy_with_another_process_there_is_the_writes_own_error_naming_it() {
        let (mut write, wrote) = writes(vec![Some(Errno::BUSY), None]);
        let (mut read, _) = looks(vec![vec![7]]);
        let r = write_after_own_threads(&mut write, &mut || {
            wait_while_own(&mut read, |_| false, |_| panic!("no pause"))
        });
        match r {
            Err(Busy::Left(e, left)) => {
                assert_eq!(e.errno(), Some(Errno::BUSY));
                assert_eq!(left, vec![7]);
            }
            _ => panic!("the EBUSY stays, with the thread named"),
        }
        assert_eq!(wrote.get(), 1, "no second write");
    }

    #[test]
    fn an_ebusy_whose_threads_cannot_be_read_is_the_writes_own_error() {
        let (mut write, wrote) = writes(vec![Some(Errno::BUSY), None]);
        let r = write_after_own_threads(&mut write, &mut || {
            Err(Error::io("read", "cgroup.threads", Errno::NOENT))
        });
        match r {
            Err(Busy::Other(e)) => assert_eq!(e.errno(), Some(Errno::BUSY)),
            _ => panic!("the write's EBUSY is kept"),
        }
        assert_eq!(wrote.get(), 1);
    }

    #[test]
    fn a_write_that_succeeds_or_fails_otherwise_waits_for_nothing() {
        for first in [None, Some(Errno::NOENT)] {
            let (mut write, wrote) = writes(vec![first]);
            let r = write_after_own_threads(&mut write, &mut || panic!("no wait"));
            assert_eq!(r.is_ok(), first.is_none());
            assert_eq!(wrote.get(), 1);
        }
    }
}
