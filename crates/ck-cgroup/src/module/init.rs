//! `init` (the daemon's leaf, the modules' directory, their controllers) and `create`.

use super::*;

impl Root {
    /// Make `daemon/` and `subc-modules/`, move every process of the root into `daemon/`, and
    /// enable every available controller in the root's and `subc-modules/`'s
    /// `cgroup.subtree_control`, and mark `daemon/` so that systemd-oomd never picks it
    /// (`user.oomd_omit`, [`Root::mark_daemon_leaf`]). Idempotent.
    pub fn init(&self) -> Result<InitReport> {
        self.init_with(OomdPreference::Omit)
    }

    /// [`Root::init`] with the daemon leaf's systemd-oomd preference `oomd_daemon` (`init
    /// --oomd-daemon`, the policy's `oomd_daemon`).
    pub fn init_with(&self, oomd_daemon: OomdPreference) -> Result<InitReport> {
        let mut created = Vec::new();
        for d in [DAEMON_LEAF, MODULES_DIR] {
            if self.dir.mkdir(d)? {
                created.push(d.to_string());
            }
        }
        let oomd_daemon = self.mark_daemon_leaf(oomd_daemon);
        let moved = self.evacuate_root()?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        let enabled = self.enable_controllers(&available)?;
        let missing = WANTED_CONTROLLERS
            .iter()
            .filter(|c| !available.iter().any(|a| a == *c))
            .map(|c| c.to_string())
            .collect();
        Ok(InitReport {
            root: self.path().to_path_buf(),
            created,
            moved,
            available,
            enabled,
            missing,
            oomd_daemon,
        })
    }

    /// Mark `daemon/` with `pref` for systemd-oomd and read it back: the one place the daemon's
    /// leaf is marked, whichever path makes it (`init`, `init -- DAEMON`, a sandbox, the
    /// library's [`Root::init`]). systemd-oomd takes every leaf under a monitored unit for a
    /// candidate, the daemon's own included; `omit` keeps it from ever being picked. Never
    /// fails: a filesystem that refuses the attribute is reported in [`OomdMark::error`].
    pub fn mark_daemon_leaf(&self, pref: OomdPreference) -> OomdMark {
        // Mutation: the leaf is not marked (what it has is read back as it is).
        if cfg!(ck_mutation = "no-oomd-omit") {
            return oomd::read_back(&self.dir, DAEMON_LEAF, None);
        }
        oomd::mark(&self.dir, DAEMON_LEAF, pref)
    }

    /// Move the calling process into `daemon/` (`"0"` written to `daemon/cgroup.procs`), for a
    /// daemon started by `init -- CMD` from outside the root.
    pub fn enter_daemon_leaf(&self) -> Result<()> {
        let file = format!("{DAEMON_LEAF}/cgroup.procs");
        self.dir.write(&file, "0")
    }

    /// Move every process in the root's own `cgroup.procs` into `daemon/` (no internal processes).
    pub(super) fn evacuate_root(&self) -> Result<Vec<u32>> {
        let mut moved = Vec::new();
        // Processes may fork while we move them; each round moves what is there now.
        for _ in 0..64 {
            let pids = parse::pids(&self.dir.read("cgroup.procs")?);
            if pids.is_empty() {
                return Ok(moved);
            }
            for pid in pids {
                match self.dir.write_raw("daemon/cgroup.procs", &pid.to_string()) {
                    Ok(()) => moved.push(pid),
                    Err(Errno::SRCH) => {}
                    Err(e) => {
                        return Err(Error::io(
                            format_args!("write \"{pid}\" to"),
                            self.dir.display_path("daemon/cgroup.procs"),
                            e,
                        ));
                    }
                }
            }
        }
        Err(Error::failed(format!(
            "processes keep appearing in {}/cgroup.procs faster than they can be moved into daemon/",
            self.path().display()
        )))
    }

    /// Enable `controllers` in the root's and `subc-modules/`'s `cgroup.subtree_control`;
    /// return what `subc-modules/` has enabled afterwards.
    pub(super) fn enable_controllers(&self, controllers: &[String]) -> Result<Vec<String>> {
        if !controllers.is_empty() {
            let line = controllers
                .iter()
                .map(|c| format!("+{c}"))
                .collect::<Vec<_>>()
                .join(" ");
            for rel in [
                "cgroup.subtree_control",
                "subc-modules/cgroup.subtree_control",
            ] {
                self.dir.write(rel, &line).map_err(|e| {
                    e.with_hint(
                        "a cgroup with processes in it cannot enable controllers for its children: run `ck-cgroup init` to move them into daemon/",
                    )
                })?;
            }
        }
        Ok(parse::controllers(
            &self.dir.read("subc-modules/cgroup.subtree_control")?,
        ))
    }

    /// Make the module's cgroup `subc-modules/<id>` (idempotent), without limits: a module made
    /// now gets `memory.oom.group` 1 where the memory controller is enabled for the modules, an
    /// existing one is left as it is ([`Root::create_module`], the one way a module is made).
    /// Makes `subc-modules/` and enables controllers first when the root has not been
    /// initialised (as with `DelegateSubgroup=daemon`, where the daemon already sits in
    /// `daemon/`).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let made = root.create(&ck_cgroup::ModuleId::new("worker-1")?)?;
    /// println!("{} at {} (new: {})", made.module, made.path.display(), made.created);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(&self, id: &ModuleId) -> Result<CreateReport> {
        self.create_module(id, &crate::limits::Limits::default(), false)
            .map(|(made, _)| made)
    }

    /// The directory part of [`Root::create_module`]: `mkdir` of `subc-modules/<id>`
    /// (`created` says whether it was made now), `subc-modules/` first when it is missing.
    pub(crate) fn make_module_dir(&self, id: &ModuleId) -> Result<CreateReport> {
        let m = ModuleRef::ck(id);
        let rel = m.rel();
        let created = match self.dir.mkdir(&rel) {
            Ok(c) => c,
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                self.ensure_modules_dir()?;
                self.dir.mkdir(&rel)?
            }
            Err(e) => return Err(e),
        };
        Ok(CreateReport {
            module: id.clone(),
            path: self.dir.display_path(&rel),
            created,
        })
    }

    pub(super) fn ensure_modules_dir(&self) -> Result<()> {
        let made = self.dir.mkdir(MODULES_DIR)?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        if let Err(e) = self.enable_controllers(&available) {
            if made {
                // Leave nothing half-made.
                let _ = self.dir.rmdir_raw(MODULES_DIR);
            }
            return Err(e);
        }
        Ok(())
    }
}
