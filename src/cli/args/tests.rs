use std::time::Duration;

use super::values::parse_interval;
use super::*;

/// Every row of the library's table has its flag (`--` and the key with `-`, made from the
/// row), which parses its example into the row's value, and no flag sets a limit unasked.
#[test]
fn every_limit_has_a_flag() {
    use ck_cgroup::limits::LIMITS;
    let none = Cli::try_parse_from(["ck-cgroup", "create", "x"]).unwrap();
    let Command::Create(CreateOpts { limits, .. }) = none.command else {
        panic!("create");
    };
    assert!(
        limits.limits().values().is_empty(),
        "a limit without its flag"
    );
    for spec in LIMITS {
        let flag = format!("--{}", spec.flag());
        let mut argv = vec!["ck-cgroup", "create", "x", flag.as_str()];
        if spec.unit != ck_cgroup::limits::Unit::Bool {
            argv.push(spec.example);
        }
        let cli = Cli::try_parse_from(&argv)
            .unwrap_or_else(|e| panic!("{}: no flag {flag}: {e}", spec.key));
        let Command::Create(CreateOpts { limits, .. }) = cli.command else {
            panic!("create");
        };
        let want = (spec.parse)(spec.example).unwrap();
        assert_eq!(limits.limits().get(spec.key), Some(want), "{}", spec.key);
        assert_eq!(limits.limits().values().len(), 1, "{}", spec.key);
    }
}

#[test]
fn intervals() {
    assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
    assert_eq!(parse_interval("0.25"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_interval("0.1"), Ok(Duration::from_millis(100)));
    for bad in ["0.05", "0", "-1", "abc", "", "2s", "nan", "inf", "1e300"] {
        assert!(parse_interval(bad).is_err(), "{bad:?} was taken");
    }
}

#[test]
fn cli_is_consistent() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

/// Every subcommand clap knows has a kind, and [`Kind::ALL`] holds each kind once.
#[test]
fn every_subcommand_has_one_kind() {
    use crate::cli::promises::json_lines;
    use clap::CommandFactory;
    let cli = Cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|s| s.get_name()).collect();
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        names, kinds,
        "Kind::ALL against clap's subcommands, in order"
    );
    assert!(json_lines(&cli).is_ok());
}

/// The properties that clap's definition also shows agree with it: a CMD argument, a
/// `--backend` for modules, a module argument.
#[test]
fn properties_agree_with_the_clap_definition() {
    use crate::cli::promises::{Cmd, Missing, Modules};
    use clap::CommandFactory;
    let cli = Cli::command();
    for sub in cli.get_subcommands() {
        let kind = Kind::from_name(sub.get_name()).unwrap();
        let p = kind.promises();
        let has = |id: &str| sub.get_arguments().any(|a| a.get_id() == id);
        // `prune --keep ID`, not `sandbox --keep` (a flag).
        let keeps = sub
            .get_arguments()
            .any(|a| a.get_id() == "keep" && a.get_action().takes_values());
        assert_eq!(has("cmd"), p.cmd != Cmd::No, "{kind:?}: CMD");
        assert_eq!(
            has("backend") && kind != Kind::Sandbox,
            p.backend,
            "{kind:?}: --backend"
        );
        assert_eq!(
            has("id") || has("ids") || keeps,
            p.modules != Modules::None,
            "{kind:?}: modules"
        );
        assert_eq!(
            p.modules == Modules::None,
            p.missing == Missing::NotGiven,
            "{kind:?}: missing"
        );
    }
}
