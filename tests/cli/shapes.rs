//! The JSON shapes of the CLI's results that more than one feature's tests parse back, strictly
//! (`deny_unknown_fields`; `version` 1).

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct List {
    #[allow(dead_code)] // checked while parsing
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub root: String,
    pub modules: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Entry {
    pub name: String,
    pub id: Option<String>,
    pub module: Option<String>,
    pub layout: String,
    pub path: String,
    pub populated: Option<bool>,
    pub frozen: Option<bool>,
    pub procs: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Kill {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub module: String,
    pub layout: Option<String>,
    pub path: Option<String>,
    pub already_gone: bool,
    pub signal: Option<String>,
    pub grace_ms: f64,
    pub signalled: usize,
    pub thawed: Vec<String>,
    pub left_after_grace: Option<usize>,
    pub method: Option<String>,
    pub fell_through: Vec<FellThrough>,
    pub killed: usize,
    pub waited_ms: f64,
    pub empty: bool,
    pub removed: bool,
    pub restored: Vec<String>,
    pub error: Option<String>,
    pub kills: Kills,
    pub memory_left: MemoryLeft,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct MemoryLeft {
    pub shmem: Option<u64>,
    pub file: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Kills {
    pub oom_kill: Option<u64>,
    pub oom_group_kill: Option<u64>,
    pub oomd_ooms: Option<u64>,
    pub oomd_kill: Option<u64>,
    pub ck_stops: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Place {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub module: String,
    pub path: String,
    pub placed: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Remove {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub module: String,
    pub path: Option<String>,
    pub removed: bool,
    pub already_gone: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Init {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub root: String,
    pub created: Vec<String>,
    pub moved: Vec<u32>,
    pub available: Vec<String>,
    pub enabled: Vec<String>,
    pub missing: Vec<String>,
    pub missing_held_by_v1: Vec<String>,
    pub oomd_daemon: OomdMark,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct OomdMark {
    pub value: Option<String>,
    pub source: String,
    pub error: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct FellThrough {
    pub method: String,
    pub reason: String,
}

/// `sandbox --json`'s result, the last line on stderr (stdout is CMD's).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Sandbox {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub sandbox: String,
    pub kept: bool,
    pub removed: bool,
    pub status: i32,
}
