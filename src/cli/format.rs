//! The primitives every renderer shares, and the error lines too: the versioned JSON envelope,
//! aligned tables, plurals and sizes. Nothing here knows a command or a result.

use serde::Serialize;

/// The version of the CLI's JSON (docs/json.md): every top-level object the CLI prints carries it
/// as `version`. Added fields keep it; a field renamed or removed, or a meaning changed, bumps it.
pub const JSON_VERSION: u32 = 1;

/// A top-level JSON object as the CLI prints it: `version` first, then the object's own fields
/// (`inner` must serialize as an object).
#[derive(Serialize)]
pub struct Versioned<T> {
    pub version: u32,
    #[serde(flatten)]
    pub inner: T,
}

/// `value` with its `version`.
pub fn versioned<T>(inner: T) -> Versioned<T> {
    Versioned {
        version: JSON_VERSION,
        inner,
    }
}

/// Left-aligned columns separated by two spaces.
pub fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.to_vec()).collect();
    table_vec(&rows)
}

/// [`table`] of rows of any length (the first row's is the table's).
pub fn table_vec(rows: &[Vec<String>]) -> String {
    let n = rows.first().map_or(0, Vec::len);
    let mut widths = vec![0usize; n];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate().take(n) {
            if i + 1 == n {
                line += c;
            } else {
                line += &format!("{c:<w$}  ", w = widths[i]);
            }
        }
        s += line.trim_end();
        s.push('\n');
    }
    s
}

/// `N one` or `N many`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `1.5G`, `12.0M`, `512K`, `100B`; `-` for unknown.
pub fn size(v: Option<u64>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    const UNITS: [(&str, u64); 4] = [
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (u, n) in UNITS {
        if v >= n {
            return format!("{:.1}{u}", v as f64 / n as f64);
        }
    }
    format!("{v}B")
}
