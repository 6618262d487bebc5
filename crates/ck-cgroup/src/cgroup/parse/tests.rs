//! The parsers' tests, on the kernel's files as they are (`tests/fixtures/`) and as proc(5)
//! writes them.

use super::*;

#[test]
fn a_task_with_sigkill_pending_or_exiting_is_dying() {
    let st = |state: &str, sig: &str, shd: &str| {
        format!("Name:\tx\nState:\t{state}\nSigPnd:\t{sig}\nShdPnd:\t{shd}\n")
    };
    assert!(!proc_status_dying(&st(
        "S (sleeping)",
        "0000000000000000",
        "0000000000000000"
    )));
    assert!(proc_status_dying(&st(
        "S (sleeping)",
        "0000000000000000",
        "0000000000000100"
    )));
    assert!(proc_status_dying(&st(
        "R (running)",
        "0000000000000100",
        "0000000000000000"
    )));
    assert!(proc_status_dying(&st(
        "Z (zombie)",
        "0000000000000000",
        "0000000000000000"
    )));
    // SIGTERM (bit 14) pending is no kill.
    assert!(!proc_status_dying(&st(
        "S (sleeping)",
        "0000000000004000",
        "0000000000000000"
    )));
}

#[test]
fn one_key_reads_as_the_map_does() {
    let t = "usage_usec 12\nuser_usec 5\nbad line\nx notanumber\nlast 7";
    for k in ["usage_usec", "user_usec", "x", "last", "absent", "bad"] {
        assert_eq!(flat_key(t, k), flat_keyed(t).get(k).copied(), "{k}");
    }
}
use std::path::Path;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn events_fixture() {
    assert_eq!(
        events(&fixture("cgroup.events.populated")),
        Events {
            populated: Some(true),
            frozen: Some(false)
        }
    );
    assert_eq!(
        events(&fixture("cgroup.events.empty")),
        Events {
            populated: Some(false),
            frozen: Some(false)
        }
    );
    // Before 5.2 there is no frozen key; unknown keys are ignored.
    assert_eq!(
        events("populated 1\nsomething_new 7\n"),
        Events {
            populated: Some(true),
            frozen: None
        }
    );
    assert_eq!(events(""), Events::default());
}

#[test]
fn pids_and_controllers() {
    assert_eq!(pids("12\n345\n\n"), vec![12, 345]);
    assert_eq!(pids(""), Vec::<u32>::new());
    assert_eq!(
        controllers(&fixture("cgroup.controllers")),
        vec![
            "cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"
        ]
    );
    assert!(controllers("\n").is_empty());
}

#[test]
fn proc_cgroup_hybrid_and_unified() {
    assert_eq!(
        proc_cgroup_v2(&fixture("proc-cgroup.hybrid")).as_deref(),
        Some("/")
    );
    assert_eq!(
        proc_cgroup_v2(&fixture("proc-cgroup.unified")).as_deref(),
        Some("/system.slice/ck-subc.service/daemon")
    );
    assert_eq!(proc_cgroup_v2(&fixture("proc-cgroup.v1-only")), None);
}

#[test]
fn mountinfo_hybrid() {
    let m = cgroup2_mounts(&fixture("mountinfo.hybrid"));
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].mount_point, Path::new("/sys/fs/cgroup/unified"));
    assert_eq!(m[0].root, "/");
}

#[test]
fn mountinfo_unified_and_escapes() {
    let m = cgroup2_mounts(&fixture("mountinfo.unified"));
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].mount_point, Path::new("/sys/fs/cgroup"));
    assert_eq!(m[1].mount_point, Path::new("/mnt/cg root"));
    assert_eq!(m[1].root, "/system.slice");
    assert!(cgroup2_mounts("garbage\n\n").is_empty());
}

#[test]
fn nsdelegate_from_the_super_options() {
    assert_eq!(
        cgroup2_nsdelegate(&fixture("mountinfo.unified")),
        Some(true)
    );
    assert_eq!(
        cgroup2_nsdelegate(&fixture("mountinfo.hybrid")),
        Some(false)
    );
    assert_eq!(cgroup2_nsdelegate("garbage\n"), None);
    // A mount option of that name before the separator is not the super option.
    let line = "1 2 0:1 / /x rw,nsdelegate - cgroup2 cgroup2 rw\n";
    assert_eq!(cgroup2_nsdelegate(line), Some(false));
}

