//! Which module holds the GPU memory: device memory per process and per module, joined to the
//! module by membership (the pids of its cgroups, never by ancestry).
//!
//! Three readers, each where the host has what it reads:
//! - NVIDIA: the driver's own per-process accounting through `nvidia-smi` ([`nvidia_smi`]), run
//!   once per [`GpuCensus::take`] where the driver is loaded (`/proc/driver/nvidia`);
//! - AMD, Intel and the other DRM drivers: each process's DRM files' `fdinfo` ([`drm_fdinfo`]),
//!   where the host has a DRM render node or an accel device (`/sys/class/drm/renderD*`,
//!   `/sys/class/accel`): a display-only adapter (a server's BMC console, `card*` alone) has
//!   no device memory to speak of, and does not make every `status` read every process's files;
//! - the `dmem` controller's `dmem.current` of the module's cgroup ([`dmem`]), where that
//!   controller is enabled for the modules; for its devices it replaces the `fdinfo` sum.
//!
//! A figure is known only where every reader that applies could read it: no GPU, no driver, a
//! tool that failed, another user's process whose files cannot be read are `None` with the
//! reason, never 0. Nothing here runs on a spawn or a kill path: the layers keep it out
//! (`tests/layers.rs`), and a test traces the helper's `exec`, `run`, `place` and `kill`.

pub mod dmem;
pub mod drm_fdinfo;
pub mod nvidia_smi;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

/// The reason of every figure where the host has no GPU that a reader knows.
pub const NO_GPU: &str = "no GPU here: no DRM render node or accel device (/sys/class/drm, /sys/class/accel) \
                          and no NVIDIA driver (/proc/driver/nvidia)";

/// The source of a figure summed from DRM `fdinfo`.
pub const FDINFO_SOURCE: &str = "DRM fdinfo drm-resident-<vram*|local*> (/proc/<pid>/fdinfo)";

/// The device memory a module or a process holds.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct GpuMemory {
    /// Bytes of device memory, every device together; `None` where it could not be read (see
    /// [`reason`](Self::reason)).
    pub value: Option<u64>,
    /// The readers it came from, `; `-separated (empty where none applies).
    pub source: String,
    /// Why [`value`](Self::value) is `None` (no GPU here, the tool failed, a process that
    /// could not be read); `None` when it is known.
    pub reason: Option<String>,
    /// Each device it holds memory on, by its PCI address (else its driver's name for it). Where
    /// [`value`](Self::value) is `None` these are the devices that could be read.
    pub devices: Vec<GpuDevice>,
}

impl GpuMemory {
    /// Unknown, for `reason`.
    pub fn unknown(reason: impl Into<String>) -> GpuMemory {
        GpuMemory {
            value: None,
            source: String::new(),
            reason: Some(reason.into()),
            devices: Vec::new(),
        }
    }

    /// Whether it is unknown because the host has no GPU (nothing to show).
    pub fn no_gpu(&self) -> bool {
        self.value.is_none() && self.reason.as_deref() == Some(NO_GPU)
    }
}

impl Default for GpuMemory {
    /// A report that does not carry it (an older helper's): unknown.
    fn default() -> GpuMemory {
        GpuMemory::unknown("not in this report")
    }
}

/// The memory held on one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct GpuDevice {
    /// The device: its PCI address as the kernel writes it (`0000:3b:00.0`), else the driver's
    /// name for it.
    pub device: String,
    /// Its driver (`nvidia`, `amdgpu`, `i915`, `xe`, ...; `dmem` where `dmem.current` does not
    /// say).
    pub driver: String,
    /// Bytes held there.
    pub bytes: u64,
    /// Where the figure came from.
    pub source: String,
}

/// Where `nvidia-smi` is taken from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvidiaSmi {
    /// Where the NVIDIA driver is loaded (`/proc/driver/nvidia`), `nvidia-smi` on `PATH`.
    Auto,
    /// This program, whether or not the driver's directory is there.
    Program(PathBuf),
    /// Not run: NVIDIA's figures are not read.
    Off,
}

/// How [`GpuCensus::take`] looks for GPUs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GpuProbe {
    /// Where `nvidia-smi` is taken from.
    pub nvidia_smi: NvidiaSmi,
    /// How long it may take.
    pub timeout: Duration,
}

