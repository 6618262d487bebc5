//! `top`: a live, sorted view of every module, refreshed every `--interval` (as systemd-cgtop
//! shows a host's cgroups), from the figures `status` reads; its CPU% is the share of one CPU
//! over the last interval, from the rise of `cpu.stat` `usage_usec`.
//!
//! Between refreshes it waits in one `poll(2)` on stdin and a signalfd for what is left of the
//! interval: never a faster loop. On a terminal the screen is redrawn in place with plain ANSI
//! escapes, each line cut to the window; elsewhere (a pipe, a file, over `ssh host ck-cgroup top
//! -n 1`) each refresh is the plain table, one after another with a blank line between. When
//! stdin is a terminal it is put in cbreak mode (no line editing, no echo) to read `q`, and its
//! settings are put back on every way out: `q`, Ctrl-C, SIGTERM, SIGHUP (the signals are taken
//! from the signalfd, no handler runs), an error, a panic.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ck_cgroup::signals::{SignalRelay, Woke, reraise};
use ck_cgroup::telemetry::ModuleStatus;
use ck_cgroup::{Error, Root};
use rustix::process::Signal;
use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};

use crate::cli::args::SortKey;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::Fail;
use crate::cli::mutation::{self, Control};
use crate::cli::status::{self, Col};

/// `top`: refreshes until `q`, a signal, or `iterations`. `q` (and the last of `-n N`) is exit 0;
/// Ctrl-C, SIGTERM and SIGHUP end it by that signal once the terminal is restored, as an
/// interrupted command ends (a shell loop around it stops too). `--json` was refused before
/// (`cli::promises::Json::Refused`).
pub fn cmd_top(
    fs: Cgroupfs,
    sort: SortKey,
    interval: Duration,
    iterations: Option<u64>,
) -> Result<ExitCode, Fail> {
    let root = fs.open()?;
    let relay = SignalRelay::new(&[
        Signal::INT,
        Signal::TERM,
        Signal::HUP,
        Signal::WINCH,
        Signal::CONT,
    ])
    .map_err(|e| Error::failed(format!("failed to set up the signals: {e}")))?;
    let mut keys = Keys::take();
    let end = View::new(&root, sort, interval).run(&relay, &mut keys, iterations);
    // The terminal as it was, then the signal mask, before anything else happens.
    drop(keys);
    drop(relay);
    match end? {
        End::Done => Ok(ExitCode::SUCCESS),
        End::Signal(sig) => {
            reraise(sig.as_raw());
            Ok(ExitCode::from(128 + sig.as_raw() as u8))
        }
    }
}

/// `top`'s columns: what tells a module that eats memory or CPU from the others.
const TOP_COLUMNS: [Col; 9] = [
    Col::Id,
    Col::Procs,
    Col::CpuRate,
    Col::Mem,
    Col::Peak,
    Col::Swap,
    Col::Max,
    Col::OomKill,
    Col::PsiMem,
];

/// How the view ended.
enum End {
    /// `q`, stdin's end is not one, or the last of `--iterations`.
    Done,
    /// Ctrl-C (SIGINT), SIGTERM or SIGHUP.
    Signal(Signal),
}

/// stdin, read for `q`; in cbreak mode while this lives when it is a terminal.
struct Keys {
    stdin: io::Stdin,
    /// The settings to put back (stdin is a terminal whose settings were changed).
    saved: Option<Termios>,
    /// stdin may still be read (not at its end, no error).
    open: bool,
}

impl Keys {
    /// stdin in cbreak mode when it is a terminal: each key as it is typed, no echo; Ctrl-C
    /// still sends SIGINT (which the view takes from its signalfd).
    fn take() -> Keys {
        let stdin = io::stdin();
        let saved = termios::isatty(stdin.as_fd())
            .then(|| termios::tcgetattr(stdin.as_fd()).ok())
            .flatten();
        let keys = Keys {
            stdin,
            saved,
            open: true,
        };
        keys.cbreak();
        keys
    }

