//! An async supervisor over ck-cgroup with tokio: start a module's process with
//! [`Root::spawn`], await its exit on its pidfd through [`AsyncFd`] (no thread per child, no
//! `SIGCHLD`), then stop the module's whole tree, which blocks, on the blocking pool
//! ([`tokio::task::spawn_blocking`]).
//!
//! Run it in a sandbox (as root, or under a parent you may make cgroups in):
//!
//! ```text
//! cargo run -p ck-cgroup --example tokio_supervisor -- /sys/fs/cgroup/unified
//! ```

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use ck_cgroup::spawn::{ModuleChild, ModuleCommand};
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ErrorKind, ModuleId, Root, Sandbox};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Wait until the module's process has exited: its pidfd (or, with a PID namespace, the init's
/// report pipe) polls readable then.
async fn exited(child: &ModuleChild) -> std::io::Result<()> {
    // A duplicate that the AsyncFd owns: the child keeps its own descriptor for `wait`.
    let fd: OwnedFd = child.exit_fd().try_clone_to_owned()?;
    // SAFETY: `fd` is an open descriptor owned by the AsyncFd for its whole life, and an
    // `OwnedFd` always returns the same raw fd.
    let afd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?;
    let _ready = afd.readable().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A sandbox under the parent given (a real daemon opens its own root with `Root::open`).
    let parent = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or(Sandbox::default_parent()?);
    let sandbox = Sandbox::create(&parent)?;
    let root: Arc<Root> = Arc::new(Root::open(sandbox.path())?);

    let id = ModuleId::new("worker-1")?;
    let mut cmd = ModuleCommand::new("sh");
    cmd.args(["-c", "sleep 0.2; echo worker done"]);
    let mut child = root.spawn(&id, &cmd)?;
    println!("{id}: pid {} ({:?})", child.id(), child.placement());

    // Await the exit without blocking a runtime thread; give up after 5 s.
    match tokio::time::timeout(Duration::from_secs(5), exited(&child)).await {
        Ok(r) => r?,
        Err(_) => println!("{id}: still running after 5 s, stopping it"),
    }

    // What it forked may still run in the module: stop the whole tree and remove the module.
    // The stop waits on the kernel, so it runs on the blocking pool.
    let stopper = Arc::clone(&root);
    let name = id.to_string();
    let stopped = tokio::task::spawn_blocking(move || {
        let opts = StopOptions {
            grace: Duration::from_secs(1),
            ..StopOptions::default()
        };
        stopper.stop(&name, &opts)
    })
    .await?;
    match stopped {
        Ok(r) => println!(
            "{id}: stopped ({} left when the kill began, {} ms)",
            r.tree.killed, r.tree.waited_ms
        ),
        Err(e) if e.kind() == ErrorKind::StillPopulated => {
            eprintln!("{id}: {e}; report: {:?}", e.stop_report());
        }
        Err(e) => return Err(e.into()),
    }
    // The pidfd said it exited: reap it.
    let status = child.wait()?;
    println!("{id}: exit {status}");
    Ok(())
}
