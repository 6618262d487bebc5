//! The limit flags of `create`, `set`, `exec` and `run`: one clap field per row of the library's
//! limit table.

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::limits::Value;

/// Per-module limits (written to the module's own leaf). One flag per row of the library's
/// `limits::LIMITS`, made from the row (its key with `-` for `_`, its value name, its help) and
/// parsed by that row's parser: a new limit is a new row, and its flag comes with it. The row of
/// `memory.oom.group` is the pair `--oom-group`/`--no-oom-group`; `--oomd` (no kernel file, no
/// row) and `--best-effort` are this struct's own.
#[derive(Debug, Clone, Default)]
pub struct LimitArgs {
    /// The limits the flags gave (`--oomd` in its `oomd`).
    limits: ck_cgroup::limits::Limits,
    /// `--best-effort`.
    pub best_effort: bool,
}

/// The row whose flag is a pair of switches instead of a value.
const SWITCH: &str = "oom_group";

impl clap::Args for LimitArgs {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        use clap::{Arg, ArgAction};
        for spec in ck_cgroup::limits::LIMITS {
            if spec.key == SWITCH {
                cmd = cmd
                    .arg(
                        Arg::new(spec.key)
                            .long(spec.flag())
                            .help(spec.help)
                            .action(ArgAction::SetTrue)
                            .overrides_with("no_oom_group"),
                    )
                    .arg(
                        Arg::new("no_oom_group")
                            .long("no-oom-group")
                            .help("memory.oom.group 0: the OOM killer picks single processes")
                            .action(ArgAction::SetTrue),
                    );
                continue;
            }
            cmd = cmd.arg(
                Arg::new(spec.key)
                    .long(spec.flag())
                    .value_name(spec.value_name)
                    .help(spec.help)
                    .value_parser(flag(spec.key)),
            );
        }
        cmd.arg(
            Arg::new("oomd")
                .long("oomd")
                .value_name("avoid|omit|none")
                .help("systemd-oomd's preference for the module: avoid (user.oomd_avoid: picked last), omit (user.oomd_omit: never picked) or none (both removed); set on the module's directory and read back (systemd backend: ManagedOOMPreference= on the scope). systemd-oomd honours it only where the cgroup's owner is the monitored unit's owner (see docs/operations.md)")
                .value_parser(oomd_preference),
        )
        .arg(
            Arg::new("best_effort")
                .long("best-effort")
                .help("Apply the limits whose controller is enabled; list the others as skipped (exit 0)")
                .action(ArgAction::SetTrue),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for LimitArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut args = LimitArgs::default();
        args.update_from_arg_matches(m)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for spec in ck_cgroup::limits::LIMITS {
            let v = if spec.key == SWITCH {
                if m.get_flag(SWITCH) {
                    Some(Value::Bool(true))
                } else if m.get_flag("no_oom_group") {
                    Some(Value::Bool(false))
                } else {
                    None
                }
            } else {
                m.get_one::<Value>(spec.key).cloned()
            };
            if let Some(v) = v {
                self.limits.set(spec.key, v);
            }
        }
        if let Some(p) = m.get_one::<ck_cgroup::cgroup::oomd::OomdPreference>("oomd") {
            self.limits.oomd = Some(*p);
        }
        self.best_effort |= m.get_flag("best_effort");
        Ok(())
    }
}

/// clap's parser of the flag of the limit with policy key `key`: that row's parser, its error in
/// one line with the fix.
fn flag(key: &'static str) -> impl Fn(&str) -> Result<Value, String> + Clone + Send + Sync {
    move |s: &str| match ck_cgroup::limits::spec(key) {
        Some(spec) => (spec.parse)(s).map_err(|e| match e.hint() {
            Some(h) => format!("{}: {h}", e.message()),
            None => e.message().to_string(),
        }),
        None => Err(format!("no limit has the key {key}")),
    }
}

/// clap's parser of a systemd-oomd preference (`--oomd`, `init --oomd-daemon`): the library's,
/// its error in one line naming the value and the accepted set.
pub fn oomd_preference(s: &str) -> Result<ck_cgroup::cgroup::oomd::OomdPreference, String> {
    ck_cgroup::cgroup::oomd::OomdPreference::parse(s).map_err(|e| e.message().to_string())
}

pub(super) fn size(s: &str) -> Result<Limit, String> {
    ck_cgroup::limits::parse_size(s).map_err(|e| e.to_string())
}

impl LimitArgs {
    /// The library's limits: each flag given, set by its row's key.
    pub fn limits(&self) -> ck_cgroup::limits::Limits {
        self.limits.clone()
    }
}
