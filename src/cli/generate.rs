//! `ck-cgroup generate`: the man pages and shell completions, from the clap definition itself.
//!
//! The pages are clap_mangen's sections (NAME to the after-help text, VERSION) with the sections
//! a man page is expected to have and clap cannot know added before VERSION: EXIT STATUS on every
//! page (the codes of README.md's "Exit codes" and docs/daemon-integration.md), and on the
//! top-level page ENVIRONMENT, FILES and SEE ALSO; each command's page points back to it.

use std::io::{self, Write};
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use super::args::{Cli, GenerateKind};
use super::promises::{Cmd, Kind, Stdout, prose_list, result_commands};

/// Write man pages into `out_dir`, or a completion script to stdout.
pub fn generate(kind: GenerateKind, out_dir: Option<&Path>) -> io::Result<()> {
    let mut cmd = Cli::command();
    let shell = match kind {
        GenerateKind::Man => {
            let dir = out_dir.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)?;
            return man_pages(cmd, dir);
        }
        GenerateKind::Bash => Shell::Bash,
        GenerateKind::Zsh => Shell::Zsh,
        GenerateKind::Fish => Shell::Fish,
        GenerateKind::Promises => {
            let lines = super::promises::json_lines(&cmd).map_err(io::Error::other)?;
            let mut out = io::stdout().lock();
            out.write_all(lines.as_bytes())?;
            return out.flush();
        }
    };
    // Into memory first: clap_complete panics when its writer fails (a full stdout).
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ck-cgroup", &mut buf);
    let mut out = io::stdout().lock();
    out.write_all(&buf)?;
    out.flush()
}

/// `ck-cgroup.1` and `ck-cgroup-<command>.1` for every command that is not hidden (what
/// `clap_mangen::generate_to` writes, with the sections below).
fn man_pages(cmd: clap::Command, dir: &Path) -> io::Result<()> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let names: Vec<String> = subs.iter().map(|s| s.get_name().to_string()).collect();
    for mut sub in subs {
        let name = sub.get_name().to_string();
        // `top` refuses the global --json (status --json is its JSON): its page does not offer it.
        if name == "top" {
            sub = sub.mut_arg("json", |a| a.hide(true));
        }
        let mut extra = exit_status(&name);
        extra.push_str(&section("SEE ALSO", &[see_also(&[], true)]));
        write_page(sub, false, dir, &extra)?;
    }
    let mut extra = exit_status("");
    extra.push_str(&environment());
    extra.push_str(&files());
    extra.push_str(&section("SEE ALSO", &[see_also(&names, false)]));
    write_page(cmd, true, dir, &extra)
}

/// One page: clap_mangen's sections in its order, `extra` (roff) before VERSION. On the top-level
/// page the after-help text is NOTES without its exit codes, which EXIT STATUS gives.
fn write_page(cmd: clap::Command, top: bool, dir: &Path, extra: &str) -> io::Result<()> {
    let man = Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut buf)?;
    }
    if top {
        buf.extend_from_slice(notes(&cmd).as_bytes());
    } else if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        man.render_extra_section(&mut buf)?;
    }
    buf.extend_from_slice(extra.as_bytes());
    if cmd
        .get_version()
        .or_else(|| cmd.get_long_version())
        .is_some()
    {
        man.render_version_section(&mut buf)?;
    }
    let mut file = std::fs::File::create(dir.join(man.get_filename()))?;
    file.write_all(&unquote_code(&buf))?;
    file.flush()
}

/// The help texts' Markdown code spans (`` `ck-cgroup thaw` ``) as roff bold, since man(1) shows
/// backticks as they are: each pair of backticks on a line becomes `\fB`...`\fR`; a lone one is
/// left.
fn unquote_code(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let parts: Vec<&str> = line.split('`').collect();
        if parts.len() < 3 {
            out.push_str(line);
            continue;
        }
        let pairs = (parts.len() - 1) / 2;
        for (i, part) in parts.iter().enumerate() {
            out.push_str(part);
            if i + 1 < parts.len() {
                if i < pairs * 2 {
                    out.push_str(if i % 2 == 0 { "\\fB" } else { "\\fR" });
                } else {
                    out.push('`');
                }
            }
        }
    }
    out.into_bytes()
}

/// The top-level `--help` epilogue without the paragraphs on exit codes and unwritable output.
fn notes(cmd: &clap::Command) -> String {
    let Some(text) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) else {
        return String::new();
    };
    let text = text.to_string();
    let paras: Vec<String> = text
        .split("\n\n")
        .filter(|p| !p.starts_with("Exit codes:") && !p.starts_with("A stdout or stderr"))
        .map(roff)
        .collect();
    if paras.is_empty() {
        return String::new();
    }
    section("NOTES", &paras)
}

/// Text for roff: backslashes and hyphens escaped, a line never starting with a control character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    escaped
        .lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A section of paragraphs (already roff).
fn section(title: &str, paragraphs: &[String]) -> String {
    let mut s = format!(".SH \"{title}\"\n");
    for (i, p) in paragraphs.iter().enumerate() {
        if i > 0 {
            s.push_str(".PP\n");
        }
        s.push_str(p);
        s.push('\n');
    }
    s
}

