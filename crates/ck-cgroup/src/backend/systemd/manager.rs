//! systemd over D-Bus (zbus 6, async API driven by `zbus::block_on`; no Tokio).
//!
//! Two users: `doctor` ([`unit_facts`]), and the systemd backend ([`Manager`]: transient scopes
//! for modules on hosts where the service is not delegated, and the delegated scope of a
//! `sandbox`). The default (cgroupfs) spawn and kill paths never connect to a bus.
//!
//! Interfaces: `org.freedesktop.systemd1.Manager` (`GetUnitByPID`, `GetUnit`, `Version`,
//! `StartTransientUnit`, `KillUnit`, `StopUnit`, the `JobRemoved` signal) and the unit's
//! properties; see org.freedesktop.systemd1(5) and
//! <https://systemd.io/CGROUP_DELEGATION/>.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use zbus::{OwnedObjectPath, OwnedVariant, Variant};

use crate::backend::{Bus, Unavailable, UnitFacts};
use crate::error::{Error, Result};
use crate::id::ModuleId;
use crate::layout::{scope_unit, slice_unit};
use crate::limits::{Limits, Property};

const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";

/// Why a connection to the bus failed: out of descriptors (`EMFILE`, `ENFILE`) is this process's
/// state, not the bus's absence, and is said as such; anything else is no bus.
fn not_connected(text: String) -> Unavailable {
    if text.contains("(os error 24)") || text.contains("(os error 23)") {
        Unavailable::Failed(format!(
            "no file descriptor left to connect to systemd (EMFILE/ENFILE: the open-file limit, `ulimit -n`, was reached): {text}"
        ))
    } else {
        Unavailable::NoBus(text)
    }
}

/// Ask the manager on `bus` for the unit named `unit`, or for the unit of `pid`. A property that
/// cannot be read is `None` (the version and the unit's name: empty).
pub fn unit_facts(bus: Bus, unit: Option<&str>, pid: u32) -> Result<UnitFacts, Unavailable> {
    let m = Manager::connect(bus).map_err(|e| not_connected(e.to_string()))?;
    zbus::block_on(async move {
        let failed = |e: Error| Unavailable::Failed(e.to_string());
        let path = match unit {
            Some(name) => m
                .unit_path(name)
                .await
                .map_err(failed)?
                .ok_or_else(|| Unavailable::Failed(format!("no unit {name} is loaded")))?,
            None => m
                .unit_path_of_pid(pid)
                .await
                .map_err(failed)?
                .ok_or_else(|| Unavailable::Failed(format!("systemd has no unit for pid {pid}")))?,
        };
        let root =
            OwnedObjectPath::try_from(PATH).map_err(|e| Unavailable::Failed(e.to_string()))?;
        let get = |p: &OwnedObjectPath, iface: &'static str, prop: &'static str| {
            let p = p.clone();
            let m = &m;
            async move { m.get(&p, iface, prop, "the unit").await.ok() }
        };
        let string = |v: Option<OwnedVariant>| v.and_then(|v| String::try_from(v).ok());
        let version = string(get(&root, MANAGER, "Version").await).unwrap_or_default();
        let unit_name =
            string(get(&path, "org.freedesktop.systemd1.Unit", "Id").await).unwrap_or_default();
        let iface = unit_interface(&unit_name);
        Ok(UnitFacts {
            version,
            delegate: get(&path, iface, "Delegate")
                .await
                .and_then(|v| bool::try_from(v).ok()),
            delegate_controllers: get(&path, iface, "DelegateControllers")
                .await
                .and_then(|v| Vec::<String>::try_from(v).ok()),
            oom_policy: string(get(&path, iface, "OOMPolicy").await),
            kill_mode: string(get(&path, iface, "KillMode").await),
            timeout_stop_usec: get(&path, iface, "TimeoutStopUSec")
                .await
                .and_then(|v| u64::try_from(v).ok()),
            control_group: string(get(&path, iface, "ControlGroup").await),
            unit: unit_name,
        })
    })
}

/// `TimeoutStopSec=` of a module's scope (10 s), in microseconds.
pub const MODULE_STOP_TIMEOUT_USEC: u64 = 10_000_000;

