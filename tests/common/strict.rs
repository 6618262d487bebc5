//! The helper's JSON results parsed into the library's own types, strictly: a test reads a
//! result as a daemon in another process would, and a field the type does not know fails it.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `line`, one JSON result of the helper, parsed into the library's type `T`, and nothing lost:
/// the value serializes back to the very same JSON (as strict as `deny_unknown_fields`: a field
/// the type does not know would be dropped), but for what the CLI adds to the library's objects
/// (docs/json.md): `version` (1) on the top level and `id` (the same as `module`) on `list`'s
/// modules, which are checked and taken off first.
pub fn strictly<T: DeserializeOwned + Serialize>(line: &str) -> T {
    let mut raw: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let top = raw
        .as_object_mut()
        .unwrap_or_else(|| panic!("not an object: {line}"));
    assert_eq!(top.remove("version"), Some(1.into()), "{line}");
    for m in top
        .get_mut("modules")
        .and_then(|m| m.as_array_mut())
        .into_iter()
        .flatten()
    {
        let m = m.as_object_mut().expect("a module is an object");
        assert_eq!(m.remove("id").as_ref(), m.get("module"), "{line}");
    }
    let v: T = serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(
        serde_json::to_value(&v).expect("serializes"),
        raw,
        "lost in the library's type: {line}"
    );
    v
}

/// `list --json`: the CLI's envelope around the library's entries.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Listing {
    pub root: PathBuf,
    pub modules: Vec<ck_cgroup::module::ModuleEntry>,
}

/// `status --json`: the CLI's envelope around the library's figures.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Status {
    pub modules: Vec<ck_cgroup::telemetry::ModuleStatus>,
}

/// `ps --json`: the CLI's envelope around the library's processes.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ps {
    pub modules: Vec<ck_cgroup::telemetry::procs::ModuleProcesses>,
}

/// `doctor --json`: the library's report (`ck_cgroup::doctor::Report`, which a daemon never
/// reads back, so it has no `Deserialize`), field for field.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Doctor {
    pub checks: Vec<DoctorCheck>,
    pub ready: bool,
}

/// One check of [`Doctor`] (`ck_cgroup::doctor::Check`).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DoctorCheck {
    pub name: String,
    /// `ok`, `fail` or `warn`.
    pub outcome: String,
    pub detail: String,
    pub fix: Option<String>,
}