/// A tagged list: `.TP` with a bold tag per item.
fn tagged(items: &[(&str, &str)]) -> String {
    items
        .iter()
        .map(|(tag, text)| format!(".TP\n\\fB{}\\fR\n{}", roff(tag), roff(text)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// EXIT STATUS: the common codes, then what `command` (empty: the top-level page) adds
/// ([`Promises::exit_notes`](super::promises::Promises::exit_notes), [`Stdout`]).
fn exit_status(command: &str) -> String {
    let kind = Kind::from_name(command);
    let runs_cmd = kind.is_none_or(|k| k.promises().cmd != Cmd::No);
    let codes: Vec<(String, String)> = super::args::exit_codes()
        .into_iter()
        .filter(|(code, _)| !code.starts_with("126") || runs_cmd)
        .collect();
    let codes: Vec<(&str, &str)> = codes
        .iter()
        .map(|(c, m)| (c.as_str(), m.as_str()))
        .collect();
    let mut paras = vec![tagged(&codes)];
    match kind {
        None => paras.push(roff(&format!(
            "{} exit with 126 when CMD cannot be executed and 127 when it is not found (looked \
             up as execvp(3) does, before anything is made); after a successful exec the exit \
             status is CMD's. run and sandbox exit with CMD's status (128+N when CMD died of \
             signal N); run exits 1 when the rest of the tree could not be stopped. doctor exits \
             0 when the host is ready and 1 when it is not.",
            super::args::cmd_commands_prose().replace('`', "")
        ))),
        Some(k) => paras.extend(k.promises().exit_notes.iter().map(|n| roff(n))),
    }
    if kind.is_none_or(|k| matches!(k.promises().stdout, Stdout::Result { .. })) {
        let names = prose_list(result_commands()).replace('`', "");
        paras.push(roff(&format!(
            "A stdout or stderr that cannot be written changes no exit code, except for {names}, \
             whose output is their result: they exit 1 when stdout cannot take it (0 when the \
             reader closed the pipe)."
        )));
    }
    section("EXIT STATUS", &paras)
}

/// ENVIRONMENT: what the helper reads (the mutation controls' build-time switch is not one).
fn environment() -> String {
    section(
        "ENVIRONMENT",
        &[tagged(&[
            (
                "CK_CGROUP_ROOT",
                "The service's cgroup directory, as --root (which wins). Without either the \
                 root is discovered from /proc/self/cgroup and the cgroup2 mount. sandbox sets it \
                 for CMD to the fresh isolated root.",
            ),
            (
                "CK_CGROUP_BACKEND",
                "Where modules live, as --backend: cgroupfs (the default) or systemd \
                 (transient scopes made by systemd over D-Bus). With systemd, init -- CMD \
                 only executes CMD.",
            ),
            (
                "CK_CGROUP_UNIT",
                "The systemd unit whose cgroup is the root, as --unit: its ControlGroup is asked \
                 of the manager over D-Bus (the user's with --user). CK_CGROUP_ROOT wins over it, \
                 so that a sandbox's CMD stays in the sandbox.",
            ),
            ("CK_CGROUP_POLICY", "The policy file, as --policy."),
            (
                "PATH",
                "Where exec, run, sandbox and init -- CMD look CMD up, as execvp(3) does.",
            ),
            (
                "CK_CGROUP_NVIDIA_SMI",
                "The nvidia-smi that status and ps run for NVIDIA's device memory: unset, the \
                 one on PATH where the driver is loaded (/proc/driver/nvidia); a path, that \
                 program; empty, none (NVIDIA's figures unknown).",
            ),
        ])],
    )
}

/// FILES: the policy and the units of the package.
fn files() -> String {
    section(
        "FILES",
        &[tagged(&[
            (
                "/etc/ck-cgroup/policy.toml",
                "The policy: default limits and per-module overrides (TOML), read by create, \
                 exec, run and apply when it exists (--policy or CK_CGROUP_POLICY \
                 name another file). The packaged file is all comments: no limits.",
            ),
            (
                "/usr/lib/systemd/system/ck-subc.service, \
                 /usr/lib/systemd/user/ck-subc.service",
                "The ck-subc daemon's service, for the system and the user manager: a \
                 delegated cgroup subtree; ExecStartPre= runs prune --kill and \
                 ExecStart= runs init -- DAEMON. Installed where systemd looks for \
                 units (Debian 12: /lib/systemd/system, in the package ck-subc-units; make \
                 install: PREFIX/lib/systemd/system and PREFIX/lib/systemd/user).",
            ),
            (
                "module.slice, module-.slice.d/ck-cgroup.conf",
                "In the same directories: the parent of the per-module slices \
                 module-ID.slice of the systemd backend, and their defaults (accounting on, \
                 no limits).",
            ),
            (
                "ck-cgroup-metrics.service, ck-cgroup-metrics.timer",
                "In the same directories, in the package ck-cgroup, not enabled: every 15 s \
                 while ck-subc.service runs, status --format prometheus --age-cold --output \
                 /var/lib/prometheus/node-exporter/ck-subc.prom (the user manager's: \
                 $XDG_STATE_HOME/prometheus/node-exporter/ck-subc.prom), for the node \
                 exporter's textfile collector; skipped where that directory does not exist.",
            ),
            (
                "/proc/self/cgroup, /proc/self/mountinfo",
                "Where the root is discovered from.",
            ),
        ])],
    )
}

/// SEE ALSO: the command pages (top-level page) or ck-cgroup(1), then systemd's pages.
fn see_also(commands: &[String], parent: bool) -> String {
    let mut refs: Vec<String> = Vec::new();
    if parent {
        refs.push("\\fBck\\-cgroup\\fR(1)".to_string());
    }
    for c in commands {
        refs.push(format!("\\fBck\\-cgroup\\-{}\\fR(1)", roff(c)));
    }
    for (page, sec) in [
        ("systemd.resource-control", 5),
        ("systemd-cgls", 1),
        ("cgroups", 7),
    ] {
        refs.push(format!("\\fB{}\\fR({sec})", roff(page)));
    }
    refs.join(",\n")
}