/// The CLI's variable that chooses `nvidia-smi` (`ck-cgroup status`, `ps`): a path runs that
/// program; empty turns NVIDIA's figures off; unset looks for it where the driver is loaded. The
/// library reads no variable: the caller passes a [`GpuProbe`]; this name is in the message that
/// says how to point at the tool.
pub const NVIDIA_SMI_ENV: &str = "CK_CGROUP_NVIDIA_SMI";

impl GpuProbe {
    /// A probe that takes `nvidia-smi` from `nvidia_smi`, with the tool's default timeout.
    pub fn new(nvidia_smi: NvidiaSmi) -> GpuProbe {
        GpuProbe {
            nvidia_smi,
            timeout: nvidia_smi::TIMEOUT,
        }
    }
}

/// [`NvidiaSmi::Auto`]: `nvidia-smi` on `PATH` where the NVIDIA driver is loaded.
impl Default for GpuProbe {
    fn default() -> GpuProbe {
        GpuProbe::new(NvidiaSmi::Auto)
    }
}

/// A reader of a process's DRM clients ([`drm_fdinfo::clients_of`], or a recorded one).
pub type ClientsOf = fn(u32) -> std::io::Result<Vec<drm_fdinfo::DrmClient>>;

/// What NVIDIA's tool said, once per census.
#[derive(Debug, Clone)]
enum Nvidia {
    /// No NVIDIA driver here (or turned off).
    Absent,
    /// Each pid's memory per GPU.
    Read(BTreeMap<u32, Vec<nvidia_smi::ComputeApp>>),
    /// Why it could not be read.
    Failed(String),
}

/// The GPUs of the host and what the readers that need no process said, taken once for a
/// `status` or `ps`; each module's and process's figure is then read from it.
#[derive(Debug, Clone)]
pub struct GpuCensus {
    nvidia: Nvidia,
    /// The host has a DRM render node or an accel device: processes' `fdinfo` are read.
    drm: bool,
    /// Where `drm` is false, a `fdinfo` reader for tests (the join over real processes).
    fdinfo: Option<ClientsOf>,
    /// The reason of every figure where no reader applies.
    none_reason: &'static str,
}

/// The reason of every figure of [`GpuCensus::not_read`].
pub const NOT_READ: &str = "device memory is not read by this command";

/// Whether a class directory of sysfs has an entry whose name starts with one of `prefixes`.
fn has_class_entry(dir: &str, prefixes: &[&str]) -> bool {
    std::fs::read_dir(dir).is_ok_and(|d| {
        d.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            prefixes.iter().any(|p| n.starts_with(p))
        })
    })
}

/// Whether this process is in a PID namespace below the host's (`NSpid` has more than one pid):
/// `nvidia-smi` gives the host's pids, which are not this namespace's.
fn in_child_pid_namespace() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .is_some_and(|v| v.split_whitespace().count() > 1)
    })
}

impl GpuCensus {
    /// Look for GPUs as `probe` says, and run `nvidia-smi` once where NVIDIA's driver is found.
    pub fn take(probe: &GpuProbe) -> GpuCensus {
        let program = match &probe.nvidia_smi {
            NvidiaSmi::Off => None,
            NvidiaSmi::Program(p) => Some(Ok(p.clone())),
            NvidiaSmi::Auto if Path::new("/proc/driver/nvidia").exists() => {
                let path = std::env::var_os("PATH");
                let found = crate::spawn::find_program("nvidia-smi".as_ref(), path.as_deref());
                Some(found.map_err(|_| {
                    format!(
                        "the NVIDIA driver is loaded (/proc/driver/nvidia) but nvidia-smi is not on PATH: install the driver's utilities, or set {NVIDIA_SMI_ENV} to its path"
                    )
                }))
            }
            NvidiaSmi::Auto => None,
        };
        let nvidia = match program {
            None => Nvidia::Absent,
            Some(Err(why)) => Nvidia::Failed(why),
            Some(Ok(_)) if in_child_pid_namespace() => Nvidia::Failed(
                "nvidia-smi reports the host's pids and this helper runs in a PID namespace below it: run it in the host's".into(),
            ),
            Some(Ok(p)) => match nvidia_smi::query(&p, probe.timeout).and_then(|t| nvidia_smi::parse(&t)) {
                Ok(apps) => Nvidia::Read(nvidia_smi::by_pid(apps)),
                Err(why) => Nvidia::Failed(why),
            },
        };
        GpuCensus {
            nvidia,
            drm: has_class_entry("/sys/class/drm", &["renderD"])
                || has_class_entry("/sys/class/accel", &["accel"]),
            fdinfo: None,
            none_reason: NO_GPU,
        }
    }

