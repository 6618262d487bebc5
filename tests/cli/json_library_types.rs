//! The helper's JSON parses into the library's own types without loss.

use serde::Deserialize;

use crate::common::*;

/// The helper's JSON parses into the library's own types, as a daemon in another process would
/// parse it, and nothing is lost: the parsed value serializes back to the very same JSON (as
/// strict as `deny_unknown_fields`: a field the type does not know would be dropped), but for
/// what the CLI adds to the library's objects (docs/json.md): `version` (1) on the top level and
/// `id` (the same as `module`) on `list`'s modules.
#[test]
fn json_output_parses_into_the_library_types_without_loss() {
    fn strictly<T: serde::de::DeserializeOwned + serde::Serialize>(line: &str) -> T {
        let mut raw: serde_json::Value = serde_json::from_str(line).unwrap();
        let top = raw.as_object_mut().unwrap();
        assert_eq!(top.remove("version"), Some(1.into()), "{line}");
        for m in top
            .get_mut("modules")
            .and_then(|m| m.as_array_mut())
            .into_iter()
            .flatten()
        {
            let m = m.as_object_mut().unwrap();
            assert_eq!(m.remove("id").as_ref(), m.get("module"), "{line}");
        }
        let v: T = serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(serde_json::to_value(&v).unwrap(), raw, "{line}");
        v
    }
    let w = World::new();
    let placed = ok(w.run(&["--json", "create", "lib"]));
    assert!(placed.contains("\"lib\""), "{placed}");
    let mut c = w.exec_sleep("lib");
    #[derive(Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    struct Listing {
        root: std::path::PathBuf,
        modules: Vec<ck_cgroup::module::ModuleEntry>,
    }
    let list: Listing = strictly(&ok(w.run(&["--json", "list"])));
    assert_eq!(list.root, w.root());
    let m = &list.modules[0];
    assert_eq!(m.name.as_str(), "lib");
    assert_eq!(m.layout, ck_cgroup::Layout::Ck);
    assert_eq!(m.procs, Some(1));
    let out = ok(w.run(&["--json", "kill", "--grace", "1s", "--timeout", "3s", "lib"]));
    let r: ck_cgroup::module::StopReport = strictly(out.trim_end());
    c.wait().unwrap();
    assert!(r.ok() && !r.already_gone, "{r:?}");
    assert_eq!(r.module, "lib");
    assert_eq!(r.layout, Some(ck_cgroup::Layout::Ck));
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(r.tree.signalled, 1);
    let gone: ck_cgroup::module::StopReport = strictly(&ok(w.run(&["--json", "kill", "lib"])));
    assert!(gone.already_gone && gone.ok());
}
