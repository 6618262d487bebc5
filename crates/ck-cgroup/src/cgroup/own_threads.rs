//! Threads of this process left behind in a cgroup it has just left.
//!
//! A pid written to `cgroup.procs` moves the whole process, every thread, except a thread that is
//! exiting: the kernel skips a task with `PF_EXITING` (`cgroup_migrate_add_task`), and it stays
//! counted in the old cgroup until it has passed `cgroup_exit`. Until then the old cgroup has
//! tasks, and a write of `+controller` to its `cgroup.subtree_control` fails with `EBUSY`
//! (`cgroup_vet_subtree_control_enable`). zbus's runtime runs its work on a short-lived helper
//! thread (`zruntime`) that ends once it is idle: right after a D-Bus call, one may be on its
//! way out just as the process moves (lane 2's `user-suite-isolation` in CI: a scope sandbox's
//! `cgroup.subtree_control` answered `EBUSY`).
//!
//! Linux 6.1 has no fd that polls readable when a thread (not a process) ends (`PIDFD_THREAD`
//! came with 6.9), so this is the one wait of the layer that looks again after a pause: only
//! while every thread the cgroup holds is one of this process's (`/proc/self/task/<tid>`), and
//! at most until a deadline.

#[cfg(feature = "systemd")]
use std::time::{Duration, Instant};

#[cfg(feature = "systemd")]
use crate::cgroup::{dir::CgroupDir, parse};
use crate::error::Result;
use crate::mutation::{self, Control};

/// Wait until `dir`'s own `cgroup.threads` holds no thread of this process (one that was exiting
/// when the process moved out), at most until `deadline`. Returns the threads it holds then:
/// none, as a rule; a thread of another process at once, without a wait (that is not ours to
/// wait for: the caller's next write says what it makes of it); ours still there at the deadline.
#[cfg(feature = "systemd")]
pub(crate) fn wait_left_behind(dir: &CgroupDir, deadline: Instant) -> Result<Vec<u32>> {
    let mut read = || Ok(parse::pids(&dir.read("cgroup.threads")?));
    let own = |tid: u32| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists();
    let pause = |round: u32| {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1 << round.min(4)));
        true
    };
    wait_while_own(&mut read, own, pause)
}

/// [`wait_left_behind`]'s rule, over its three acts: `read` the cgroup's threads, tell whether
/// one is `own`, and `pause` before the next look (`false`: the deadline has passed).
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

    /// What `read` answers, look by look (the last one again once they run out).
    fn looks(
        answers: Vec<Vec<u32>>,
    ) -> (impl FnMut() -> Result<Vec<u32>>, std::rc::Rc<Cell<usize>>) {
        let n = std::rc::Rc::new(Cell::new(0));
        let seen = n.clone();
        let read = move || {
            let i = seen.get();
            seen.set(i + 1);
            Ok(answers[i.min(answers.len() - 1)].clone())
        };
        (read, n)
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
}
