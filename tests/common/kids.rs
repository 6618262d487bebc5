//! Children of a test held as `Child` handles (never as bare pids): killed and reaped when the
//! test ends, whatever happened. For tests whose modules' members must not be tracked by pid (a
//! fork storm recycles pids quickly, and a tracked pid SIGKILLed after its reuse would hit
//! another test's process).

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Children of the test: killed and reaped when the test ends, whatever happened.
#[derive(Default)]
pub struct Kids(Vec<Child>);

impl Kids {
    /// Hold `c`; returns its index.
    pub fn add(&mut self, c: Child) -> usize {
        self.0.push(c);
        self.0.len() - 1
    }

    /// Wait for child `i` at most `limit`; `None` when it is still running.
    pub fn wait(&mut self, i: usize, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.0[i].try_wait().unwrap() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self, i: usize) -> u32 {
        self.0[i].id()
    }

    /// Child `i` itself (its pipes, say).
    pub fn child(&mut self, i: usize) -> &mut Child {
        &mut self.0[i]
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // Not reaped yet, so the pid cannot have been reused.
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
