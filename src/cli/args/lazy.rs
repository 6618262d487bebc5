//! The command tree for parsing one argument list: the top level and only the subcommand the list
//! names, each built from the same derive as the whole tree ([`Globals`], `<Name>Opts`), so
//! that a call the daemon makes on every spawn and kill (`exec`, `run`, `kill`, `place`) does not
//! build the other commands and every help string ([`Cli`](super::Cli)'s tree is about four fifths
//! of `--version`'s instructions). The parse, its errors and its exit codes are the whole tree's:
//! the test below parses a corpus of good and bad argument lists, for every command, both ways
//! and compares what each gives.
//!
//! Where the whole tree is needed it is used: help asked for (`-h`, `--help`, `help`), no
//! command or one that is not known (clap suggests a similar one from the whole list), or an
//! option before the command that is not a global one.

use std::ffi::OsString;

use clap::{Args, Command};

use super::{Globals, Kind};

/// The one subcommand `name`, built from its derive; `None` for a name that is no command.
fn subcommand(name: &str) -> Option<Command> {
    Kind::from_name(name).map(|k| k.augment_args(Command::new(name.to_string())))
}

/// The global options, `top`'s arguments as [`Globals`]' derive makes them: each one's
/// `--long` name, and whether it takes a value (`--root PATH`, `--root=PATH`) or is a flag
/// (`--json`).
fn globals(top: &Command) -> Vec<(String, bool)> {
    top.get_arguments()
        .filter_map(|a| {
            Some((
                format!("--{}", a.get_long()?),
                a.get_action().takes_values(),
            ))
        })
        .collect()
}

/// The top level as [`super::Cli`]'s derive makes it, less what only help shows (`about`, the
/// exit-code epilogue) and less its subcommands.
fn top() -> Command {
    Globals::augment_args(
        Command::new("ck-cgroup")
            .version(env!("CARGO_PKG_VERSION"))
            .subcommand_required(true)
            .arg_required_else_help(true),
    )
}

/// What an argument list asks for, as far as the choice of tree goes.
#[derive(Debug, PartialEq, Eq)]
enum Wants {
    /// The command of this name.
    Command(String),
    /// `--version` (`-V`) before any command.
    Version,
    /// Anything else: the whole tree.
    Whole,
}

/// Read `args` (the program's name first) up to the command's name: global options skipped,
/// help looked for in the whole list up to `--`; the global options are `top`'s.
fn wants(args: &[OsString], top: &Command) -> Wants {
    let words: Vec<&str> = match args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .map(|a| a.to_str())
        .collect::<Option<Vec<_>>>()
    {
        Some(w) => w,
        // An argument that is not UTF-8 before `--`: clap's own error, from the whole tree.
        None => return Wants::Whole,
    };
    let help = |w: &&str| {
        *w == "--help"
            || w.starts_with("--help=")
            || (w.starts_with('-') && !w.starts_with("--") && w.contains('h'))
    };
    if words.iter().any(help) {
        return Wants::Whole;
    }
    let globals = globals(top);
    let global = |w: &str| {
        globals
            .iter()
            .find(|(g, _)| g == w)
            .map(|&(_, value)| value)
    };
    let with_value = |w: &str| {
        globals.iter().any(|(g, value)| {
            *value
                && w.strip_prefix(g.as_str())
                    .is_some_and(|r| r.starts_with('='))
        })
    };
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if let Some(value) = global(w) {
            i += if value { 2 } else { 1 };
        } else if with_value(w) {
            i += 1;
        } else if *w == "--version" || *w == "-V" {
            return Wants::Version;
        } else if w.starts_with('-') {
            return Wants::Whole;
        } else {
            return match Kind::from_name(w) {
                Some(_) => Wants::Command(w.to_string()),
                None => Wants::Whole,
            };
        }
    }
    Wants::Whole
}

/// The command `args` name, where they name one (what a usage error's hint points to).
pub fn command_in(args: &[OsString]) -> Option<String> {
    match wants(args, &top()) {
        Wants::Command(name) => Some(name),
        Wants::Version | Wants::Whole => None,
    }
}

