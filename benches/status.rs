//! `cargo bench --bench status` (`make bench`): the time of `status --json` over 1,000 modules,
//! beside the physical limit (a minimal loop that opens and reads the same files) and a plain
//! shell loop that reads them with `cat`. A report, not a test: nothing is asserted.
//!
//! Needs root and a cgroup2 mount (unified or hybrid). Everything runs in one fresh
//! [`Sandbox`] under the cgroup2 mount's root, never in the caller's cgroup; it is removed at
//! the end and the run checks that nothing it made is left.
//!
//! The sandbox holds 1,000 modules `m0000` to `m0999` made with `Root::create`; every tenth
//! (`m0000`, `m0010`, ...) has one `sleep 600` spawned into it with `Root::spawn`, so that the
//! `/proc/<pid>/status` fallback for memory runs where the memory controller is not enabled.
//! The bench is a child subreaper and reaps every process it started (some hosts' PID 1 never
//! reaps).
//!
//! Rows (each repetition runs every row once, in rotating order, after one untimed warm-up
//! round):
//!
//! - `limit (open+read)`: the physical limit. One listing of `subc-modules/`, then for each
//!   module an `openat` + `read` (until a short read) + `close` of each of [`FILES`], relative to
//!   the listing's fd, with no parsing; a file that does not exist is a failed `openat`, and
//!   counts, because `status` attempts it too. Where neither `memory.current` nor
//!   `memory.swap.current` opened, also `/proc/<pid>/status` of each pid read from `cgroup.procs`
//!   (what `status` falls back to).
//! - `shell (bash, cat)`: `for d in <root>/subc-modules/*/; do cat $d/<each of FILES>; ...` in
//!   bash, one `cat` per module plus one per process for `/proc/<pid>/status`, output to
//!   `/dev/null`.
//! - `Root::list`: the listing that `status` starts with (populated state and process count per
//!   module); shown to tell where the time goes, part of the next rows.
//! - `Root::status`: the library call `Root::status(ALL)`.
//! - `status + to_vec` (a): the same call plus `serde_json::to_vec` of its result.
//! - `binary --json` (b): the release binary `ck-cgroup --root <sandbox> --json status` spawned
//!   as a process, from the spawn until it has exited and its stdout (a pipe) is read to the end.

use ck_bench::common;

use std::ffi::CStr;
use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ck_cgroup::discover::cgroup2_mount;
use ck_cgroup::{Root, Sandbox};
use common::{
    Res, binary, median, min, ms_since, print_cgroup_and_binary, print_machine, reap_all,
    report_cleanup,
};
use rustix::fs::{Dir, FileType, Mode, OFlags};

/// Modules in the sandbox.
const MODULES: usize = 1000;
/// One module in this many gets a `sleep 600`.
const EVERY: usize = 10;
/// Timed repetitions of each row (after one untimed warm-up round).
const REPS: usize = 7;
/// The issue's goal: `status --json` within this factor of the limit...
const GOAL_X_LIMIT: f64 = 1.5;
/// ...and "many times faster than the shell loop": we read "many" as at least this factor.
const GOAL_X_SHELL: f64 = 10.0;
/// Longest wait for the spawned processes to become `sleep`.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The files `status` reads in each module (`crates/ck-cgroup/src/telemetry/`, `Root::list`), in the order it
/// reads them. On a host without the memory, pids or cpu controllers most of them are absent.
const FILES: [&str; 18] = [
    "cgroup.events",
    "cgroup.procs",
    "memory.current",
    "memory.swap.current",
    "memory.events",
    "memory.stat",
    "memory.peak",
    "pids.current",
    "cpu.stat",
    "memory.pressure",
    "cpu.pressure",
    "io.pressure",
    "memory.high",
    "memory.max",
    "memory.swap.max",
    "pids.max",
    "cpu.weight",
    "memory.oom.group",
];

