//! How a tree is stopped: `kill`'s, `prune --kill`'s and `run`'s flags (`--signal`, `--grace`,
//! `--method`, `--timeout`) and their mapping to the library's `StopOptions`.

use std::time::Duration;

use clap::ValueEnum;

use super::parse_duration;

/// How a tree is stopped (`kill`, `prune --kill`).
#[derive(Debug, Clone, clap::Args)]
pub struct StopArgs {
    /// The graceful signal sent to every process of the tree when --grace is above zero.
    #[arg(
        long,
        value_enum,
        default_value = "term",
        ignore_case = true,
        value_name = "SIG"
    )]
    pub signal: SignalArg,
    /// How long the whole tree may take to exit on SIG before SIGKILL (0: SIGKILL at once).
    /// Default 0s; for run 10s.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub grace: Option<Duration>,
    /// How to SIGKILL what is left: auto falls through cgroup-kill, freeze, signal.
    #[arg(long, value_enum, default_value = "auto", value_name = "METHOD")]
    pub method: MethodArg,
    /// How long to wait for the tree to be empty after SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

/// Graceful signals.
#[derive(Debug, Clone, Copy, ValueEnum)]
#[allow(missing_docs)]
pub enum SignalArg {
    #[value(alias = "SIGTERM")]
    Term,
    #[value(alias = "SIGINT")]
    Int,
    #[value(alias = "SIGHUP")]
    Hup,
    #[value(alias = "SIGQUIT")]
    Quit,
    #[value(alias = "SIGUSR1")]
    Usr1,
    #[value(alias = "SIGUSR2")]
    Usr2,
    #[value(alias = "SIGKILL")]
    Kill,
}

impl SignalArg {
    /// The signal.
    pub fn signal(self) -> rustix::process::Signal {
        use rustix::process::Signal;
        match self {
            SignalArg::Term => Signal::TERM,
            SignalArg::Int => Signal::INT,
            SignalArg::Hup => Signal::HUP,
            SignalArg::Quit => Signal::QUIT,
            SignalArg::Usr1 => Signal::USR1,
            SignalArg::Usr2 => Signal::USR2,
            SignalArg::Kill => Signal::KILL,
        }
    }
}

/// Kill methods.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MethodArg {
    /// The first the kernel supports: cgroup-kill, then freeze, then signal.
    Auto,
    /// Write 1 to cgroup.kill (kernel 5.14).
    CgroupKill,
    /// Freeze (cgroup.freeze, 5.2), SIGKILL every member, thaw, repeat.
    Freeze,
    /// SIGKILL every member, repeat until empty.
    Signal,
}

/// `run`'s grace when `--grace` is not given: long enough for a module to drain, well inside the
/// daemon's default 30 s drain timeout and the unit's `TimeoutStopSec=35`.
pub const RUN_GRACE: Duration = Duration::from_secs(10);

impl StopArgs {
    /// The library's options (no grace unless `--grace` is given).
    pub fn options(&self) -> ck_cgroup::stop::StopOptions {
        self.options_or_grace(Duration::ZERO)
    }

    /// The library's options, with `grace` unless `--grace` is given.
    pub fn options_or_grace(&self, grace: Duration) -> ck_cgroup::stop::StopOptions {
        use ck_cgroup::stop::Method;
        ck_cgroup::stop::StopOptions {
            signal: self.signal.signal(),
            grace: self.grace.unwrap_or(grace),
            method: match self.method {
                MethodArg::Auto => Method::Auto,
                MethodArg::CgroupKill => Method::CgroupKill,
                MethodArg::Freeze => Method::Freeze,
                MethodArg::Signal => Method::Signal,
            },
            timeout: self.timeout,
        }
    }
}