    /// (Again, after SIGCONT: a shell may have put its own settings back while we were stopped.)
    fn cbreak(&self) {
        let Some(saved) = &self.saved else {
            return;
        };
        let mut t = saved.clone();
        t.local_modes.remove(LocalModes::ICANON | LocalModes::ECHO);
        t.special_codes[SpecialCodeIndex::VMIN] = 1;
        t.special_codes[SpecialCodeIndex::VTIME] = 0;
        let _ = termios::tcsetattr(self.stdin.as_fd(), OptionalActions::Now, &t);
    }

    /// Whether `q` can be typed (stdin is a terminal): the header says so.
    fn interactive(&self) -> bool {
        self.saved.is_some()
    }

    /// stdin while it may still be read.
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.open.then(|| self.stdin.as_fd())
    }

    /// Read what stdin has: `q` (quit, over any other key), else the last sort key typed (as
    /// systemd-cgtop's: `m` memory, `c` CPU, `p` pids, `P` pressure). At its end (or on an
    /// error) it is not read again, and the view goes on until a signal or `--iterations`.
    fn read(&mut self) -> Key {
        let mut buf = [0u8; 64];
        match rustix::io::read(self.stdin.as_fd(), &mut buf) {
            Ok(0) => {
                self.open = false;
                Key::None
            }
            Ok(n) => key_of(&buf[..n]),
            Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => Key::None,
            Err(_) => {
                self.open = false;
                Key::None
            }
        }
    }
}

/// What the keys typed since the last read ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    None,
    Quit,
    Sort(SortKey),
}

/// `q` wins; else the last of `m`, `c`, `p`, `P`; other bytes are ignored.
fn key_of(bytes: &[u8]) -> Key {
    if bytes.contains(&b'q') {
        return Key::Quit;
    }
    bytes
        .iter()
        .rev()
        .find_map(|b| match b {
            b'm' => Some(Key::Sort(SortKey::Mem)),
            b'c' => Some(Key::Sort(SortKey::Cpu)),
            b'p' => Some(Key::Sort(SortKey::Pids)),
            b'P' => Some(Key::Sort(SortKey::Psi)),
            _ => None,
        })
        .unwrap_or(Key::None)
}

impl Drop for Keys {
    fn drop(&mut self) {
        // Mutation control (`CK_MUTATION=top-no-restore`): the terminal is left in cbreak mode.
        if mutation::active(Control::TopNoRestore) {
            return;
        }
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(self.stdin.as_fd(), OptionalActions::Now, saved);
        }
    }
}

/// The view: what it reads, how it orders it, and the last CPU readings for the rates.
struct View<'a> {
    root: &'a Root,
    sort: SortKey,
    interval: Duration,
    /// stdout is a terminal: redraw in place.
    tty: bool,
    /// Each module's `usage_usec` at the last refresh, and when it was read (by path).
    cpu: HashMap<String, (u64, Instant)>,
}

