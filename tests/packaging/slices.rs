//! `module.slice` and its drop-in: accounting on, no limits by default.

use crate::make_install::install;
use crate::{directives, read};

#[test]
fn module_slices_account_and_set_no_limits() {
    let dest = install(&[]);
    for manager in ["system", "user"] {
        let dir = dest.path().join(format!("usr/local/lib/systemd/{manager}"));
        for file in ["module.slice", "module-.slice.d/ck-cgroup.conf"] {
            let d = directives(&read(dir.join(file)));
            let slice: Vec<_> = d.iter().filter(|(s, _, _)| s == "Slice").collect();
            assert!(!slice.is_empty(), "{manager} {file}: no [Slice] settings");
            for (_, k, v) in slice {
                assert!(
                    k.ends_with("Accounting") && v == "yes",
                    "{manager} {file}: {k}={v} (accounting only, no limits by default)"
                );
            }
        }
    }
}
