//! docs/daemon-integration.md's "Through the library (Rust)" example, whole: the lines between
//! the `guide:` markers are the guide's code block, and `tests/docs.rs` fails when the two
//! differ, so the guide's code is code that compiles (`cargo build --examples`) and runs.
//!
//! A daemon finds its root with `discover::discover()`, its own service's. The example makes a
//! sandbox instead, so that it runs anywhere the caller may make cgroups:
//!
//! ```text
//! cargo run -p ck-cgroup --example spawn_module
//! ```

use ck_cgroup::Sandbox;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::create(&Sandbox::default_parent()?)?;
    let root_path = sandbox.path().to_path_buf();
    let discover = || -> ck_cgroup::Result<std::path::PathBuf> { Ok(root_path.clone()) };
    // guide: start
    use ck_cgroup::{ErrorKind, ModuleId, Root, spawn::ModuleCommand, stop::StopOptions};
    use std::os::fd::OwnedFd;

    let root = Root::open(&discover()?)?; // the daemon's own: ck_cgroup::discover::discover()
    let id = ModuleId::new("aft")?;
    let log: OwnedFd = std::fs::File::create(std::env::temp_dir().join("aft.stderr"))?.into();
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("1").stderr(log);
    let mut child = root.spawn(&id, &cmd)?; // made if needed, placed before it runs
    eprintln!("aft: pid {} placed by {:?}", child.id(), child.placement());
    let status = child.wait()?;
    // The whole tree, whatever it left behind; then the directory.
    match root.stop("aft", &StopOptions::default()) {
        Ok(r) => eprintln!("aft: {status}; {} killed, removed", r.tree.killed),
        Err(e) if e.kind() == ErrorKind::StillPopulated => eprintln!("aft: left running: {e}"),
        Err(e) => return Err(e.into()),
    }
    // guide: end
    Ok(())
}