impl<'a> View<'a> {
    fn new(root: &'a Root, sort: SortKey, interval: Duration) -> View<'a> {
        View {
            root,
            sort,
            interval,
            tty: termios::isatty(io::stdout()),
            cpu: HashMap::new(),
        }
    }

    /// Refresh every interval (measured from the start of each refresh) until `q`, a signal, or
    /// `iterations` refreshes; in between, one wait for what is left of the interval.
    fn run(
        &mut self,
        relay: &SignalRelay,
        keys: &mut Keys,
        iterations: Option<u64>,
    ) -> Result<End, Fail> {
        let mut shown = 0u64;
        loop {
            let start = Instant::now();
            let frame = self.frame(keys.interactive())?;
            // The screen cleared once; after that each refresh overwrites the last (no flicker).
            self.show(&frame, shown == 0, shown == 0)?;
            shown += 1;
            if iterations.is_some_and(|n| shown >= n) {
                return Ok(End::Done);
            }
            let deadline = start + self.interval;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match relay.wait(keys.fd(), left)? {
                    Woke::Readable => match keys.read() {
                        Key::Quit => return Ok(End::Done),
                        // Sorted anew at once: a refresh now, the interval counted from it.
                        Key::Sort(k) => {
                            self.sort = k;
                            break;
                        }
                        Key::None => {}
                    },
                    // A new window size, or back from Ctrl-Z (when a shell may have put its own
                    // terminal settings back): the same refresh drawn again, on a terminal.
                    Woke::Signal(Signal::WINCH) if self.tty => self.show(&frame, false, true)?,
                    Woke::Signal(Signal::CONT) => {
                        keys.cbreak();
                        if self.tty {
                            self.show(&frame, false, true)?;
                        }
                    }
                    Woke::Signal(Signal::WINCH) => {}
                    Woke::Signal(sig) => return Ok(End::Signal(sig)),
                    _ => {}
                }
            }
        }
    }

    /// One refresh: the header and the table, sorted, with the CPU rates since the last one.
    fn frame(&mut self, interactive: bool) -> Result<String, Error> {
        let at = Instant::now();
        // `top` shows no device memory: no GPU census (no `nvidia-smi`) per refresh.
        let no_gpu = ck_cgroup::gpu::GpuCensus::not_read();
        let mut rows = self.root.status_cold(
            &ck_cgroup::Modules::All,
            &no_gpu,
            &ck_cgroup::telemetry::cold::ColdCensus::not_read(),
        )?;
        let mut rates = HashMap::new();
        let mut cpu = HashMap::new();
        for m in &rows {
            let Some(usage) = m.cpu_usage_usec.value else {
                continue;
            };
            if let Some(r) = self
                .cpu
                .get(&m.path)
                .and_then(|&(was, then)| rate(was, usage, at.duration_since(then)))
            {
                rates.insert(m.path.clone(), r);
            }
            cpu.insert(m.path.clone(), (usage, at));
        }
        self.cpu = cpu;
        let rate_of = |m: &ModuleStatus| rates.get(&m.path).copied();
        let key = self.sort;
        status::sort_by(
            &mut rows,
            |m| m,
            |m| match key {
                SortKey::Cpu => rate_of(m),
                _ => status::sort_figure(m, key),
            },
        );
        let n = rows.len();
        // The root last: a narrow window cuts it, not what changes. On a terminal the keys take
        // the date's place (the time stays), so that the rest fits 80 columns.
        let now = utc_now();
        let header = format!(
            "{}  {n} module{}  every {} s  sorted by {}{}  root {}\n",
            if interactive {
                now.split_once(' ').map_or(now.as_str(), |(_, time)| time)
            } else {
                now.as_str()
            },
            if n == 1 { "" } else { "s" },
            self.interval.as_secs_f64(),
            key.name(),
            if interactive {
                "  (q quits; m c p P sort)"
            } else {
                ""
            },
            self.root.path().display(),
        );
        Ok(header + &status::table_of(&rows, status::Columns::Fold(&TOP_COLUMNS, ""), rate_of))
    }

    /// Write a refresh: on a terminal over the last one (`clear`: the whole screen first), cut
    /// to the window; elsewhere as it is, after a blank line from the one before.
    fn show(&self, frame: &str, first: bool, clear: bool) -> io::Result<()> {
        let mut out = String::new();
        if self.tty {
            let (cols, rows) = termios::tcgetwinsize(io::stdout())
                .ok()
                .filter(|w| w.ws_col > 0 && w.ws_row > 0)
                .map_or((usize::MAX, usize::MAX), |w| {
                    (usize::from(w.ws_col), usize::from(w.ws_row))
                });
            out += if clear { "\x1b[H\x1b[2J" } else { "\x1b[H" };
            for line in fit(frame, cols, rows) {
                out += &line;
                out += "\x1b[K\n";
            }
            out += "\x1b[J";
        } else {
            if !first {
                out.push('\n');
            }
            out += frame;
        }
        let mut o = io::stdout().lock();
        o.write_all(out.as_bytes())?;
        o.flush()
    }
}

