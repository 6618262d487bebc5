//! The start-up pairs: `--version` vs `/bin/true`, `exec` vs the shell placement baseline, `run`
//! vs `exec`, `Root::spawn` vs a plain `std::process::Command` spawn. Each row a process (or a
//! spawn) from its start to its reaped exit.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::{ModuleId, Root};

use crate::common::{Res, ms_since};
use crate::proc::{Pair, Run, run};

/// The shell placement baseline: what `exec` does, in `dash`: its own pid written to the
/// module's `cgroup.procs` (one write), then CMD executed (two `execve`s in all, as `exec`).
pub const SHELL: &str = r#"echo $$ > "$1/cgroup.procs" && exec /bin/true"#;

/// `ck-cgroup --root <sandbox> ARGS`, stdio `/dev/null`, no root or policy from the environment.
fn ck(bin: &Path, sandbox: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--root")
        .arg(sandbox)
        .args(args)
        .env_remove("CK_CGROUP_ROOT")
        .env_remove("CK_CGROUP_POLICY");
    quiet(&mut cmd);
    cmd
}

fn quiet(cmd: &mut Command) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
}

fn plain(prog: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    quiet(&mut cmd);
    cmd
}

/// The floor: a static C program that writes one line and exits, built by the bench (`cc
/// -static`), so that the helper's start-up is seen against what any static program costs.
const FLOOR_C: &str =
    "#include <unistd.h>\nint main(void) { return write(1, \"x\\n\", 2) != 2; }\n";

/// Build the floor program into `dir`; `None` (said on stdout) where `cc -static` fails here.
fn build_floor(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("floor.c");
    let bin = dir.join("floor");
    std::fs::write(&src, FLOOR_C).ok()?;
    let ok = Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&bin)
        .arg(&src)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("floor:   cc -static failed here: the floor rows are left out");
    }
    ok.then_some(bin)
}

/// The pairs, in the order they are printed.
pub struct Starts {
    pub version: Pair,
    /// `--version` against the static C floor, where it could be built.
    pub floor: Option<Pair>,
    pub exec: Pair,
    pub run: Pair,
    pub spawn: Pair,
}

pub fn measure(root: &Root, sandbox: &Path, bin: &Path, pairs: usize) -> Res<Starts> {
    let version = Pair::measure(
        pairs,
        || run(&mut ck(bin, sandbox, &["--version"]), "--version"),
        || run(&mut plain("/bin/true", &[]), "/bin/true"),
    )?;
    let tmp = std::env::temp_dir().join(format!("ck-bench-floor-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let floor = match build_floor(&tmp) {
        Some(f) => {
            let f = f.to_str().ok_or("the temp dir is not UTF-8")?.to_string();
            Some(Pair::measure(
                pairs,
                || run(&mut ck(bin, sandbox, &["--version"]), "--version"),
                || run(&mut plain(&f, &[]), "floor"),
            )?)
        }
        None => None,
    };
    let _ = std::fs::remove_dir_all(&tmp);

    // One module made before, untimed; both place themselves in it.
    let placed = ModuleId::new("up-place")?;
    let _made = root.create(&placed)?;
    let dir = sandbox.join("subc-modules").join(placed.as_str());
    let dir = dir.to_str().ok_or("the sandbox's path is not UTF-8")?;
    let exec = Pair::measure(
        pairs,
        || {
            run(
                &mut ck(bin, sandbox, &["exec", "up-place", "--", "/bin/true"]),
                "exec",
            )
        },
        || run(&mut plain("/bin/dash", &["-c", SHELL, "dash", dir]), "dash"),
    )?;

    // Both make their module; `run` removes its own, `exec`'s is removed after it, untimed.
    let run_pair = Pair::measure(
        pairs,
        || {
            let r = run(
                &mut ck(bin, sandbox, &["run", "up-run", "--", "/bin/true"]),
                "run",
            )?;
            if sandbox.join("subc-modules/up-run").exists() {
                return Err("run left its module behind".into());
            }
            Ok(r)
        },
        || {
            let r = run(
                &mut ck(bin, sandbox, &["exec", "up-exec", "--", "/bin/true"]),
                "exec",
            )?;
            if !root.remove("up-exec")?.removed {
                return Err("no module to remove after exec".into());
            }
            Ok(r)
        },
    )?;

    // In this process: the library's spawn into the module made above, and a plain one.
    let spawn = Pair::measure(
        pairs,
        || {
            let t0 = Instant::now();
            let mut child = root.spawn(&placed, &ModuleCommand::new("/bin/true"))?;
            let st = child.wait()?;
            let ms = ms_since(t0);
            if !st.success() {
                return Err(format!("Root::spawn of /bin/true: {st}").into());
            }
            Ok(Run {
                ms,
                kib: 0,
                faults: 0,
                cpu_ms: 0.0,
            })
        },
        || {
            let t0 = Instant::now();
            let st = Command::new("/bin/true").status()?;
            let ms = ms_since(t0);
            if !st.success() {
                return Err(format!("Command of /bin/true: {st}").into());
            }
            Ok(Run {
                ms,
                kib: 0,
                faults: 0,
                cpu_ms: 0.0,
            })
        },
    )?;
    Ok(Starts {
        version,
        floor,
        exec,
        run: run_pair,
        spawn,
    })
}
