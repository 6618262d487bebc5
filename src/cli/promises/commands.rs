//! Each command's [`Promise`]: one [`Promises`] literal, and what its flags give ([`Given`]).
//! The order is the command list's (`args::commands`).

use super::{
    Cmd, Given, GivenModule, Json, Missing, Modules, Policy, Promise, Promises, RootUse, Stdout,
};
use crate::cli::args::*;

impl Promise for InitOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        cmd: Cmd::Optional,
        backend: false,
        root: RootUse::LaysOut,
        exit_notes: &[
            "With CMD: 126 or 127 when CMD cannot run (nothing is made); after the exec the \
             status is CMD's.",
        ],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for CreateOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Ids,
        missing: Missing::Made,
        policy: Policy::Default,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for SetOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Ids,
        missing: Missing::NoModule,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for ExecOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Cmd,
        json: Json::Stderr,
        modules: Modules::Ids,
        missing: Missing::Made,
        policy: Policy::Default,
        cmd: Cmd::Required,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[
            "126, 127: the module was placed, but CMD could not be executed, or was not \
             found (looked up before the module is made: nothing is made). After a \
             successful exec the exit status is CMD's.",
        ],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for PlaceOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Ids,
        missing: Missing::Made,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for KillOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::AlreadyGone,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for PruneOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::Ignored,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: self.keep.iter().map(|m| m as &dyn GivenModule).collect(),
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for RunOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Cmd,
        json: Json::Stderr,
        modules: Modules::Ids,
        missing: Missing::Made,
        policy: Policy::Default,
        cmd: Cmd::Required,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[
            "CMD's exit status, or the helper dies of CMD's signal; 1 when the rest of the \
             tree could not be stopped.",
        ],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for FreezeOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::NoModule,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for ThawOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::NoModule,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for RemoveOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::AlreadyGone,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![&self.id],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for ListOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result { unless: None },
        json: Json::Stdout,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for DoctorOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result { unless: None },
        json: Json::Stdout,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Checks,
        exit_notes: &["0 when the host is ready, 1 when it is not."],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for ApplyOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Report,
        json: Json::Stdout,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::Default,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for WatchOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result { unless: None },
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::Awaited,
        policy: Policy::Default,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: self.ids.iter().map(|m| m as &dyn GivenModule).collect(),
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for StatusOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result {
            unless: Some("--output"),
        },
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::NoModule,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: self.ids.iter().map(|m| m as &dyn GivenModule).collect(),
            backend: Some(&self.backend),
            elsewhere: self.output.is_some(),
        }
    }
}

impl Promise for PsOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result { unless: None },
        json: Json::Stdout,
        modules: Modules::Names,
        missing: Missing::NoModule,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: true,
        root: RootUse::Service,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: self.ids.iter().map(|m| m as &dyn GivenModule).collect(),
            backend: Some(&self.backend),
            elsewhere: false,
        }
    }
}

impl Promise for TopOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result { unless: None },
        json: Json::Refused {
            hint: "`ck-cgroup --json status` gives every figure once, `ck-cgroup watch` the \
                    events as they come",
        },
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::Service,
        exit_notes: &[
            "0 after q or the last of --iterations; after Ctrl-C, SIGTERM or SIGHUP it \
             restores the terminal and ends by that signal (130, 143, 129 in a shell).",
        ],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for SandboxOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Cmd,
        json: Json::Stderr,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        // --prune runs none; clap requires CMD otherwise.
        cmd: Cmd::Optional,
        backend: false,
        root: RootUse::None,
        exit_notes: &[
            "CMD's exit status (128+N when CMD died of signal N). With --prune: 0 when every \
             leftover was removed, 1 when one could not be (the others still are), 2 with a \
             CMD, --keep or --backend systemd.",
        ],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: None,
            elsewhere: false,
        }
    }
}

impl Promise for GenerateOpts {
    const PROMISES: Promises = Promises {
        stdout: Stdout::Result {
            unless: Some("man"),
        },
        json: Json::Ignored,
        modules: Modules::None,
        missing: Missing::NotGiven,
        policy: Policy::WhenGiven,
        cmd: Cmd::No,
        backend: false,
        root: RootUse::None,
        exit_notes: &[],
    };
    fn given(&self) -> Given<'_> {
        Given {
            modules: vec![],
            backend: None,
            elsewhere: matches!(self.kind, GenerateKind::Man),
        }
    }
}