/// The lines of `frame` for a window of `cols` by `rows`: each cut short of the last column (a
/// line that fills it would leave the cursor in the margin), and at most `rows - 1` lines (the
/// last one written must not scroll the header away), the last of them saying what did not fit.
fn fit(frame: &str, cols: usize, rows: usize) -> Vec<String> {
    let cut = |l: &str| {
        l.chars()
            .take(cols.saturating_sub(1).max(1))
            .collect::<String>()
    };
    let lines: Vec<&str> = frame.lines().collect();
    let room = rows.saturating_sub(1).max(2);
    if lines.len() <= room {
        return lines.into_iter().map(cut).collect();
    }
    let mut out: Vec<String> = lines[..room - 1].iter().map(|l| cut(l)).collect();
    out.push(cut(&format!(
        "... {} more lines: a taller window, or `ck-cgroup status --sort KEY`",
        lines.len() - (room - 1)
    )));
    out
}

/// Percent of one CPU: the rise of `usage_usec` over `elapsed`. `None` when it fell (the module
/// was made again under the same name) or no time passed.
fn rate(was: u64, now: u64, elapsed: Duration) -> Option<f64> {
    let used = now.checked_sub(was)?;
    let wall = elapsed.as_micros();
    (wall > 0).then(|| used as f64 * 100.0 / wall as f64)
}

/// The wall clock in UTC, to the second: `2026-01-01 03:04:05 UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

fn utc(secs: u64) -> String {
    // The library's `2026-01-01T03:04:05.000Z` (watch's timestamps), to the second.
    let t = ck_cgroup::telemetry::watch::rfc3339(Duration::from_secs(secs));
    let (date, time) = t.split_once('T').unwrap_or((&t, ""));
    let time = time.split_once('.').map_or(time, |(hms, _)| hms);
    format!("{date} {time} UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_systemd_cgtops_and_q_quits_over_them() {
        assert_eq!(key_of(b"m"), Key::Sort(SortKey::Mem));
        assert_eq!(key_of(b"c"), Key::Sort(SortKey::Cpu));
        assert_eq!(key_of(b"p"), Key::Sort(SortKey::Pids));
        assert_eq!(key_of(b"P"), Key::Sort(SortKey::Psi));
        assert_eq!(key_of(b"mcx"), Key::Sort(SortKey::Cpu), "the last sort key");
        assert_eq!(key_of(b"cq"), Key::Quit);
        assert_eq!(key_of(b"x\n"), Key::None);
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_016_600), "2026-11-30 05:30:00 UTC");
        assert_eq!(utc(1_767_225_599), "2025-12-31 23:59:59 UTC");
    }

    #[test]
    fn rates() {
        let s = Duration::from_secs(2);
        assert_eq!(rate(1_000_000, 2_000_000, s), Some(50.0));
        assert_eq!(rate(0, 4_000_000, s), Some(200.0));
        assert_eq!(rate(5, 5, s), Some(0.0));
        // A module made again under the same name: its counter starts over.
        assert_eq!(rate(2_000_000, 10, s), None);
        assert_eq!(rate(0, 10, Duration::ZERO), None);
    }

    #[test]
    fn frames_fit_the_window() {
        let frame = "header line\nNAME  MEM\na     1\nb     2\nc     3\n";
        assert_eq!(fit(frame, usize::MAX, usize::MAX).len(), 5);
        assert_eq!(fit(frame, 6, 100)[0], "heade");
        let short = fit(frame, 200, 4);
        assert_eq!(short.len(), 3);
        assert_eq!(short[..2], ["header line", "NAME  MEM"]);
        assert!(short[2].starts_with("... 3 more lines"), "{short:?}");
    }
}
