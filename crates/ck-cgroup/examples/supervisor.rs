//! A supervisor with a restart budget over ck-cgroup: each module is spawned into its own cgroup
//! ([`Root::spawn`]), and when its main process dies the death report ([`Root::reap`]) says
//! whose fault it was. A crash, an exit with a code, the kernel's OOM kill for the module's own
//! limit and systemd-oomd's kill of the module itself are charged to its budget; an OOM kill for
//! an ancestor's limit or the machine's, systemd-oomd's kill of an ancestor, and a stop by
//! ck-cgroup (an operator's `ck-cgroup kill`) are not. An unknown cause is charged, and logged
//! with why it is unknown. The tree the process left is stopped and the module removed each time.
//!
//! docs/daemon-integration.md shows the code between the `guide:` markers (`tests/docs.rs` fails
//! when the two differ); `tests/supervisor.rs` drives [`Supervisor`] through each cause. Run it
//! in a sandbox of its own (as root, or where the caller may make cgroups):
//!
//! ```text
//! cargo run -p ck-cgroup --example supervisor
//! ```

use std::collections::HashMap;

use ck_cgroup::module::Reaped;
use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};

// guide: start
/// Restarts each module until it exits with 0 or has spent its budget of charged deaths.
pub struct Supervisor {
    /// The service's root (a daemon's own: `Root::open(&discover::discover()?)`).
    pub root: Root,
    /// Charged deaths a module may have before it is given up.
    pub budget: u32,
    /// Charged deaths so far, by module.
    pub charged: HashMap<ModuleId, u32>,
}

impl Supervisor {
    /// Run `id` once: spawn it, wait for its death, stop what it left and remove the module,
    /// and charge the death to its budget where it was the module's own fault. `true` while
    /// it should be started again.
    pub fn run_once(&mut self, id: &ModuleId, cmd: &ModuleCommand) -> ck_cgroup::Result<bool> {
        let mut child = self.root.spawn(id, cmd)?;
        let Reaped { death, stop, .. } = self.root.reap(&mut child, &StopOptions::default())?;
        if !stop.ok() {
            eprintln!("{id}: left running: {:?}", stop.error);
        }
        let charged = match death.charged {
            Some(c) => c,
            None => {
                eprintln!("{id}: cause unknown, charged: {:?}", death.cause);
                true
            }
        };
        let spent = self.charged.entry(id.clone()).or_default();
        if charged {
            *spent += 1;
        }
        eprintln!(
            "{id}: {:?}; charged {charged}, {spent} of {}",
            death.cause, self.budget
        );
        Ok(death.exit_code != Some(0) && *spent < self.budget)
    }
}
// guide: end

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::create(&Sandbox::default_parent()?)?;
    let mut sup = Supervisor {
        root: Root::open(sandbox.path())?,
        budget: 3,
        charged: HashMap::new(),
    };
    // Three modules: one that crashes every time, one that fails twice and then succeeds, and
    // one that succeeds at once.
    let count = std::env::temp_dir().join(format!("ck-supervisor-{}", std::process::id()));
    let flaky = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); echo $((n+1)) > {0}; [ $n -ge 2 ]",
        count.display()
    );
    let modules: [(&str, &[&str]); 3] = [
        ("crasher", &["-c", "kill -SEGV $$"]),
        ("flaky", &["-c", &flaky]),
        ("steady", &["-c", "true"]),
    ];
    for (name, args) in modules {
        let id = ModuleId::new(name)?;
        let mut cmd = ModuleCommand::new("/bin/sh");
        // Kill-on-close: should this supervisor die, the kernel empties each module.
        cmd.args(args).pid_namespace(true);
        while sup.run_once(&id, &cmd)? {}
    }
    let _ = std::fs::remove_file(&count);
    for (id, n) in &sup.charged {
        println!("{id}: {n} charged");
    }
    Ok(())
}