/// A scope to start: its name, its slice, the pids it takes, and its unit properties.
#[derive(Debug, Clone)]
pub struct ScopeSpec {
    /// The unit name (`*.scope`).
    pub unit: String,
    /// `Slice=`; `None` for the manager's default.
    pub slice: Option<String>,
    /// `Description=`.
    pub description: String,
    /// `PIDs=`: the processes moved into the scope when it starts.
    pub pids: Vec<u32>,
    /// `Delegate=`.
    pub delegate: bool,
    /// `PartOf=` and `Before=` this unit (the daemon's service): a stop or restart of the service
    /// stops the scope too, after the service has stopped (so the daemon drains first); with
    /// `TimeoutStopSec=10s` for that stop.
    pub part_of: Option<String>,
    /// Resource limits, as the properties each row of [`crate::limits::LIMITS`] names
    /// (`MemoryHigh=`, `TasksMax=`, `CPUQuotaPerSecUSec=`, `AllowedCPUs=`, ...; `memory.oom.group`
    /// as `OOMPolicy=`; see [`ScopeSpec::properties`]).
    pub limits: Limits,
}

impl ScopeSpec {
    /// The scope of module `id`, holding `pid`, in `module-<id>.slice`.
    pub fn module(id: &ModuleId, pid: u32, limits: &Limits) -> ScopeSpec {
        ScopeSpec {
            unit: scope_unit(id),
            slice: Some(slice_unit(id)),
            description: format!("ck-subc module {id}"),
            pids: vec![pid],
            delegate: false,
            part_of: None,
            limits: limits.clone(),
        }
    }

    /// The `a(sv)` properties of `StartTransientUnit`: `Description`, `Slice`, `PIDs`,
    /// `Delegate`, `CollectMode=inactive-or-failed` (a failed or OOM-killed scope is unloaded at
    /// once, so the next start of the same module does not meet `UnitExists`), and the limits.
    /// `max` is `u64::MAX` (systemd's infinity). `oom_group` is `OOMPolicy=kill` or `continue`;
    /// `cpu_max` is `CPUQuotaPerSecUSec=` (quota per second: `CPUQuota=` in percent times
    /// 10000) and `CPUQuotaPeriodUSec=`; `cpus` is `AllowedCPUs=` as a mask; `io_max` is
    /// `IOReadBandwidthMax=` and the others of its keys, on the device's path; `oomd` is
    /// `ManagedOOMPreference=`.
    pub fn properties(&self) -> Vec<(&'static str, Variant<'_>)> {
        let mut p: Vec<(&'static str, Variant<'_>)> = vec![
            ("Description", Variant::from(self.description.as_str())),
            ("PIDs", Variant::from(self.pids.clone())),
            ("CollectMode", Variant::from("inactive-or-failed")),
        ];
        if let Some(slice) = &self.slice {
            p.push(("Slice", Variant::from(slice.as_str())));
        }
        if self.delegate {
            p.push(("Delegate", Variant::from(true)));
        }
        if let Some(u) = &self.part_of {
            p.push(("PartOf", Variant::from(vec![u.as_str()])));
            p.push(("Before", Variant::from(vec![u.as_str()])));
            // When systemd itself stops the module (the service stopped or restarted without
            // the daemon draining it), a process that ignores SIGTERM is killed after 10 s,
            // not after systemd's default of 90 s.
            p.push(("TimeoutStopUSec", Variant::from(MODULE_STOP_TIMEOUT_USEC)));
        }
        // One row of crate::limits::LIMITS after another: its properties, as the row says.
        for (spec, v) in self.limits.values() {
            for (name, prop) in (spec.properties)(&v) {
                p.push((name, variant(prop)));
            }
        }
        if let Some((name, prop)) = self.limits.oomd_property() {
            p.push((name, variant(prop)));
        }
        p
    }
}

/// A limit's property as a D-Bus variant: `t`, `s`, `ay` or `a(st)`.
fn variant(p: Property) -> Variant<'static> {
    match p {
        Property::U64(v) => Variant::from(v),
        Property::Str(s) => Variant::from(s),
        Property::Bytes(b) => Variant::from(b),
        Property::Devices(d) => Variant::from(d),
    }
}

/// A connection to a systemd manager, for the systemd backend: the system bus for the system
/// manager, the session bus (`$DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`) for the
/// caller's user manager.
///
/// Not the managers' private sockets (`/run/systemd/private`), which `systemctl` prefers: systemd
/// stamps its messages there with the sender `org.freedesktop.systemd1`, and zbus 6 rejects a
/// sender that is not a unique name ("Invalid unique name"; seen in the guest lane).
#[derive(Debug, Clone)]
pub struct Manager {
    conn: zbus::Connection,
    bus: Bus,
}

