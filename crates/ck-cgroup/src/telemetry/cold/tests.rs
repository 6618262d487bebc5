use super::*;

/// `lru_gen` as Debian 12's kernel (6.1) wrote it in lane 2's guest, the multi-gen LRU just
/// switched on and three memshape modules running in a `ck-cgroup sandbox`.
const GUEST: &str = include_str!("lru_gen-6.1.txt");
const MODULES: &str = "/system.slice/ck-sandbox-195-0-167a5a42.scope/root/subc-modules";

fn generation(seq: u64, age_ms: u64, anon_pages: u64, file_pages: u64) -> Generation {
    Generation {
        seq,
        age_ms,
        anon_pages,
        file_pages,
    }
}

#[test]
fn parse_reads_each_memcg_node_and_generation_of_a_real_sample() {
    let v = parse(GUEST);
    let root = &v[0];
    assert_eq!((root.memcg_id, root.path.as_str(), root.node), (1, "/", 0));
    assert_eq!(
        root.gens,
        [
            generation(0, 23212, 0, 0),
            generation(1, 23212, 0, 1701),
            generation(2, 23212, 3729, 0),
            generation(3, 23212, 16, 2281),
        ]
    );
    let churn = v
        .iter()
        .find(|l| l.path == format!("{MODULES}/shape-churn"))
        .expect("shape-churn is listed");
    assert_eq!(churn.memcg_id, 22);
    assert_eq!(churn.gens.last(), Some(&generation(3, 3244, 4303, 0)));
    // An offline cgroup is listed with id 0; every lruvec has its four generations.
    assert!(v.iter().any(|l| l.memcg_id == 0));
    assert!(v.iter().all(|l| l.gens.len() == 4), "{v:?}");
}

#[test]
fn parse_takes_a_path_with_spaces_and_skips_the_full_files_statistics() {
    let text = "memcg    30 /a b/c\n node     0\n          5       1000         10x         20 \n                     0          0r          0e          0p          0r          0e          0p\n          6          0          1           2 \n";
    let v = parse(text);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].path, "/a b/c");
    assert_eq!(
        v[0].gens,
        [generation(5, 1000, 10, 20), generation(6, 0, 1, 2)]
    );
    // Nothing that parses: nothing.
    assert!(parse("").is_empty());
    assert!(
        parse("  1 2 3 4\n").is_empty(),
        "a generation before any node"
    );
}

/// The pages of a generation whose successor is at least the window older than the youngest
/// are cold; the others (touched, or not known untouched for so long) are not.
#[test]
fn cold_pages_counts_only_generations_whose_successor_spans_the_window() {
    let w = 20_000;
    // Aged every half window: 0, 10, 20, 30+ s.
    let gens = [
        generation(4, 45_000, 1000, 10),
        generation(5, 21_000, 200, 20),
        generation(6, 11_000, 30, 0),
        generation(7, 1_000, 4, 0),
    ];
    // Generation 4's successor is 20 s older than the youngest: its pages are cold; 5's is 10 s.
    assert_eq!(cold_pages(&gens, w), Ok((1000, 10, 20_000)));
    // A shorter window takes generation 5 too.
    assert_eq!(cold_pages(&gens, 10_000), Ok((1200, 30, 10_000)));
}

#[test]
fn cold_pages_is_unknown_when_not_aged_within_the_window_or_not_spanning_it() {
    let w = 20_000;
    let stale = [generation(0, 90_000, 500, 0), generation(1, 60_000, 5, 0)];
    let e = cold_pages(&stale, w).expect_err("not aged for 60 s");
    assert!(
        e.contains("not aged within the window") && e.contains("--age-cold"),
        "{e}"
    );
    let short = [
        generation(0, 9_000, 500, 0),
        generation(1, 6_000, 5, 0),
        generation(2, 0, 5, 0),
    ];
    let e = cold_pages(&short, w).expect_err("spans 6 s");
    assert!(e.contains("span 6 s"), "{e}");
    // Nothing at all on the node: known, none.
    assert_eq!(cold_pages(&[generation(0, 99_000, 0, 0)], w), Ok((0, 0, 0)));
}

