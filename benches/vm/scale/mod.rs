//! Section 3: scale. `list --json`, `status --json` and `kill` of one module among each size,
//! beside the limit loop ([`limit`]) that opens and reads exactly the files `status` was seen
//! opening; the table and its goals are [`report`]'s. Section 4 (`watch`) runs at the size
//! `VM_BENCH_WATCH_AT`, among these modules.

mod report;

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ck_cgroup::spawn::ModuleCommand;

use crate::common::{Res, dev_null, ms_since, reap_all};
use crate::config::{Ctx, TIMEOUT};
use crate::helpers::{ck, id, peak_rss, run_proc};
use crate::watch::section_watch;
use ck_bench::limit::{self, Seen, limit};
use report::print_scale;

fn see_status_files(ctx: &Ctx, populated: &str, empty: &str) -> Res<Seen> {
    limit::see_status_files(&ctx.rpath, populated, empty, || {
        run_proc(&mut ck(ctx, &["--json", "status"]), "status --json").map(|_| ())
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sc {
    Limit,
    LimitProc,
    LibStatus,
    List,
    Status,
    Kill,
}

const SCS: [Sc; 6] = [
    Sc::Limit,
    Sc::LimitProc,
    Sc::LibStatus,
    Sc::List,
    Sc::Status,
    Sc::Kill,
];

impl Sc {
    fn label(self) -> &'static str {
        match self {
            Sc::Limit => "limit loop (in process)",
            Sc::LimitProc => "limit loop (process)",
            Sc::LibStatus => "Root::status + to_vec",
            Sc::List => "ck-cgroup --json list",
            Sc::Status => "ck-cgroup --json status",
            Sc::Kill => "ck-cgroup kill (1 module)",
        }
    }
}

const VICTIM: &str = "m00000";

fn spawn_victim(ctx: &Ctx) -> Res<()> {
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("600")
        .stdin(dev_null()?)
        .stdout(dev_null()?)
        .stderr(dev_null()?);
    let child = ctx.root.spawn(&id(VICTIM)?, &cmd)?;
    drop(child);
    let deadline = Instant::now() + TIMEOUT;
    while !ctx
        .rpath
        .join("subc-modules")
        .join(VICTIM)
        .join("cgroup.events")
        .exists()
        || !fs::read_to_string(
            ctx.rpath
                .join("subc-modules")
                .join(VICTIM)
                .join("cgroup.events"),
        )?
        .contains("populated 1")
    {
        if Instant::now() > deadline {
            return Err("the victim's sleep did not start".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn scale_once(ctx: &Ctx, k: Sc, seen: &Seen, n: usize) -> Res<f64> {
    let ms = match k {
        Sc::Limit => {
            let t0 = Instant::now();
            let o = limit(&ctx.rpath, seen)?;
            let ms = ms_since(t0);
            if o.modules != n {
                return Err(format!("the limit loop saw {o:?}, want {n} modules").into());
            }
            ms
        }
        Sc::LimitProc => {
            let me = std::env::current_exe()?;
            let p = run_proc(
                Command::new(me)
                    .arg("limit-loop")
                    .arg(&ctx.rpath)
                    .arg(seen.root.join(","))
                    .arg(seen.empty.join(","))
                    .arg(seen.populated.join(","))
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
                "limit-loop",
            )?;
            p.ms
        }
        Sc::LibStatus => {
            let t0 = Instant::now();
            let st = ctx.root.status(&ck_cgroup::Modules::All)?;
            let v = serde_json::to_vec(&st)?;
            let ms = ms_since(t0);
            if st.len() != n || v.is_empty() {
                return Err(format!("Root::status gave {} modules, want {n}", st.len()).into());
            }
            ms
        }
        Sc::List | Sc::Status => {
            let what = if k == Sc::List { "list" } else { "status" };
            let p = run_proc(
                ck(ctx, &["--json", what])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
                what,
            )?;
            if p.out.len() < n * 10 {
                return Err(
                    format!("{what} --json wrote {} bytes for {n} modules", p.out.len()).into(),
                );
            }
            p.ms
        }
        Sc::Kill => {
            let p = run_proc(ck(ctx, &["kill", VICTIM]).stderr(Stdio::piped()), "kill")?;
            // Untimed: the victim back, with its sleep.
            let _ = ctx.root.create(&id(VICTIM)?)?;
            spawn_victim(ctx)?;
            reap_all();
            p.ms
        }
    };
    Ok(ms)
}

struct SizeRow {
    n: usize,
    reps: usize,
    create_ms: f64,
    samples: Vec<Vec<f64>>,
    /// Peak RSS (KiB) of the process rows; `None` where it could not be read.
    rss: [Option<u64>; 6],
}

pub fn section_scale(ctx: &mut Ctx) -> Res<()> {
    let sizes = ctx.cfg.sizes.clone();
    let mut made = 0usize;
    let mut seen: Option<Seen> = None;
    let mut rows: Vec<SizeRow> = Vec::new();
    let mut watch: Option<String> = None;
    for &n in &sizes {
        let t0 = Instant::now();
        for i in made..n {
            let _ = ctx.root.create(&id(&format!("m{i:05}"))?)?;
        }
        let create_ms = ms_since(t0);
        let added = n.saturating_sub(made);
        if made == 0 {
            spawn_victim(ctx)?;
        }
        made = made.max(n);
        if seen.is_none() {
            let s = see_status_files(ctx, VICTIM, "m00001")?;
            println!();
            println!("section 3: the files one `status --json` opened (inotify IN_OPEN):");
            println!("  root:              {}", s.root.join(" "));
            println!("  populated module:  {}", s.populated.join(" "));
            println!("  empty module:      {}", s.empty.join(" "));
            if !s.populated.iter().any(|f| f == "memory.current") {
                println!(
                    "  (no memory.current: status also reads /proc/<pid>/status, which the loop does not)"
                );
            }
            seen = Some(s);
        }
        let seen = seen.as_ref().ok_or("no file list")?;
        let big = n >= ctx.cfg.big;
        let reps = if big { ctx.cfg.big_reps } else { ctx.cfg.reps };
        let mut samples: Vec<Vec<f64>> = SCS.iter().map(|_| Vec::new()).collect();
        let mut rss = [None; 6];
        if ctx.cfg.on(3) {
            for rep in 0..reps + usize::from(!big) {
                for j in 0..SCS.len() {
                    let i = (j + rep) % SCS.len();
                    let ms = scale_once(ctx, SCS[i], seen, n)?;
                    // Round 0 is the warm-up (none at the big sizes).
                    if big || rep > 0 {
                        samples[i].push(ms);
                    }
                }
            }
        }
        if ctx.cfg.on(3) {
            // Untimed: the peak RSS of each process row, through peakrss.
            let me = std::env::current_exe()?;
            let (r, e, p) = (
                seen.root.join(","),
                seen.empty.join(","),
                seen.populated.join(","),
            );
            let rp = ctx.rpath.to_string_lossy().into_owned();
            let i = |k: Sc| SCS.iter().position(|x| *x == k).unwrap_or(0);
            rss[i(Sc::LimitProc)] = peak_rss(ctx, Some(&me), &["limit-loop", &rp, &r, &e, &p])?;
            rss[i(Sc::List)] = peak_rss(ctx, None, &["--json", "list"])?;
            rss[i(Sc::Status)] = peak_rss(ctx, None, &["--json", "status"])?;
        }
        println!(
            "size {n}: {added} modules made in {:.1} s ({:.2} ms each), measured {reps} x{}",
            create_ms / 1000.0,
            create_ms / added.max(1) as f64,
            if big {
                " (big size: fewer repetitions, no warm-up)"
            } else {
                " after 1 warm-up"
            }
        );
        rows.push(SizeRow {
            n,
            reps,
            create_ms,
            samples,
            rss,
        });
        if ctx.cfg.on(4) && n == ctx.cfg.watch_at {
            watch = Some(section_watch(ctx, n)?);
        }
    }
    if ctx.cfg.on(3) {
        print_scale(&rows);
    }
    if let Some(w) = watch {
        print!("{w}");
    } else if ctx.cfg.on(4) {
        println!();
        println!(
            "section 4: not run: VM_BENCH_WATCH_AT={} is not one of the sizes",
            ctx.cfg.watch_at
        );
    }
    for r in &rows {
        for (k, v) in SCS.iter().zip(r.rss) {
            if v.is_some() && matches!(k, Sc::List | Sc::Status | Sc::LimitProc) {
                ctx.rss.push((
                    format!("{} over {}", k.label(), r.n),
                    v,
                    "peakrss (wait4 ru_maxrss)",
                ));
            }
        }
    }
    // Untimed: every module removed (the sandbox's teardown would, but slower).
    let t0 = Instant::now();
    let _ = ctx.root.kill(VICTIM, TIMEOUT)?;
    for i in 1..made {
        let _ = ctx.root.remove(format!("m{i:05}"))?;
    }
    println!(
        "({made} modules removed in {:.1} s)",
        t0.elapsed().as_secs_f64()
    );
    reap_all();
    Ok(())
}
