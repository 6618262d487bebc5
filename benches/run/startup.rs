//! Start-up: the rows (a plain `/bin/true`, `--version`, `exec`, `run` with and without the
//! PID namespace) and one start of a row, from the spawn to the reaped exit.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_cgroup::Root;

use crate::ck;
use crate::common::{Res, ms_since};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Plain,
    Version,
    Exec,
    Run,
    RunNoNs,
}

pub const STARTS: [Start; 5] = [
    Start::Plain,
    Start::Version,
    Start::Exec,
    Start::Run,
    Start::RunNoNs,
];

impl Start {
    pub fn label(self) -> &'static str {
        match self {
            Start::Plain => "plain /bin/true",
            Start::Version => "ck-cgroup --version",
            Start::Exec => "exec m -- /bin/true",
            Start::Run => "run m -- /bin/true (pid ns)",
            Start::RunNoNs => "run --no-pid-namespace m",
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Start::Plain => "up-plain",
            Start::Version => "up-version",
            Start::Exec => "up-exec",
            Start::Run => "up-run",
            Start::RunNoNs => "up-run-nons",
        }
    }
}

/// One start of `what`, in milliseconds from the spawn to the reaped exit.
pub fn start_up(root: &Root, sandbox: &Path, bin: &Path, what: Start) -> Res<f64> {
    let mut cmd = match what {
        Start::Plain => Command::new("/bin/true"),
        Start::Version => ck(bin, sandbox, &["--version"]),
        Start::Exec => ck(bin, sandbox, &["exec", what.id(), "--", "/bin/true"]),
        Start::Run => ck(bin, sandbox, &["run", what.id(), "--", "/bin/true"]),
        Start::RunNoNs => ck(
            bin,
            sandbox,
            &["run", "--no-pid-namespace", what.id(), "--", "/bin/true"],
        ),
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let t0 = Instant::now();
    let st = cmd.status()?;
    let ms = ms_since(t0);
    if !st.success() {
        return Err(format!("{}: {st}", what.label()).into());
    }
    let dir = sandbox.join("subc-modules").join(what.id());
    match what {
        Start::Plain | Start::Version => {}
        Start::Exec => {
            // `exec` leaves the module (empty) to its caller: remove it, untimed.
            let r = root.remove(what.id())?;
            if !r.removed {
                return Err(format!("{}: no module to remove after exec", dir.display()).into());
            }
        }
        Start::Run | Start::RunNoNs => {
            if dir.exists() {
                return Err(format!("{}: left behind by {}", dir.display(), what.label()).into());
            }
        }
    }
    Ok(ms)
}