/// A working module's pages are in its young generations: none of them is cold (the control
/// cold-every-page reports them all).
#[test]
fn a_working_modules_young_pages_are_not_cold() {
    let gens = [
        generation(10, 40_000, 0, 0),
        generation(11, 20_500, 3, 0),
        generation(12, 10_200, 900, 0),
        generation(13, 200, 4000, 0),
    ];
    assert_eq!(cold_pages(&gens, 20_000), Ok((0, 0, 20_300)));
    let c = ColdCensus::recorded(
        20_000,
        Ok(vec![Lruvec {
            memcg_id: 9,
            path: "/svc/subc-modules/w".into(),
            node: 0,
            gens: gens.to_vec(),
        }]),
    );
    let m = c.of_module(Some("/svc/subc-modules/w"));
    assert_eq!((m.value, m.file, m.reason), (Some(0), Some(0), None));
    assert_eq!(m.aged_ms_ago, Some(200));
}

#[test]
fn of_module_sums_its_sub_cgroups_and_nodes_and_not_a_sibling_with_its_prefix() {
    let old = |anon| {
        vec![
            generation(0, 50_000, anon, 1),
            generation(1, 30_000, 0, 0),
            generation(2, 10_000, 0, 0),
            generation(3, 0, 7, 0),
        ]
    };
    let lv = |id, path: &str, node, anon| Lruvec {
        memcg_id: id,
        path: path.into(),
        node,
        gens: old(anon),
    };
    let c = ColdCensus::recorded(
        20_000,
        Ok(vec![
            lv(5, "/s/m/a", 0, 100),
            lv(5, "/s/m/a", 1, 20),
            lv(6, "/s/m/a/held", 0, 3),
            lv(7, "/s/m/ab", 0, 5000),
        ]),
    );
    let m = c.of_module(Some("/s/m/a"));
    let page = rustix::param::page_size() as u64;
    assert_eq!(m.value, Some(123 * page));
    assert_eq!(m.file, Some(3 * page));
    assert_eq!((m.window_ms, m.untouched_ms), (20_000, Some(30_000)));
    // Not listed (no memory controller for it), no path, and lru_gen unreadable: unknown, why.
    let m = c.of_module(Some("/s/m/z"));
    assert_eq!(m.value, None);
    assert!(
        m.reason
            .as_deref()
            .is_some_and(|r| r.contains("memory controller"))
    );
    assert!(c.of_module(None).reason.is_some());
    let none = ColdCensus::recorded(20_000, Err("no multi-gen LRU".into()));
    let m = none.of_module(Some("/s/m/a"));
    assert_eq!(
        (m.value, m.reason.as_deref()),
        (None, Some("no multi-gen LRU"))
    );
}

#[test]
fn lru_gen_enabled_reads_its_bit() {
    assert!(lru_gen_on("0x0007\n"));
    assert!(lru_gen_on("0x0001"));
    assert!(!lru_gen_on("0x0000\n"));
    assert!(!lru_gen_on("0x0006"));
    assert!(!lru_gen_on(""));
}

/// `lru_gen` at the end of lane 2's cold-memory check (`status --age-cold --cold-window 15s`
/// every few seconds): memshape's modules asleep, their generations 7.5 s apart.
const AGED: &str = include_str!("lru_gen-6.1-aged.txt");

#[test]
fn a_sleeping_modules_memory_in_a_real_aged_sample_is_cold_over_the_window_it_was_aged_for() {
    let top = "/system.slice/ck-sandbox-192-0-28d37e08.scope/root/subc-modules";
    let c = ColdCensus::recorded(15_000, Ok(parse(AGED)));
    let page = rustix::param::page_size() as u64;
    let churn = c.of_module(Some(&format!("{top}/shape-churn")));
    assert_eq!(churn.value, Some(82495 * page), "{churn:?}");
    assert_eq!(
        (churn.untouched_ms, churn.aged_ms_ago),
        (Some(15_656), Some(5_496))
    );
    let workload = c.of_module(Some(&format!("{top}/shape-workload")));
    assert_eq!(workload.value, Some(50 * page));
    // Over 20 s the generations, aged every 7.5 s, do not tell: unknown, not 0.
    let c = ColdCensus::recorded(20_000, Ok(parse(AGED)));
    let churn = c.of_module(Some(&format!("{top}/shape-churn")));
    assert_eq!(churn.value, None);
    assert!(
        churn
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("span 15 s")),
        "{churn:?}"
    );
}
