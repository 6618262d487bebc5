//! A supervisor with a restart budget over ck-cgroup: each module is spawned into its own cgroup
//! ([`Root::spawn`]), every module at once from one thread (one `poll(2)` on all of them:
//! [`Waiter`]), and when a module's main process dies the death report ([`Root::reap`]) says
//! whose fault it was. A crash, an exit with a code, the kernel's OOM kill for the module's own
//! limit and systemd-oomd's kill of the module itself are charged to its budget (3 in a
//! minute); an OOM kill for an ancestor's limit or the machine's, systemd-oomd's kill of an
//! ancestor, and a stop by ck-cgroup (an operator's `ck-cgroup kill`) are not. An unknown cause
//! is charged, and logged with why it is unknown. The tree the process left is stopped and the
//! module removed each time; a module an operator stopped is not started again.
//!
//! A fourth module, `forger`, launders nothing: it raises ck-cgroup's stop mark
//! (`user.ck_cgroup_stops`) on its own directory, as any module of the daemon's uid can, and then
//! crashes; the death report does not believe a stop mark that a crash came with
//! (`Death::marks_unconfirmed`), so it is charged as the crasher is. (The forger is this binary,
//! run with `--forge DIR`.)
//!
//! docs/daemon-integration.md shows the code between the `guide:` markers (`tests/docs.rs` fails
//! when the two differ); `tests/supervisor.rs` drives [`Supervisor`] through each cause and runs
//! this example's binary. Run it in a sandbox of its own (as root, or where the caller may make
//! cgroups; PARENT: where the sandbox is made, the cgroup2 mount's root by default):
//!
//! ```text
//! cargo run -p ck-cgroup --example supervisor [-- PARENT]
//! ```

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use ck_cgroup::cause::death_cause::Cause;
use ck_cgroup::module::{Death, Reaped};
use ck_cgroup::spawn::{ModuleCommand, Waiter};
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};

// guide: start
/// Restarts each module until it exits with 0, an operator stops it, or its own faults spend
/// its budget: `budget` charged deaths within `window`.
pub struct Supervisor {
    /// The service's root (a daemon's own: `Root::open(&discover::discover()?)`).
    pub root: Root,
    /// Charged deaths a module may have within `window` before it is given up.
    pub budget: u32,
    /// The budget's window.
    pub window: Duration,
    /// Charged deaths so far, by module.
    pub charged: HashMap<ModuleId, u32>,
    /// When each module's charged deaths were, within `window`.
    recent: HashMap<ModuleId, VecDeque<Instant>>,
}

impl Supervisor {
    /// A supervisor of `root`'s modules with a budget of 3 charged deaths a minute.
    pub fn new(root: Root) -> Supervisor {
        Supervisor {
            root,
            budget: 3,
            window: Duration::from_secs(60),
            charged: HashMap::new(),
            recent: HashMap::new(),
        }
    }

    /// Charge `death` to `id`'s budget where it was the module's own fault (an unknown cause
    /// is charged). `true` while the module should be started again.
    pub fn charge(&mut self, id: &ModuleId, death: &Death) -> bool {
        let charged = match death.charged {
            Some(c) => c,
            None => {
                println!("{id}: cause unknown, charged: {:?}", death.cause);
                true
            }
        };
        let now = Instant::now();
        let recent = self.recent.entry(id.clone()).or_default();
        recent.retain(|t| now.duration_since(*t) < self.window);
        let total = self.charged.entry(id.clone()).or_default();
        if charged {
            recent.push_back(now);
            *total += 1;
        }
        let again = death.exit_code != Some(0)
            && death.cause != Cause::Stopped
            && recent.len() < self.budget as usize;
        println!(
            "{id}: {:?}; charged {charged}, {} of {} this minute; {}",
            death.cause,
            recent.len(),
            self.budget,
            if again { "restart" } else { "done" }
        );
        again
    }

    /// Run `id` once: spawn it, wait for its death, stop what it left and remove the module,
    /// and charge the death. `true` while it should be started again.
    pub fn run_once(&mut self, id: &ModuleId, cmd: &ModuleCommand) -> ck_cgroup::Result<bool> {
        let mut child = self.root.spawn(id, cmd)?;
        let Reaped { death, stop, .. } = self.root.reap(&mut child, &StopOptions::default())?;
        if !stop.ok() {
            println!("{id}: left running: {:?}", stop.error);
        }
        Ok(self.charge(id, &death))
    }

