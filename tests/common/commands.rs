//! Every subcommand as the CLI defines it (`ck-cgroup generate promises`: one JSON object per
//! subcommand clap knows, with what it promises), and valid arguments for each. Tests that must
//! hold for every command iterate [`every`], so a new command is in them the day it exists: until
//! [`valid_args`] knows it, they fail naming it.

use std::process::Command as Process;

use super::{bin, ok};

/// One subcommand and its promises (`cli::promises` in the binary; docs/commands.md's table).
#[derive(Debug, Clone)]
pub struct Cmd {
    pub name: String,
    /// `result`, `report` or `cmd`.
    pub stdout: String,
    /// The argument that sends the result elsewhere (`--output`, `man`).
    pub stdout_unless: Option<String>,
    /// What `--json` does: `stdout`, `stderr`, `refused` or `ignored`.
    pub json: String,
    /// `none`, `ids` or `names`.
    pub modules: String,
    /// `not_given`, `no_module`, `already_gone`, `made`, `awaited` or `ignored`.
    pub missing: String,
    /// `default` or `when_given`.
    pub policy: String,
    /// `no`, `required` or `optional`.
    pub cmd: String,
    pub backend: bool,
    /// `service`, `lays_out`, `checks` or `none`.
    pub root: String,
}

/// Every subcommand, from the binary, in `--help`'s order.
pub fn every() -> Vec<Cmd> {
    let out = ok(Process::new(bin())
        .args(["generate", "promises"])
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap());
    let text = |v: &serde_json::Value, k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("generate promises: no {k} in {v}"))
            .to_string()
    };
    let cmds: Vec<Cmd> = out
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect(l);
            Cmd {
                name: text(&v, "command"),
                stdout: text(&v, "stdout"),
                stdout_unless: v["stdout_unless"].as_str().map(String::from),
                json: text(&v, "json"),
                modules: text(&v, "modules"),
                missing: text(&v, "missing"),
                policy: text(&v, "policy"),
                cmd: text(&v, "cmd"),
                backend: v["backend"].as_bool().expect(l),
                root: text(&v, "root"),
            }
        })
        .collect();
    assert!(cmds.len() > 15, "generate promises: {out}");
    cmds
}

/// Valid arguments for `name` on a root that is laid out and has no module `p` (the module, where
/// it takes one, is `p`, an argument of its own); `tmp` is a directory the command may use.
/// Panics for a command it does not know: a new command needs its line here.
pub fn valid_args(name: &str, tmp: &str) -> Vec<String> {
    let args: Vec<&str> = match name {
        "init" => vec!["init"],
        "create" => vec!["create", "p"],
        "set" => vec!["set", "p", "--pids-max", "5", "--best-effort"],
        "place" => vec!["place", "p", "999999999"],
        "remove" => vec!["remove", "p"],
        "apply" => vec!["apply"],
        "kill" => vec!["kill", "p"],
        "prune" => vec!["prune", "--keep", "p"],
        "list" => vec!["list"],
        "status" => vec!["status", "p"],
        "ps" => vec!["ps", "p"],
        "doctor" => vec!["doctor"],
        "freeze" => vec!["freeze", "p"],
        "thaw" => vec!["thaw", "p"],
        "watch" => vec!["watch", "p"],
        "top" => vec!["top", "-n", "1"],
        "exec" => vec!["exec", "p", "--", "true"],
        "run" => vec!["run", "p", "--", "true"],
        "sandbox" => vec!["sandbox", "--prune", "--parent", tmp],
        "generate" => vec!["generate", "bash"],
        other => panic!(
            "the command {other} has no valid arguments in tests/common/commands.rs: add them, \
             and it is in every test that iterates the commands"
        ),
    };
    args.into_iter().map(String::from).collect()
}

/// `args` with the module `p` replaced by `module`.
pub fn with_module(args: &[String], module: &str) -> Vec<String> {
    args.iter()
        .map(|a| if a == "p" { module } else { a }.to_string())
        .collect()
}