    /// No reader, nothing looked at: every figure unknown with [`NOT_READ`] (for a view that
    /// shows no device memory, such as `top`).
    pub fn not_read() -> GpuCensus {
        GpuCensus {
            nvidia: Nvidia::Absent,
            drm: false,
            fdinfo: None,
            none_reason: NOT_READ,
        }
    }

    /// A census from recorded figures: `nvidia-smi`'s output (`None`: no NVIDIA driver), and a
    /// reader of each pid's DRM clients (`None`: no DRM device). For tests of the join over
    /// real processes on a host without a GPU.
    pub fn recorded(nvidia_smi_output: Option<&str>, fdinfo: Option<ClientsOf>) -> GpuCensus {
        let nvidia = match nvidia_smi_output.map(nvidia_smi::parse) {
            None => Nvidia::Absent,
            Some(Ok(apps)) => Nvidia::Read(nvidia_smi::by_pid(apps)),
            Some(Err(why)) => Nvidia::Failed(why),
        };
        GpuCensus {
            nvidia,
            drm: fdinfo.is_some(),
            fdinfo,
            none_reason: NO_GPU,
        }
    }

    /// Whether a reader applies here (else every figure is unknown, with [`NO_GPU`] or
    /// [`NOT_READ`]).
    pub fn has_reader(&self) -> bool {
        !matches!(self.nvidia, Nvidia::Absent) || self.drm
    }

    /// The device memory of one process.
    pub fn of_process(&self, pid: u32) -> GpuMemory {
        self.of_pids(Some(&[pid]), None)
    }

    /// The device memory of a module: the processes `pids` of its cgroups (`None`: they could
    /// not be listed), and its `dmem.current` text where the controller is enabled for it.
    pub fn of_module(&self, pids: Option<&[u32]>, dmem_current: Option<&str>) -> GpuMemory {
        self.of_pids(pids, dmem_current)
    }

    fn of_pids(&self, pids: Option<&[u32]>, dmem_current: Option<&str>) -> GpuMemory {
        if !self.has_reader() {
            return GpuMemory::unknown(self.none_reason);
        }
        let Some(pids) = pids else {
            return GpuMemory::unknown("its processes could not be listed");
        };
        let mut acc = Sum::default();
        // dmem first: the devices it counts are not summed again from fdinfo.
        let dmem = dmem_current.map(dmem::parse).unwrap_or_default();
        for (device, bytes) in &dmem {
            acc.add(device, "dmem", *bytes, dmem::SOURCE);
        }
        if self.drm {
            let read = self.fdinfo.unwrap_or(drm_fdinfo::clients_of);
            let mut seen = BTreeSet::new();
            for &pid in pids {
                let clients = match read(pid) {
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        acc.unread(format!(
                            "the DRM files of pid {pid} could not be read (/proc/{pid}/fd: {e}): run as root or as the module's user"
                        ));
                        continue;
                    }
                };
                for c in clients {
                    let device = c.device();
                    if dmem.contains_key(&device) {
                        continue;
                    }
                    // One client shared by several fds or processes is counted once.
                    if let Some(id) = c.client_id
                        && !seen.insert((device.clone(), c.driver.clone(), id))
                    {
                        continue;
                    }
                    acc.add(&device, &c.driver, c.bytes(), FDINFO_SOURCE);
                }
            }
        }
        match &self.nvidia {
            Nvidia::Absent => {}
            Nvidia::Failed(why) => acc.unread(why.clone()),
            Nvidia::Read(apps) => {
                acc.sources.insert(nvidia_smi::SOURCE.to_string());
                for pid in pids {
                    for a in apps.get(pid).into_iter().flatten() {
                        match a.bytes {
                            Some(b) => acc.add(&a.device, "nvidia", b, nvidia_smi::SOURCE),
                            None => acc.unread(format!(
                                "nvidia-smi gives no used_memory for pid {pid} on {} ([N/A]: MIG, or not permitted)",
                                a.device
                            )),
                        }
                    }
                }
            }
        }
        if self.drm && dmem.is_empty() {
            acc.sources.insert(FDINFO_SOURCE.to_string());
        }
        acc.done()
    }
}