    /// Run every module at once from this thread: spawn each, wait in one `poll(2)` for any of
    /// them to die (`Waiter`), reap and charge that one and start it again while it should be.
    /// Returns when none is left running.
    pub fn run_all(
        &mut self,
        modules: &HashMap<ModuleId, ModuleCommand>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let mut running = Waiter::new();
        for (id, cmd) in modules {
            running.insert(id.clone(), self.root.spawn(id, cmd)?);
        }
        while let Some((id, mut child)) = running.wait(None)? {
            let Reaped { death, stop, .. } = self.root.reap(&mut child, &StopOptions::default())?;
            if !stop.ok() {
                println!("{id}: left running: {:?}", stop.error);
            }
            if self.charge(&id, &death) {
                running.insert(id.clone(), self.root.spawn(&id, &modules[&id])?);
            }
        }
        Ok(())
    }
}
// guide: end

/// `--forge DIR`: the forger's side, run as a module's command: raise `user.ck_cgroup_stops`
/// on DIR (its own directory), then crash as a shell does (`SIGSEGV`).
fn forge(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use std::os::unix::process::CommandExt;
    let mut buf = [0u8; 32];
    let n = rustix::fs::getxattr(dir, "user.ck_cgroup_stops", &mut buf)
        .ok()
        .and_then(|len| {
            std::str::from_utf8(&buf[..len])
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    let value = (n + 1).to_string();
    rustix::fs::setxattr(
        dir,
        "user.ck_cgroup_stops",
        value.as_bytes(),
        rustix::fs::XattrFlags::empty(),
    )?;
    Err(std::process::Command::new("/bin/sh")
        .args(["-c", "sleep 0.1; kill -SEGV $$"])
        .exec()
        .into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "--forge") {
        let dir = args.nth(1).ok_or("--forge DIR")?;
        return forge(std::path::Path::new(&dir));
    }
    let parent = match std::env::args_os().nth(1) {
        Some(p) => p.into(),
        None => Sandbox::default_parent()?,
    };
    let sandbox = Sandbox::create(&parent)?;
    let mut sup = Supervisor::new(Root::open(sandbox.path())?);
    // Three modules at once: one that crashes every time (given up after 3 in a minute), one
    // that fails twice and then runs until the third is stopped, and one that runs until an
    // operator stops it. A supervisor that ran them one after another would wait for ever.
    let dir = std::env::temp_dir().join(format!("ck-supervisor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (count, ready, stopped) = (dir.join("flaky"), dir.join("steady"), dir.join("stopped"));
    let flaky = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); echo $((n+1)) > {0}; \
         if [ $n -ge 2 ]; then while [ ! -e {1} ]; do sleep 0.05; done; exit 0; fi; \
         sleep 0.1; exit 1",
        count.display(),
        stopped.display()
    );
    let steady = format!(": > {}; exec sleep 600", ready.display());
    let mut modules = HashMap::new();
    for (name, script) in [
        ("crasher", "sleep 0.1; kill -SEGV $$"),
        ("flaky", flaky.as_str()),
        ("steady", steady.as_str()),
    ] {
        let mut cmd = ModuleCommand::new("/bin/sh");
        // Kill-on-close: should this supervisor die, the kernel empties each module.
        cmd.args(["-c", script]).pid_namespace(true);
        modules.insert(ModuleId::new(name)?, cmd);
    }
    let mut forger = ModuleCommand::new(std::env::current_exe()?);
    forger
        .arg("--forge")
        .arg(sandbox.path().join("subc-modules/forger"))
        .pid_namespace(true);
    modules.insert(ModuleId::new("forger")?, forger);
    // The operator, not the supervisor: `ck-cgroup kill steady` once it runs and flaky runs
    // for the third time.
    let operator = Root::open(sandbox.path())?;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !ready.exists() || count_of(&count) < 3 {
                std::thread::sleep(Duration::from_millis(20));
            }
            match operator.kill("steady", Duration::from_secs(10)) {
                Ok(r) => println!("operator: stopped steady ({} killed)", r.tree.killed),
                Err(e) => println!("operator: {e}"),
            }
            let _ = std::fs::write(&stopped, "");
        });
        sup.run_all(&modules)
    })
    .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut ids: Vec<_> = sup.charged.iter().collect();
    ids.sort();
    for (id, n) in ids {
        println!("{id}: {n} charged");
    }
    Ok(())
}

/// How many times the flaky module ran.
fn count_of(file: &std::path::Path) -> u32 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}