/// Method calls that get no answer within this time fail (a hung manager must not hang the
/// daemon's spawn).
const CALL_TIMEOUT: Duration = Duration::from_secs(25);

impl Manager {
    /// Connect to the system or the user manager.
    pub fn connect(bus: Bus) -> Result<Manager> {
        zbus::block_on(async move {
            let builder = match bus {
                Bus::System => zbus::conn::Builder::system(),
                Bus::User => zbus::conn::Builder::session(),
            };
            match builder.method_timeout(CALL_TIMEOUT).build().await {
                Ok(conn) => Ok(Manager { conn, bus }),
                Err(e) => Err(no_manager(bus, &format!("{}: {e}", via(bus)))),
            }
        })
    }

    /// How the manager was reached: "the system bus" or "the session bus".
    pub fn via(&self) -> &'static str {
        via(self.bus)
    }

    async fn call<B>(&self, method: &str, body: &B) -> zbus::Result<zbus::Message>
    where
        B: serde::Serialize + zbus::wire::DynamicType,
    {
        self.conn
            .call_method(Some(DEST), PATH, Some(MANAGER), method, body)
            .await
    }

    /// The unit's `ControlGroup` (e.g. `/module.slice/module-a.slice/subc-module-a.scope`);
    /// `None` when the unit is not loaded (`NoSuchUnit`) or has no cgroup (it is not active).
    pub fn control_group(&self, unit: &str) -> Result<Option<String>> {
        zbus::block_on(async move {
            let Some(path) = self.unit_path(unit).await? else {
                return Ok(None);
            };
            let v = self
                .get(&path, unit_interface(unit), "ControlGroup", unit)
                .await?;
            Ok(String::try_from(v).ok().filter(|s| !s.is_empty()))
        })
    }

    /// The unit's `PartOf=` list (`org.freedesktop.systemd1.Unit` `PartOf`); empty when the
    /// unit is not loaded.
    pub fn part_of(&self, unit: &str) -> Result<Vec<String>> {
        zbus::block_on(async move {
            let Some(path) = self.unit_path(unit).await? else {
                return Ok(Vec::new());
            };
            let v = self
                .get(&path, "org.freedesktop.systemd1.Unit", "PartOf", unit)
                .await?;
            Ok(Vec::<String>::try_from(v).unwrap_or_default())
        })
    }

    /// `GetUnit`: the unit's object path; `None` when it is not loaded (`NoSuchUnit`).
    pub(super) async fn unit_path(&self, unit: &str) -> Result<Option<OwnedObjectPath>> {
        match self.call("GetUnit", &(unit,)).await {
            Ok(r) => r
                .body()
                .deserialize()
                .map(Some)
                .map_err(|e| self.fail("GetUnit", unit, &e)),
            Err(e) if dbus_error_name(&e).ends_with(".NoSuchUnit") => Ok(None),
            Err(e) => Err(self.fail("GetUnit", unit, &e)),
        }
    }

    /// The property `prop` of `iface` on the object `path` (`what` names it in errors).
    pub(super) async fn get(
        &self,
        path: &OwnedObjectPath,
        iface: &str,
        prop: &str,
        what: &str,
    ) -> Result<OwnedVariant> {
        let get = format!("Get {prop} of");
        let r = self
            .conn
            .call_method(
                Some(DEST),
                path.as_str(),
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(iface, prop),
            )
            .await
            .map_err(|e| self.fail(&get, what, &e))?;
        r.body()
            .deserialize()
            .map_err(|e| self.fail(&get, what, &e))
    }

    /// The unit `pid` belongs to (`GetUnitByPID`, then its `Id`); `None` when systemd has none
    /// for it.
    pub fn unit_of_pid(&self, pid: u32) -> Result<Option<String>> {
        zbus::block_on(async move {
            let Some(path) = self.unit_path_of_pid(pid).await? else {
                return Ok(None);
            };
            let v = self
                .get(
                    &path,
                    "org.freedesktop.systemd1.Unit",
                    "Id",
                    &format!("pid {pid}"),
                )
                .await?;
            Ok(String::try_from(v).ok().filter(|s| !s.is_empty()))
        })
    }

    /// `GetUnitByPID`: the object path of `pid`'s unit; `None` when systemd has none for it.
    async fn unit_path_of_pid(&self, pid: u32) -> Result<Option<OwnedObjectPath>> {
        let what = format!("pid {pid}");
        match self.call("GetUnitByPID", &(pid,)).await {
            Ok(r) => r
                .body()
                .deserialize()
                .map(Some)
                .map_err(|e| self.fail("GetUnitByPID", &what, &e)),
            Err(e) if dbus_error_name(&e).ends_with(".NoUnitForPID") => Ok(None),
            Err(e) => Err(self.fail("GetUnitByPID", &what, &e)),
        }
    }

    /// `StartTransientUnit(unit, "fail", properties, [])`, then wait (at most `timeout`) for the
    /// job's `JobRemoved` signal; its result must be `done`. When this returns `Ok`, the scope's
    /// pids are in its cgroup.
    pub fn start_scope(&self, spec: &ScopeSpec, timeout: Duration) -> Result<()> {
        let props = spec.properties();
        let aux: Vec<(&str, Vec<(&str, Variant<'_>)>)> = Vec::new();
        let body = (spec.unit.as_str(), "fail", props, aux);
        self.run_job("StartTransientUnit", &spec.unit, &body, timeout)
            .and_then(|r| match r {
                Some(result) if result == "done" => Ok(()),
                Some(result) => Err(Error::systemd(format!(
                    "systemd could not start {}: job result \"{result}\"",
                    spec.unit
                ))
                .with_hint(self.journal_hint(&spec.unit))),
                None => Err(Error::systemd(format!(
                    "systemd could not start {}: the unit vanished",
                    spec.unit
                ))),
            })
    }

    /// `StopUnit(unit, "replace")` and wait for its job. `Ok(false)` when the unit is not loaded.
    pub fn stop_unit(&self, unit: &str, timeout: Duration) -> Result<bool> {
        match self.run_job("StopUnit", unit, &(unit, "replace"), timeout)? {
            Some(result) if result == "done" => Ok(true),
            Some(result) => Err(Error::systemd(format!(
                "systemd could not stop {unit}: job result \"{result}\""
            ))
            .with_hint(self.journal_hint(unit))),
            None => Ok(false),
        }
    }

    /// `KillUnit(unit, "all", signal)`: systemd signals every process of the unit's cgroup.
    /// `Ok(false)` when the unit is not loaded.
    pub fn kill_unit(&self, unit: &str, signal: i32) -> Result<bool> {
        zbus::block_on(async move {
            match self.call("KillUnit", &(unit, "all", signal)).await {
                Ok(_) => Ok(true),
                Err(e) if dbus_error_name(&e).ends_with(".NoSuchUnit") => Ok(false),
                Err(e) => Err(self.fail("KillUnit", unit, &e)),
            }
        })
    }

    /// Call `method` (which returns a job path), then wait for that job's `JobRemoved` and return
    /// its result (`done`, `failed`, `canceled`, ...). `Ok(None)`: the unit is not loaded.
    fn run_job<B>(
        &self,
        method: &str,
        unit: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<Option<String>>
    where
        B: serde::Serialize + zbus::wire::DynamicType,
    {
        let deadline = Instant::now() + timeout;
        zbus::block_on(async move {
            // The match is added before the call, so the signal cannot be missed. A job's
            // requester gets its JobRemoved without Subscribe (systemd tracks it).
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .interface(MANAGER)
                .member("JobRemoved")
                .path(PATH)
                .build()
                .map_err(|e| self.fail("match JobRemoved for", unit, &e))?;
            let mut stream = zbus::MessageStream::for_match_rule(rule, &self.conn, None)
                .await
                .map_err(|e| self.fail("match JobRemoved for", unit, &e))?;
            let job: OwnedObjectPath = match self.call(method, body).await {
                Ok(r) => r
                    .body()
                    .deserialize()
                    .map_err(|e| self.fail(method, unit, &e))?,
                Err(e) if dbus_error_name(&e).ends_with(".NoSuchUnit") => return Ok(None),
                Err(e) => return Err(self.fail(method, unit, &e)),
            };
            let wait = async {
                loop {
                    let next = poll_fn(|cx| {
                        futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), cx)
                    })
                    .await;
                    let Some(Ok(msg)) = next else {
                        return None;
                    };
                    if let Ok((_, path, _, result)) =
                        msg.body()
                            .deserialize::<(u32, OwnedObjectPath, String, String)>()
                        && path == job
                    {
                        return Some(result);
                    }
                }
            };
            match with_deadline(wait, deadline).await {
                Some(Some(result)) => Ok(Some(result)),
                Some(None) => Err(Error::systemd(format!(
                    "lost the connection to systemd ({}) while waiting for {method} {unit}",
                    self.via()
                ))),
                None => Err(Error::systemd(format!(
                    "systemd did not finish {method} {unit} within {} s (job {})",
                    timeout.as_secs_f64(),
                    job.as_str()
                ))
                .with_hint("see `systemctl list-jobs` and the journal")),
            }
        })
    }

    fn fail(&self, what: &str, unit: &str, e: &zbus::Error) -> Error {
        let name = dbus_error_name(e);
        let err = Error::systemd(format!("systemd ({}): {what} {unit}: {e}", self.via()));
        if name.ends_with(".UnitExists") {
            err.with_hint(format!(
                "{unit} is already running: stop it first (`ck-cgroup kill --backend systemd` with its id)"
            ))
        } else if name.contains("AccessDenied") || name.contains("InteractiveAuthorizationRequired")
        {
            err.with_kind(crate::error::ErrorKind::PermissionDenied)
                .with_hint(match self.bus {
                    Bus::System => "run as root, or use the user manager: --manager user",
                    Bus::User => "the user manager accepts only its own user",
                })
        } else {
            err
        }
    }

    fn journal_hint(&self, unit: &str) -> String {
        match self.bus {
            Bus::System => format!("see `journalctl -u {unit}`"),
            Bus::User => format!("see `journalctl --user -u {unit}`"),
        }
    }
}

