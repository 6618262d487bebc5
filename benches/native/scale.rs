//! `status --json` against the limit loop at 100, 1,000 and 10,000 modules, both as processes
//! of their own (each pays one process start): the helper, and this bench run as
//! `native limit-loop ...`, which opens and reads exactly the files one `status --json` was seen
//! opening (inotify `IN_OPEN`) and nothing else, each module's from `subc-modules/`'s fd.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ck_cgroup::Root;

use crate::common::{self, Res};
use crate::limit::{self, Seen};
use crate::proc::{Pair, run};

/// One module in this many gets a `sleep 600` (so that `status` reads a populated module's
/// files, and `/proc/<pid>/status` where the memory controller is off).
const EVERY: usize = 10;

/// One size's pair: `status --json` (A) and the limit loop (B).
pub struct Scale {
    pub modules: usize,
    pub pair: Pair,
}

fn name(i: usize) -> String {
    format!("m{i:05}")
}

/// Make modules `from..to`, a `sleep 600` in every `EVERY`th; wait until each is `sleep`.
fn populate(root: &Root, from: usize, to: usize) -> Res<()> {
    common::populate(root, from..to, name, EVERY, Duration::from_secs(60)).map(drop)
}

fn status_cmd(bin: &Path, sandbox: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--root")
        .arg(sandbox)
        .args(["--json", "status"])
        .env_remove("CK_CGROUP_ROOT")
        .env_remove("CK_CGROUP_POLICY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// The files one `status --json` opens: in the root, in `subc-modules/`, in the populated module
/// `m00000` and in the empty one `m00001`.
fn see_status_files(bin: &Path, sandbox: &Path) -> Res<Seen> {
    limit::see_status_files(sandbox, &name(0), &name(1), || {
        run(&mut status_cmd(bin, sandbox), "status --json").map(|_| ())
    })
}

/// Every size in `sizes` (ascending), with its number of pairs.
pub fn measure(
    root: &Root,
    sandbox: &Path,
    bin: &Path,
    sizes: &[(usize, usize)],
) -> Res<(Vec<Scale>, Seen)> {
    let me = std::env::current_exe()?;
    let mut made = 0;
    let mut out = Vec::new();
    let mut seen = None;
    for &(n, pairs) in sizes {
        populate(root, made, n)?;
        made = n;
        let s = match seen.take() {
            Some(s) => s,
            None => see_status_files(bin, sandbox)?,
        };
        let mut limit = Command::new(&me);
        limit
            .arg("limit-loop")
            .arg(sandbox)
            .arg(s.root.join(","))
            .arg(s.empty.join(","))
            .arg(s.populated.join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let pair = Pair::measure(
            pairs,
            || run(&mut status_cmd(bin, sandbox), "status --json"),
            || run(&mut limit, "limit-loop"),
        )?;
        out.push(Scale { modules: n, pair });
        seen = Some(s);
    }
    Ok((out, seen.ok_or("no size measured")?))
}