/// The devices summed so far, the sources used and the reasons a figure is not known.
#[derive(Default)]
struct Sum {
    devices: BTreeMap<(String, String), (u64, String)>,
    sources: BTreeSet<String>,
    reasons: Vec<String>,
}

impl Sum {
    fn add(&mut self, device: &str, driver: &str, bytes: u64, source: &str) {
        self.sources.insert(source.to_string());
        let e = self
            .devices
            .entry((device.to_string(), driver.to_string()))
            .or_insert((0, source.to_string()));
        e.0 = e.0.saturating_add(bytes);
    }

    fn unread(&mut self, why: String) {
        if !self.reasons.contains(&why) {
            self.reasons.push(why);
        }
    }

    fn done(self) -> GpuMemory {
        let devices: Vec<GpuDevice> = self
            .devices
            .into_iter()
            .filter(|(_, (bytes, _))| *bytes > 0)
            .map(|((device, driver), (bytes, source))| GpuDevice {
                device,
                driver,
                bytes,
                source,
            })
            .collect();
        let known = self.reasons.is_empty();
        GpuMemory {
            value: known.then(|| devices.iter().map(|d| d.bytes).sum()),
            source: self.sources.into_iter().collect::<Vec<_>>().join("; "),
            reason: (!known).then(|| self.reasons.join("; ")),
            devices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients(pid: u32) -> std::io::Result<Vec<drm_fdinfo::DrmClient>> {
        let amd = drm_fdinfo::parse(
            "drm-driver: amdgpu\ndrm-pdev: 0000:03:00.0\ndrm-client-id: 11\ndrm-resident-vram: 2 MiB\n",
        );
        match pid {
            // The same client (a dup'ed fd, or a forked child) twice, and again in pid 2.
            1 | 2 => Ok(amd.clone().into_iter().chain(amd).collect()),
            3 => Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
            _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        }
    }

    #[test]
    fn no_reader_is_unknown_with_the_reason_never_zero() {
        let c = GpuCensus::recorded(None, None);
        let m = c.of_module(Some(&[1]), None);
        assert_eq!(m.value, None);
        assert!(m.no_gpu(), "{m:?}");
    }

    #[test]
    fn a_drm_client_is_counted_once_and_an_unreadable_process_makes_it_unknown() {
        let c = GpuCensus::recorded(None, Some(clients));
        let m = c.of_module(Some(&[1, 2, 99]), None);
        assert_eq!(m.value, Some(2 << 20), "{m:?}");
        assert_eq!(m.devices.len(), 1);
        assert_eq!(m.devices[0].driver, "amdgpu");
        let m = c.of_module(Some(&[1, 3]), None);
        assert_eq!(m.value, None);
        assert!(m.reason.as_deref().unwrap().contains("pid 3"), "{m:?}");
        assert_eq!(m.devices.len(), 1, "what could be read is kept");
        // No process: known to hold none.
        assert_eq!(c.of_module(Some(&[]), None).value, Some(0));
        assert_eq!(c.of_module(None, None).value, None);
    }

    #[test]
    fn dmem_replaces_fdinfo_for_its_devices() {
        let c = GpuCensus::recorded(None, Some(clients));
        let m = c.of_module(Some(&[1]), Some("drm/0000:03:00.0/vram0 4096\n"));
        assert_eq!(m.value, Some(4096));
        assert_eq!(m.source, dmem::SOURCE);
    }

    #[test]
    fn nvidia_per_pid_and_per_device_and_na_is_unknown() {
        let out =
            "10, 00000000:3B:00.0, 100\n10, 00000000:86:00.0, 1\n11, 00000000:3B:00.0, [N/A]\n";
        let c = GpuCensus::recorded(Some(out), None);
        let m = c.of_module(Some(&[10, 12]), None);
        assert_eq!(m.value, Some(101 << 20));
        assert_eq!(m.devices.len(), 2);
        assert_eq!(m.devices[0].device, "0000:3b:00.0");
        assert_eq!(
            c.of_process(12).value,
            Some(0),
            "a process the driver does not list holds none"
        );
        assert_eq!(c.of_process(11).value, None);
        let bad = GpuCensus::recorded(Some("garbage\n"), None);
        assert!(bad.of_process(10).reason.unwrap().contains("garbage"));
    }
}