fn via(bus: Bus) -> &'static str {
    match bus {
        Bus::System => "the system bus",
        Bus::User => "the session bus",
    }
}

/// The D-Bus interface that carries a unit's cgroup properties.
pub(super) fn unit_interface(unit: &str) -> &'static str {
    match unit.rsplit('.').next() {
        Some("scope") => "org.freedesktop.systemd1.Scope",
        Some("slice") => "org.freedesktop.systemd1.Slice",
        Some("socket") => "org.freedesktop.systemd1.Socket",
        Some("mount") => "org.freedesktop.systemd1.Mount",
        Some("swap") => "org.freedesktop.systemd1.Swap",
        _ => "org.freedesktop.systemd1.Service",
    }
}

/// The D-Bus error name of a failed call (`org.freedesktop.systemd1.NoSuchUnit`), or "".
fn dbus_error_name(e: &zbus::Error) -> String {
    match e {
        zbus::Error::MethodError(name, _, _) => name.as_str().to_string(),
        zbus::Error::FDO(f) => f.to_string().split(':').next().unwrap_or("").to_string(),
        _ => String::new(),
    }
}

fn no_manager(bus: Bus, why: &str) -> Error {
    let (which, hint) = match bus {
        Bus::System => (
            "the system manager",
            "the systemd backend needs systemd as PID 1; use the default backend (cgroupfs) with a delegated root",
        ),
        Bus::User => (
            "the user manager",
            "set XDG_RUNTIME_DIR to the user's runtime directory (/run/user/UID) and make sure its manager runs (`loginctl enable-linger USER`)",
        ),
    };
    Error::bad_input(format!("cannot reach {which}: {why}"))
        .with_hint(hint)
        .with_kind(crate::error::ErrorKind::SystemdUnavailable)
}

/// Run `fut` until it is ready or `deadline` passes (`None`). A thread sleeps until the deadline
/// and then wakes the task: zbus's `block_on` has no timer.
async fn with_deadline<F: Future>(fut: F, deadline: Instant) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut timer = false;
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        let now = Instant::now();
        if now >= deadline {
            return Poll::Ready(None);
        }
        if !timer {
            timer = true;
            let waker = cx.waker().clone();
            let left = deadline - now;
            std::thread::spawn(move || {
                std::thread::sleep(left);
                waker.wake();
            });
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_descriptors_is_not_read_as_no_bus() {
        let t = "the system bus: Too many open files (os error 24)".to_string();
        assert!(matches!(not_connected(t), Unavailable::Failed(m) if m.contains("EMFILE")));
        let t = "the system bus: No such file or directory (os error 2)".to_string();
        assert!(matches!(not_connected(t), Unavailable::NoBus(_)));
    }
}