/// The tree to parse `args` with: the top level and the one command they name, or `None`
/// where the whole tree ([`super::Cli`]'s) is needed.
pub fn tree_for(args: &[OsString]) -> Option<Command> {
    let top = top();
    match wants(args, &top) {
        Wants::Command(name) => Some(top.subcommand(subcommand(&name)?)),
        Wants::Version => Some(top),
        Wants::Whole => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::Cli;
    use crate::cli::exit::usage_lines;
    use clap::{CommandFactory, FromArgMatches, Parser};

    fn os(args: &[&str]) -> Vec<OsString> {
        std::iter::once("ck-cgroup")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// What a parse gives, as the program shows it: the parsed command (its Debug form), or the
    /// error's text, kind, exit code and stream.
    fn outcome(tree: Command, args: &[OsString]) -> String {
        match tree.try_get_matches_from(args) {
            Ok(m) => match Cli::from_arg_matches(&m) {
                Ok(cli) => format!("ok {cli:?}"),
                Err(e) => format!("from_arg_matches {:?} {}", e.kind(), e),
            },
            Err(e) => format!(
                "err {:?} exit {} stderr {} text {} lines {:?}",
                e.kind(),
                e.exit_code(),
                e.use_stderr(),
                e.render(),
                usage_lines(&e, command_in(args).as_deref())
            ),
        }
    }

    /// Every command's name in the whole tree (clap's own `help` left out).
    fn names() -> Vec<String> {
        Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect()
    }

    #[test]
    fn every_command_of_the_whole_tree_has_its_lazy_tree_and_no_other() {
        let names = names();
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, kinds);
        for n in &names {
            let t = tree_for(&os(&[n, "x"])).unwrap_or_else(|| panic!("{n}: no lazy tree"));
            let sub: Vec<&str> = t.get_subcommands().map(|c| c.get_name()).collect();
            assert_eq!(sub, [n.as_str()]);
        }
        assert!(subcommand("help").is_none());
        // Each one's arguments are the whole tree's, every property of each (its Debug form).
        let whole = Cli::command();
        for full in whole.get_subcommands() {
            let lazy = subcommand(full.get_name()).unwrap();
            let args = |c: &Command| -> Vec<String> {
                c.get_arguments().map(|a| format!("{a:?}")).collect()
            };
            assert_eq!(args(&lazy), args(full), "{}", full.get_name());
        }
        // The top level's arguments too, and its name and version.
        let top = top();
        let args =
            |c: &Command| -> Vec<String> { c.get_arguments().map(|a| format!("{a:?}")).collect() };
        assert_eq!(args(&top), args(&whole));
        assert_eq!(
            (top.get_name(), top.get_version()),
            (whole.get_name(), whole.get_version())
        );
    }

    /// The corpus: for every command, argument lists good and bad, globals before and after.
    fn corpus() -> Vec<Vec<String>> {
        let per: &[(&str, &[&[&str]])] = &[
            (
                "init",
                &[
                    &[],
                    &["--oomd-daemon", "avoid"],
                    &["--oomd-daemon", "bogus"],
                    &["--", "sleep", "1"],
                    &["x"],
                ],
            ),
            (
                "create",
                &[
                    &["a"],
                    &["a", "--memory-max", "1G"],
                    &["a", "--memory-max", "lots"],
                    &["a", "--pids-max=10", "--cpu-weight", "50"],
                    &[],
                    &["a", "b"],
                    &["a", "--nope"],
                ],
            ),
            (
                "set",
                &[
                    &["a", "--memory-high", "512M"],
                    &["a", "--memory-high"],
                    &["a"],
                    &[],
                ],
            ),
            (
                "exec",
                &[
                    &["a", "--", "sleep", "1"],
                    &["a", "--memory-max", "1G", "--", "sh", "-c", "x --help"],
                    &["a"],
                    &["a", "--", "-h"],
                    &["a", "--backend", "systemd", "--", "true"],
                    &["a", "--backend", "nope", "--", "true"],
                    &["a", "--no-cgroup-namespace", "--", "true"],
                    &["--", "true"],
                    &["a", "sleep"],
                ],
            ),
            (
                "place",
                &[
                    &["a", "1234"],
                    &["a", "12", "34"],
                    &["a"],
                    &["a", "x"],
                    &["a", "-1"],
                    &["a", "99999999999"],
                ],
            ),
            (
                "kill",
                &[
                    &["a"],
                    &["a", "--timeout", "5s"],
                    &["a", "--timeout", "soon"],
                    &["a", "--signal", "SIGINT"],
                    &["a", "--signal", "BOGUS"],
                    &[],
                    &["a", "b"],
                    &["a", "--backend", "systemd"],
                ],
            ),
            (
                "prune",
                &[
                    &[],
                    &["--dry-run"],
                    &["--kill", "--keep", "a", "--keep", "b"],
                    &["--keep"],
                    &["--if-laid-out"],
                    &["x"],
                ],
            ),
            (
                "run",
                &[
                    &["r", "--", "true"],
                    &["r", "--timeout", "1s", "--", "true"],
                    &["r"],
                    &["r", "--", ""],
                    &["--", "true"],
                ],
            ),
            ("freeze", &[&["a"], &[], &["a", "--timeout", "2s"]]),
            ("thaw", &[&["a"], &[], &["a", "b"]]),
            ("remove", &[&["a"], &[], &["a", "--force"]]),
            ("list", &[&[], &["--backend", "cgroupfs"], &["x"]]),
            ("doctor", &[&[], &["--backend", "systemd"], &["--frob"]]),
            (
                "apply",
                &[&[], &["--dry-run"], &["--best-effort", "--dry-run"], &["a"]],
            ),
            (
                "watch",
                &[
                    &[],
                    &["a", "b"],
                    &["--report-above", "1G"],
                    &["--report-above", "x"],
                    &["--pressure", "cpu:some:50ms/2s"],
                    &["--pressure", "cpu"],
                ],
            ),
            (
                "status",
                &[
                    &[],
                    &["a"],
                    &["--sort", "mem"],
                    &["--sort", "bogus"],
                    &["--wide", "-o", "id"],
                    &["-o", "id,mem,gpu_mem"],
                    &["-o", "nope"],
                    &["--format", "prometheus", "--output", "/tmp/x"],
                    &["-oid"],
                ],
            ),
            ("ps", &[&[], &["a", "--sort", "rss"], &["--sort", "nope"]]),
            (
                "top",
                &[
                    &[],
                    &["-n", "1"],
                    &["--interval", "0.01"],
                    &["--interval", "x"],
                    &["--sort", "cpu"],
                ],
            ),
            (
                "sandbox",
                &[
                    &["--", "true"],
                    &["--parent", "/sys/fs/cgroup", "--", "true"],
                    &["--prune"],
                    &[],
                ],
            ),
            (
                "generate",
                &[&["man", "--out-dir", "/tmp/x"], &["bash"], &["nope"], &[]],
            ),
        ];
        let mut out = Vec::new();
        for (name, lists) in per {
            for l in lists.iter() {
                let l: Vec<String> = l.iter().map(|s| s.to_string()).collect();
                let mut plain = vec![name.to_string()];
                plain.extend(l.iter().cloned());
                out.push(plain.clone());
                // The globals before the command, after it, with `=`, and ones that conflict.
                for g in [
                    &["--json"][..],
                    &["--root", "/sys/fs/cgroup/x"],
                    &["--root=/r", "--user"],
                    &["--unit", "u.service", "--user"],
                    &["--policy", "/dev/null", "--json"],
                    &["--root"],
                    &["--bogus"],
                    &["-V"],
                    &["--version"],
                ] {
                    let g: Vec<String> = g.iter().map(|s| s.to_string()).collect();
                    let mut before = g.clone();
                    before.extend(plain.iter().cloned());
                    out.push(before);
                    let mut after = plain.clone();
                    let at = after.iter().position(|a| a == "--").unwrap_or(after.len());
                    after.splice(at..at, g.iter().cloned());
                    out.push(after);
                }
                // Each argument left out in turn.
                for i in 1..plain.len() {
                    let mut fewer = plain.clone();
                    fewer.remove(i);
                    out.push(fewer);
                }
            }
        }
        for l in [
            &[][..],
            &["--version"],
            &["-V"],
            &["--json", "--version"],
            &["--root", "/x", "-V"],
            &["nope"],
            &["exe"],
            &["--json"],
            &["help"],
            &["help", "exec"],
            &["--", "exec"],
        ] {
            out.push(l.iter().map(|s| s.to_string()).collect());
        }
        out
    }

    #[test]
    fn the_lazy_tree_parses_every_list_of_the_corpus_as_the_whole_tree_does() {
        let mut lazy = 0;
        for l in corpus() {
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            let args = os(&refs);
            let Some(tree) = tree_for(&args) else {
                continue;
            };
            lazy += 1;
            assert_eq!(
                outcome(tree, &args),
                outcome(Cli::command(), &args),
                "{l:?}"
            );
        }
        assert!(lazy > 500, "the corpus reaches the lazy tree {lazy} times");
    }

    /// What each command's flags give ([`crate::cli::promises::Given`]) agrees with its
    /// promises, for every list of the corpus that parses, and the corpus reaches every command.
    #[test]
    fn what_the_flags_give_agrees_with_the_promises() {
        use crate::cli::promises::{Modules, Stdout};
        let mut reached = Vec::new();
        for l in corpus() {
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            let Ok(cli) = Cli::try_parse_from(os(&refs)) else {
                continue;
            };
            let (kind, p, given) = (
                cli.command.kind(),
                cli.command.promises(),
                cli.command.given(),
            );
            assert_eq!(given.backend.is_some(), p.backend, "{l:?}: --backend");
            if p.modules == Modules::None {
                assert!(given.modules.is_empty(), "{l:?}: modules");
            }
            assert!(
                given.modules.iter().all(|m| m.reads() == p.modules),
                "{l:?}: the module argument's type reads what the promise's modules do not"
            );
            if !matches!(p.stdout, Stdout::Result { unless: Some(_) }) {
                assert!(!given.elsewhere, "{l:?}: elsewhere");
            }
            reached.push(kind);
        }
        for k in Kind::ALL {
            assert!(reached.contains(&k), "the corpus parses no {k:?}");
        }
    }

    #[test]
    fn help_an_unknown_command_and_no_command_take_the_whole_tree() {
        for l in [
            &["exec", "--help"][..],
            &["exec", "a", "-h"],
            &["-h"],
            &["help", "exec"],
            &["nope"],
            &[],
            &["--bogus", "exec"],
            &["status", "-oh"],
        ] {
            assert_eq!(tree_for(&os(l)).map(|_| ()), None, "{l:?}");
        }
        // After `--` a help word is CMD's.
        assert!(tree_for(&os(&["exec", "a", "--", "ls", "--help"])).is_some());
        assert_eq!(
            wants(&os(&["--root", "/x", "--json", "kill", "a"]), &top()),
            Wants::Command("kill".into())
        );
        assert_eq!(wants(&os(&["--root=/x", "-V"]), &top()), Wants::Version);
    }
}