#[test]
fn the_controllers_v1_holds_come_from_its_mounts_super_options() {
    let mi = "35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n\
              36 25 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
              37 25 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
              38 25 0:33 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n\
              39 25 0:34 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n\
              40 25 0:35 / /sys/fs/cgroup/memory2 rw - cgroup cgroup rw,memory\n";
    assert_eq!(
        cgroup1_controllers(mi),
        ["memory", "cpu", "cpuacct", "io"].map(String::from)
    );
    assert!(
        cgroup1_controllers("35 25 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").is_empty()
    );
}

#[test]
fn memory_events_and_stat_keep_unknown_keys() {
    let e = flat_keyed(&fixture("memory.events"));
    assert_eq!(e.get("oom_kill"), Some(&3));
    assert_eq!(e.get("oom_group_kill"), Some(&1));
    assert_eq!(e.get("future_counter"), Some(&9));
    let s = flat_keyed(&fixture("memory.stat"));
    assert_eq!(s.get("anon"), Some(&1_048_576));
    let c = flat_keyed(&fixture("cpu.stat"));
    assert_eq!(c.get("usage_usec"), Some(&123_456));
}

#[test]
fn pressure_files() {
    let p = pressure(&fixture("memory.pressure"));
    assert_eq!(p.some_avg10, Some(1.5));
    assert_eq!(p.full_avg10, Some(0.25));
    assert_eq!((p.some_total, p.full_total), (Some(123456), Some(4567)));
    // cpu.pressure before 5.13 has no full line.
    let p = pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    assert_eq!((p.some_avg10, p.full_avg10), (Some(0.0), None));
    assert_eq!((p.some_total, p.full_total), (Some(0), None));
    let p = pressure(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1234567\n",
    );
    assert_eq!(
        (p.some_total, p.full_total),
        (Some(u64::MAX), Some(1234567))
    );
    assert_eq!(pressure(""), Pressure::default());
}

#[test]
fn limits_and_numbers() {
    assert_eq!(limit("max\n"), Some(Limit::Max));
    assert_eq!(limit("1073741824\n"), Some(Limit::Value(1 << 30)));
    assert_eq!(limit("garbage"), None);
    assert_eq!(number("42\n"), Some(42));
    assert_eq!(number(""), None);
}

#[test]
fn proc_stat_and_tgid() {
    let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 26 0\n";
    let s = proc_stat(kthreadd).unwrap();
    assert_eq!((s.state, s.ppid), ('S', 0));
    assert!(s.kernel_thread() && !s.exited());
    // A command name with spaces and parentheses; a zombie.
    let z = proc_stat("77 (a) b (c)) Z 12 77 77 0 -1 4194572 0 0\n").unwrap();
    let mut zombie = String::from("9 (sh) Z 1");
    // Fields 5 to 51, then 52: exit_code (exit 7: 7 << 8).
    zombie.push_str(&" 0".repeat(47));
    assert_eq!(
        proc_stat_exit_code(&(zombie.clone() + " 1792\n")),
        Some(1792)
    );
    assert_eq!(proc_stat_exit_code(&zombie), None);
    assert_eq!(proc_status_tracer("Name:\tx\nTracerPid:\t0\n"), None);
    assert_eq!(proc_status_tracer("TracerPid:\t4242\n"), Some(4242));
    assert_eq!((z.state, z.ppid), ('Z', 12));
    assert!(z.exited() && !z.kernel_thread());
    for bad in [
        "",
        "1 (x",
        "1 (x) S",
        "1 (x) S 0 0 0 0 0",
        "1 (x) S p 0 0 0 0 0 0",
    ] {
        assert_eq!(proc_stat(bad), None, "{bad}");
    }

    assert_eq!(proc_status_tgid(&fixture("proc-status")), Some(4242));
    assert_eq!(
        proc_status_tgid("Name:\tx\nTgid:\t17\nPid:\t18\n"),
        Some(17)
    );
    assert_eq!(proc_status_tgid("Name:\tx\n"), None);
}

#[test]
fn the_innermost_pid_is_read_only_below_this_namespace() {
    assert_eq!(proc_status_nspid_inner("Name:\tx\nNSpid:\t4242\n"), None);
    assert_eq!(proc_status_nspid_inner("NSpid:\t4242\t1\n"), Some(1));
    assert_eq!(proc_status_nspid_inner("NSpid:\t4243\t7\t2\n"), Some(2));
    assert_eq!(proc_status_nspid_inner("Name:\tx\n"), None);
}

#[test]
fn proc_status() {
    let m = proc_status_memory(&fixture("proc-status"));
    assert_eq!(m.rss, Some(5_432 * 1024));
    assert_eq!(m.swap, Some(128 * 1024));
    // A kernel thread: no Vm lines at all.
    assert_eq!(
        proc_status_memory("Name:\tkthreadd\nState:\tS (sleeping)\n"),
        ProcMemory::default()
    );
}