/// The shell loop: `$1` is the sandbox; the files come after it.
const SHELL_SH: &str = r#"root=$1; shift
for d in "$root"/subc-modules/*/; do
  d=${d%/}
  files=()
  for f in "$@"; do files+=("$d/$f"); done
  cat "${files[@]}" 2>/dev/null
  if [ ! -e "$d/memory.current" ] && [ ! -e "$d/memory.swap.current" ]; then
    while read -r p; do cat "/proc/$p/status" 2>/dev/null; done < "$d/cgroup.procs"
  fi
done > /dev/null
:"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Limit,
    Shell,
    List,
    Library,
    Binary,
}

const KINDS: [Kind; 5] = [
    Kind::Limit,
    Kind::Shell,
    Kind::List,
    Kind::Library,
    Kind::Binary,
];

/// The rows of the table, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Limit,
    Shell,
    List,
    Status,
    StatusJson,
    Binary,
}

const ROWS: [Row; 6] = [
    Row::Limit,
    Row::List,
    Row::Status,
    Row::StatusJson,
    Row::Binary,
    Row::Shell,
];

impl Row {
    fn label(self) -> &'static str {
        match self {
            Row::Limit => "limit (open+read)",
            Row::Shell => "shell (bash, cat)",
            Row::List => "Root::list",
            Row::Status => "Root::status",
            Row::StatusJson => "status + to_vec (a)",
            Row::Binary => "binary --json (b)",
        }
    }

    fn note(self) -> &'static str {
        match self {
            Row::Limit => "openat+read+close of the same files, no parsing",
            Row::Shell => "one cat per module, one per process",
            Row::List => "part of status: listing, cgroup.events, cgroup.procs",
            Row::Status => "library call",
            Row::StatusJson => "library call + serde_json::to_vec",
            Row::Binary => "spawned process, stdout read to the end",
        }
    }
}

/// What the limit loop did in one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Opens {
    modules: usize,
    opened: usize,
    failed: usize,
    proc_reads: usize,
}

fn main() -> Res<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let mount = cgroup2_mount()?;
    let bin = binary(env!("CARGO_BIN_EXE_ck-cgroup"));
    print_header(&mount, &bin)?;

    let sandbox = Sandbox::create(&mount)?;
    let sandbox_path = sandbox.path().to_path_buf();
    println!("sandbox: {}", sandbox_path.display());

    // Whatever happens, the sandbox is destroyed and what was started reaped.
    let run = measure_all(&sandbox, &bin);
    let destroyed = sandbox.destroy();
    reap_all();
    let (samples, opens, json_bytes, elapsed) = run?;
    destroyed?;

    print_table(&samples, opens, json_bytes);
    report_cleanup(&mount, &sandbox_path)?;
    println!("measured in {:.1} s", elapsed.as_secs_f64());
    Ok(())
}

/// Every sample of every row: milliseconds per row, what the limit loop opened, the JSON size,
/// and how long the measuring took.
type Measured = (Vec<Vec<f64>>, Opens, usize, Duration);

/// Populate the sandbox and run every repetition.
fn measure_all(sandbox: &Sandbox, bin: &Path) -> Res<Measured> {
    let sandbox_path = sandbox.path().to_path_buf();
    let setup = Instant::now();
    let spawned = populate(sandbox.root(), &sandbox_path)?;
    println!(
        "modules: {MODULES} (m0000..m{:04}), {spawned} of them with one `sleep 600`; set up in {:.1} s",
        MODULES - 1,
        setup.elapsed().as_secs_f64()
    );
    println!();

    let started = Instant::now();
    let mut samples: Vec<Vec<f64>> = ROWS.iter().map(|_| Vec::new()).collect();
    let mut opens = Opens::default();
    let mut json_bytes = 0;
    for rep in 0..=REPS {
        // Rotate the order so that no row always runs right after another.
        for k in 0..KINDS.len() {
            let kind = KINDS[(k + rep) % KINDS.len()];
            let timed = measure(sandbox.root(), &sandbox_path, bin, kind, spawned)?;
            if let Some(o) = timed.opens {
                opens = o;
            }
            if let Some(b) = timed.json_bytes {
                json_bytes = b;
            }
            // Round 0 is the warm-up.
            if rep > 0 {
                for (row, ms) in timed.rows {
                    let i = ROWS
                        .iter()
                        .position(|r| *r == row)
                        .ok_or("a row missing from ROWS")?;
                    samples[i].push(ms);
                }
            }
        }
    }
    let elapsed = started.elapsed();

    Ok((samples, opens, json_bytes, elapsed))
}

fn print_header(mount: &Path, bin: &Path) -> Res<()> {
    print_machine("ck-cgroup status benchmark")?;
    print_cgroup_and_binary(mount, bin)?;
    println!("repetitions: {REPS} (after 1 warm-up)");
    Ok(())
}

/// Make the modules, spawn a `sleep 600` into every `EVERY`th, wait until each is `sleep`
/// ([`common::populate`]), and check that the sandbox holds them all.
fn populate(root: &Root, sandbox: &Path) -> Res<usize> {
    let spawned = common::populate(root, 0..MODULES, |i| format!("m{i:04}"), EVERY, TIMEOUT)?;
    let listed = fs::read_dir(sandbox.join("subc-modules"))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .count();
    if listed != MODULES {
        return Err(format!("{listed} modules in the sandbox, want {MODULES}").into());
    }
    Ok(spawned)
}

/// One measurement of one kind: milliseconds per row, and what the run saw.
struct Timed {
    rows: Vec<(Row, f64)>,
    opens: Option<Opens>,
    json_bytes: Option<usize>,
}

fn measure(root: &Root, sandbox: &Path, bin: &Path, kind: Kind, populated: usize) -> Res<Timed> {
    let mut timed = Timed {
        rows: Vec::new(),
        opens: None,
        json_bytes: None,
    };
    match kind {
        Kind::Limit => {
            let t0 = Instant::now();
            let opens = limit(&sandbox.join("subc-modules"))?;
            timed.rows.push((Row::Limit, ms_since(t0)));
            if opens.modules != MODULES || opens.proc_reads != populated {
                return Err(format!("the limit loop saw {opens:?}").into());
            }
            timed.opens = Some(opens);
        }
        Kind::Shell => {
            let t0 = Instant::now();
            let st = Command::new("bash")
                .arg("-c")
                .arg(SHELL_SH)
                .arg("bash")
                .arg(sandbox)
                .args(FILES)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()?;
            timed.rows.push((Row::Shell, ms_since(t0)));
            if !st.success() {
                return Err(format!("the shell loop failed: {st}").into());
            }
        }
        Kind::List => {
            let t0 = Instant::now();
            let list = root.list()?;
            timed.rows.push((Row::List, ms_since(t0)));
            if let Some(m) = list.iter().find(|m| m.procs.is_none()) {
                return Err(format!("list: the processes of {} could not be read", m.name).into());
            }
            let procs: usize = list.iter().filter_map(|m| m.procs).sum();
            if list.len() != MODULES || procs != populated {
                return Err(format!("list: {} modules, {procs} processes", list.len()).into());
            }
        }
        Kind::Library => {
            let t0 = Instant::now();
            let status = root.status(&ck_cgroup::Modules::All)?;
            let t1 = Instant::now();
            let json = serde_json::to_vec(&status)?;
            let t2 = Instant::now();
            timed
                .rows
                .push((Row::Status, (t1 - t0).as_secs_f64() * 1e3));
            timed
                .rows
                .push((Row::StatusJson, (t2 - t0).as_secs_f64() * 1e3));
            check_status(&status, populated)?;
            timed.json_bytes = Some(json.len());
        }
        Kind::Binary => {
            let t0 = Instant::now();
            let mut child = Command::new(bin)
                .arg("--root")
                .arg(sandbox)
                .arg("--json")
                .arg("status")
                .env_remove("CK_CGROUP_ROOT")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()?;
            let mut out = Vec::new();
            if let Some(mut stdout) = child.stdout.take() {
                stdout.read_to_end(&mut out)?;
            }
            let st = child.wait()?;
            timed.rows.push((Row::Binary, ms_since(t0)));
            if !st.success() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    e.read_to_string(&mut err)?;
                }
                return Err(format!("{} --json status: {st}: {err}", bin.display()).into());
            }
            let v: serde_json::Value = serde_json::from_slice(&out)?;
            let n = v["modules"]
                .as_array()
                .ok_or("the binary's JSON has no modules array")?
                .len();
            if n != MODULES {
                return Err(format!("the binary reported {n} modules, want {MODULES}").into());
            }
        }
    }
    Ok(timed)
}

/// Every module is there, the populated ones have their process and a memory figure.
fn check_status(status: &[ck_cgroup::telemetry::ModuleStatus], populated: usize) -> Res<()> {
    if let Some(m) = status.iter().find(|m| m.procs.value.is_none()) {
        return Err(format!("status: the processes of {} could not be read", m.name).into());
    }
    let with_procs: Vec<_> = status
        .iter()
        .filter(|m| m.procs.value.is_some_and(|n| n > 0))
        .collect();
    if status.len() != MODULES
        || with_procs.len() != populated
        || with_procs.iter().any(|m| m.memory_current.value.is_none())
    {
        return Err(format!(
            "status: {} modules, {} with processes, want {MODULES} and {populated} with a memory figure",
            status.len(),
            with_procs.len()
        )
        .into());
    }
    Ok(())
}

/// The physical limit: list `modules` once, then open and read every file of [`FILES`] in each
/// module (and `/proc/<pid>/status` where the memory files are absent). Nothing is parsed but
/// the pids.
fn limit(modules: &Path) -> Res<Opens> {
    let dir = rustix::fs::open(
        modules,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names: Vec<Vec<u8>> = Vec::with_capacity(MODULES);
    for ent in Dir::read_from(&dir)? {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if ent.file_type() == FileType::Directory && name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    let mut opens = Opens {
        modules: names.len(),
        ..Opens::default()
    };
    let mut buf = [0u8; 4096];
    let mut path: Vec<u8> = Vec::with_capacity(256);
    let mut pids: Vec<u8> = Vec::with_capacity(256);
    for name in &names {
        let mut memory_file = false;
        pids.clear();
        for file in FILES {
            path.clear();
            path.extend_from_slice(name);
            path.push(b'/');
            path.extend_from_slice(file.as_bytes());
            path.push(0);
            let c = CStr::from_bytes_with_nul(&path)?;
            match rustix::fs::openat(&dir, c, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
                Ok(fd) => {
                    opens.opened += 1;
                    let keep = file == "cgroup.procs";
                    read_to_short(&fd, &mut buf, keep.then_some(&mut pids))?;
                    memory_file |= file == "memory.current" || file == "memory.swap.current";
                }
                Err(_) => opens.failed += 1,
            }
        }
        if memory_file {
            continue;
        }
        for pid in pids.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            path.clear();
            path.extend_from_slice(b"/proc/");
            path.extend_from_slice(pid);
            path.extend_from_slice(b"/status\0");
            let c = CStr::from_bytes_with_nul(&path)?;
            if let Ok(fd) = rustix::fs::open(c, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
                read_to_short(&fd, &mut buf, None)?;
                opens.proc_reads += 1;
            }
        }
    }
    Ok(opens)
}

/// Read until a short read (kernel files are small: one `read` each, in practice).
fn read_to_short(fd: &OwnedFd, buf: &mut [u8], mut keep: Option<&mut Vec<u8>>) -> Res<()> {
    loop {
        let n = rustix::io::read(fd, &mut *buf)?;
        if let Some(k) = keep.as_deref_mut() {
            k.extend_from_slice(&buf[..n]);
        }
        if n < buf.len() {
            return Ok(());
        }
    }
}

fn print_table(samples: &[Vec<f64>], opens: Opens, json_bytes: usize) {
    let med = |row: Row| {
        ROWS.iter()
            .position(|r| *r == row)
            .map_or(f64::NAN, |i| median(&samples[i]))
    };
    let limit = med(Row::Limit);
    println!(
        "{:<20} {:>10} {:>9} {:>8} {:>10}   notes",
        "row", "median ms", "min ms", "x limit", "us/module"
    );
    for (row, ms) in ROWS.iter().zip(samples) {
        println!(
            "{:<20} {:>10.3} {:>9.3} {:>8.2} {:>10.1}   {}",
            row.label(),
            median(ms),
            min(ms),
            median(ms) / limit,
            median(ms) * 1e3 / MODULES as f64,
            row.note()
        );
    }
    println!();
    println!(
        "limit loop: {} modules, {} opens per module ({} opened, {} absent: failed openat), {} /proc/<pid>/status",
        opens.modules,
        FILES.len(),
        opens.opened / opens.modules.max(1),
        opens.failed / opens.modules.max(1),
        opens.proc_reads
    );
    println!(
        "JSON: {json_bytes} bytes ({} per module)",
        json_bytes / MODULES
    );
    let shell = med(Row::Shell);
    for row in [Row::StatusJson, Row::Binary] {
        println!(
            "shell / {:<20} = {:.1}  (medians)",
            row.label(),
            shell / med(row)
        );
    }
    println!();
    for row in [Row::StatusJson, Row::Binary] {
        let x = med(row) / limit;
        println!(
            "goal: {} within {GOAL_X_LIMIT} x limit: {x:.2} x -> {}",
            row.label(),
            if x <= GOAL_X_LIMIT { "met" } else { "NOT met" }
        );
    }
    for row in [Row::StatusJson, Row::Binary] {
        let x = shell / med(row);
        println!(
            "goal: {} at least {GOAL_X_SHELL} x faster than the shell loop: {x:.1} x -> {}",
            row.label(),
            if x >= GOAL_X_SHELL { "met" } else { "NOT met" }
        );
    }
}
