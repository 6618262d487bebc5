//! The fuzz targets' checks (`crates/ck-fuzz-checks`) over seeded random inputs, under a plain `cargo
//! test`: the kernel-file fixtures, policies, durations, sizes, ids and unit names, mutated
//! (bytes flipped, cut, repeated, spliced) and fresh random bytes. Deterministic (a fixed seed),
//! bounded (a few thousand inputs per target, well under a second). The coverage-guided runs are
//! `scripts/fuzz` (cargo-fuzz); a panic either finds gets its input in `seeds` below.

use ck_fuzz_checks as checks;

/// xorshift64*: enough randomness for inputs, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes the parsers care about, to make mutations land on syntax.
const INTERESTING: &[&[u8]] = &[
    b" ",
    b"\n",
    b"\t",
    b"=",
    b"\"",
    b"'",
    b"[",
    b"]",
    b".",
    b"-",
    b"_",
    b"\\",
    b"\\x",
    b"\\x2d",
    b"_5f",
    b"m-",
    b"(",
    b")",
    b":",
    b"0::",
    b" - ",
    b"\\040",
    b"max",
    b"K",
    b"G",
    b"T",
    b"ms",
    b"s",
    b"m",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-1",
    b"0",
    b"1e9",
    b".5",
    b"\xff",
    b"\xc3\xa9",
    b"\0",
    b"subc-module-",
    b".scope",
    b"[module.",
    b"[defaults]",
    b"memory_max = ",
    b"pids_max = ",
    b"cpu_weight = ",
    b"oom_group = true",
    b"Tgid:\t",
    b"populated 1",
    b"avg10=",
    b"VmRSS:\t",
    b" kB",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(8) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => v.insert(at, rng.next() as u8),
            2 if !v.is_empty() => {
                let end = (at + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 => {
                let tok = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(at..at, tok.iter().copied());
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                v.splice(at..at, other[from..].iter().copied());
            }
            5 if !v.is_empty() => {
                // Repeat a slice: long numbers, deep nesting, many lines.
                let end = (at + 1 + rng.below(8)).min(v.len());
                let piece = v[at.min(end - 1)..end].to_vec();
                for _ in 0..rng.below(64) {
                    v.splice(at..at, piece.iter().copied());
                }
            }
            _ => {
                let n = rng.below(32);
                v = (0..n).map(|_| rng.next() as u8).collect();
            }
        }
    }
    v
}

fn run(name: &str, seeds: Vec<Vec<u8>>, check: fn(&[u8]), rounds: usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
    for s in &seeds {
        check(s);
    }
    for _ in 0..rounds {
        let input = mutate(&mut rng, &seeds);
        let r = std::panic::catch_unwind(|| check(&input));
        assert!(
            r.is_ok(),
            "{name} panicked on {:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

fn fixtures() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.path().extension().is_none_or(|x| x != "c"))
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    out.sort();
    out.push(b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 26 0\n".to_vec());
    out.push(b"77 (a) b (c)) Z 12 77 77 0 -1 4194572 0 0\n".to_vec());
    out
}

fn words(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn kernel_file_parsers_take_any_text() {
    run("kernel_files", fixtures(), checks::kernel_files, 20_000);
}

#[test]
fn policy_parser_takes_any_text() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/policy.toml.example");
    let mut seeds = vec![std::fs::read(example).unwrap()];
    seeds.extend(words(&[
        "[defaults]\nmemory_max = \"4G\"\npids_max = 512\nmemory_report = \"3G\"\noom_group = true\n",
        "[module.aft]\nmemory_max = \"8G\"\npids_max = \"max\"\ncpu_weight = 100\n",
        "[module.\"a b\"]\n",
        "x = [[[[[[[[1]]]]]]]]\n",
    ]));
    run("policy", seeds, checks::policy, 5_000);
}

#[test]
fn duration_parser_takes_any_text() {
    let seeds = words(&[
        "500ms",
        "10s",
        "2m",
        "1.5",
        "0",
        "86400",
        "86400.0001",
        "1e9",
        ".",
        "",
    ]);
    run("durations", seeds, checks::durations, 20_000);
}

#[test]
fn size_and_count_parsers_take_any_text() {
    let seeds = words(&[
        "512K",
        "100M",
        "2G",
        "1T",
        "max",
        "0",
        "16777216T",
        "18446744073709551615",
        "10000",
        "50000/100000",
        "max/1000",
        "0-3,6",
        "8191",
        "8:0:rbps=10M,wiops=100",
        "259:1:wbps=max,riops=5",
    ]);
    run("sizes", seeds, checks::sizes, 20_000);
}

#[test]
fn id_and_name_parsers_take_any_text() {
    let seeds = words(&[
        "aft",
        "Broca_2",
        "m-mcp_5f3ax_5f7",
        "m-aft_5fswap_5f9",
        "m-a.b-c_5f1",
        "..",
        "a/b",
        "-a",
    ]);
    run("ids", seeds, checks::ids, 20_000);
}

#[test]
fn unit_name_parsers_take_any_text() {
    let seeds = words(&[
        "subc-module-aft.scope",
        "subc-module-a\\x2db.scope",
        "module-aft.slice",
        "subc-module-\\x2e.scope",
        "aft",
        // Found by this check: another spelling of a2db's escape was taken for its scope.
        "subc-module-a\\x32db.scope",
    ]);
    run("unit_names", seeds, checks::unit_names, 20_000);
}
