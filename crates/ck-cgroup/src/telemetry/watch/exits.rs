//! How the modules' processes ended, for `watch`: the kernel's process events connector
//! (`NETLINK_CONNECTOR`, `CN_IDX_PROC`; `linux/cn_proc.h`), which sends an event at every fork,
//! exec and exit on the host, the exit's status included. A watcher that is not the processes'
//! parent has no other way to read it on a kernel before 6.15 (a pidfd's exit information), and
//! `watch` needs it to check a stop mark: `user.ck_cgroup_stops` can be raised by any process
//! that owns the module's directory, and a process that exits with a code or crashes after it
//! rose was not ended by a stop of ck-cgroup's (`cause::attribution`).
//!
//! Listening takes `CAP_NET_ADMIN` in the initial user namespace (root): elsewhere
//! [`Exits::open`] fails, and `watch` takes a stop mark as it reads, as before. The socket is not
//! in `watch`'s `poll(2)` (every fork on the host would wake it): it is read whenever `watch`
//! wakes for its modules, before their events are handled, and once a second, into a receive
//! buffer of [`RCVBUF`]. A process is attributed to a module by the members `watch` listed at its
//! last read of that module ([`Exits::remember`]), else by its `/proc/<pid>/cgroup` when its fork
//! or exec event is read, else when its exit is (a zombie not reaped yet); one whose end comes
//! none of these ways is not told.

use std::collections::HashMap;
use std::os::unix::io::OwnedFd;

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType, netlink};

/// `CN_IDX_PROC` and `CN_VAL_PROC`: the connector's id of process events.
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
/// `PROC_CN_MCAST_LISTEN`.
const LISTEN: u32 = 1;
/// `NLMSG_DONE`: the type of the one message a connector datagram holds.
const NLMSG_DONE: u16 = 3;
/// `PROC_EVENT_FORK`, `PROC_EVENT_EXEC`, `PROC_EVENT_EXIT`.
const FORK: u32 = 0x0000_0001;
const EXEC: u32 = 0x0000_0002;
const EXIT: u32 = 0x8000_0000;
/// `struct nlmsghdr` and `struct cn_msg`: the proc event starts after both.
const NLMSG_HDRLEN: usize = 16;
const CN_MSG_LEN: usize = 20;
/// At most this many processes are remembered (all are forgotten at once past it).
const KEPT: usize = 65_536;
/// The socket's receive buffer (`SO_RCVBUFFORCE`): room for the events of a second of a busy
/// host's forks.
const RCVBUF: usize = 8 << 20;

/// A process of the watched root that ended: its pid, the cgroup it was in (relative to the
/// cgroup2 mount, as `/proc/<pid>/cgroup` gives it), and its wait status (`exit_code`: a code
/// shifted by 8, or a signal number, `0x80` set for a core dump).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ended {
    pub pid: u32,
    pub cgroup: String,
    pub status: u32,
}

impl Ended {
    /// Why no stop of ck-cgroup's could have ended it this way, if so (`pid 7 exited with code
    /// 1`): the death report's rule (`death_cause::end_no_stop_causes`) over its wait status.
    pub fn against_a_stop(&self) -> Option<String> {
        let sig = (self.status & 0x7f) as i32;
        let (code, signal) = if sig == 0 {
            (Some(((self.status >> 8) & 0xff) as i32), None)
        } else {
            (None, Some(sig))
        };
        crate::cause::death_cause::end_no_stop_causes(code, signal)
            .map(|how| format!("pid {} {how}", self.pid))
    }
}

/// The connector's socket and the cgroup each process was last seen in.
pub(super) struct Exits {
    sock: OwnedFd,
    /// The prefix of the cgroups followed (the root's path below the mount, `/` first).
    under: String,
    cgroup_of: HashMap<u32, String>,
}

impl Exits {
    /// Listen to the process events, for the cgroups below `under` (a path below the cgroup2
    /// mount, `/` first). `Err`: the socket's errno (`EPERM` without `CAP_NET_ADMIN`).
    pub fn open(under: &str) -> Result<Exits, Errno> {
        let sock = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            Some(netlink::CONNECTOR),
        )?;
        // Best effort: the default buffer still holds a quiet host's events.
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size_force(&sock, RCVBUF);
        let addr = netlink::SocketAddrNetlink::new(0, CN_IDX_PROC);
        rustix::net::bind(&sock, &addr)?;
        rustix::net::send(&sock, &listen_message(), rustix::net::SendFlags::empty())?;
        Ok(Exits {
            sock,
            under: under.trim_end_matches('/').to_string(),
            cgroup_of: HashMap::new(),
        })
    }

    /// `pids` are in the cgroup `cgroup` (below the mount, `/` first): `watch` listed them.
    pub fn remember(&mut self, pids: &[u32], cgroup: &str) {
        if self.cgroup_of.len() + pids.len() >= KEPT {
            self.cgroup_of.clear();
        }
        for &pid in pids {
            self.cgroup_of.insert(pid, cgroup.to_string());
        }
    }

    /// The path of the root's cgroup `rel` below the mount, as [`Ended::cgroup`] gives it.
    pub fn cgroup_path(&self, rel: &str) -> String {
        format!("{}/{rel}", self.under)
    }

    /// Every event queued now: the processes of the followed cgroups that ended.
    pub fn read(&mut self) -> Vec<Ended> {
        let mut out = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            let n = match rustix::net::recv(&self.sock, &mut buf, rustix::net::RecvFlags::empty()) {
                Ok((n, _)) => n,
                // ENOBUFS: the socket's buffer overflowed and events were dropped; what comes
                // next is still read.
                Err(Errno::NOBUFS) | Err(Errno::INTR) => continue,
                Err(_) => break,
            };
            let Some(event) = buf.get(..n).and_then(parse) else {
                continue;
            };
            match event {
                Event::Forked(pid) | Event::Execed(pid) => self.attribute(pid),
                Event::Exited { pid, status } => {
                    let cgroup = self.cgroup_of.remove(&pid).or_else(|| self.cgroup_now(pid));
                    if let Some(cgroup) = cgroup {
                        out.push(Ended {
                            pid,
                            cgroup,
                            status,
                        });
                    }
                }
            }
        }
        out
    }

    /// Where `pid` is now, when that is below the followed cgroups.
    fn cgroup_now(&self, pid: u32) -> Option<String> {
        let text = crate::cgroup::procfs::read_text(pid, "cgroup").ok()?;
        let cg = crate::cgroup::parse::proc_cgroup_v2(&text)?;
        (cg == self.under || cg.starts_with(&format!("{}/", self.under))).then_some(cg)
    }

    /// A fork or exec of `pid`, read now: remembered where it is, when that is below the
    /// followed cgroups (one gone since, or moved out, keeps what was remembered of it).
    fn attribute(&mut self, pid: u32) {
        if let Some(cg) = self.cgroup_now(pid) {
            self.remember(&[pid], &cg);
        }
    }
}

/// A process event of the connector, of a process (not a thread).
#[derive(Debug, PartialEq, Eq)]
enum Event {
    Forked(u32),
    Execed(u32),
    Exited { pid: u32, status: u32 },
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// One datagram of the connector: `nlmsghdr`, `cn_msg`, then `proc_event` (`what`, `cpu`,
/// `timestamp_ns`, then the event's data at 16). Threads' events are left out.
fn parse(b: &[u8]) -> Option<Event> {
    let ev = NLMSG_HDRLEN + CN_MSG_LEN;
    if u32_at(b, NLMSG_HDRLEN)? != CN_IDX_PROC {
        return None;
    }
    let what = u32_at(b, ev)?;
    let data = ev + 16;
    match what {
        FORK => {
            let (pid, tgid) = (u32_at(b, data + 8)?, u32_at(b, data + 12)?);
            (pid == tgid).then_some(Event::Forked(tgid))
        }
        EXEC => {
            let (pid, tgid) = (u32_at(b, data)?, u32_at(b, data + 4)?);
            (pid == tgid).then_some(Event::Execed(tgid))
        }
        EXIT => {
            let (pid, tgid) = (u32_at(b, data)?, u32_at(b, data + 4)?);
            let status = u32_at(b, data + 8)?;
            (pid == tgid).then_some(Event::Exited { pid: tgid, status })
        }
        _ => None,
    }
}

/// The `PROC_CN_MCAST_LISTEN` message: `nlmsghdr`, `cn_msg` for the proc connector, the op.
fn listen_message() -> Vec<u8> {
    let len = (NLMSG_HDRLEN + CN_MSG_LEN + 4) as u32;
    let mut m = Vec::with_capacity(len as usize);
    m.extend_from_slice(&len.to_ne_bytes());
    m.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&0u32.to_ne_bytes()); // seq
    m.extend_from_slice(&std::process::id().to_ne_bytes());
    m.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    m.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // seq
    m.extend_from_slice(&0u32.to_ne_bytes()); // ack
    m.extend_from_slice(&4u16.to_ne_bytes()); // len of the data
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&LISTEN.to_ne_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(what: u32, data: &[u32]) -> Vec<u8> {
        let mut b = vec![0u8; NLMSG_HDRLEN];
        b.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
        b.extend_from_slice(&[0u8; CN_MSG_LEN - 4]);
        b.extend_from_slice(&what.to_ne_bytes());
        b.extend_from_slice(&[0u8; 12]);
        for d in data {
            b.extend_from_slice(&d.to_ne_bytes());
        }
        b
    }

    #[test]
    fn the_connectors_events_parse_and_threads_are_left_out() {
        assert_eq!(
            parse(&datagram(FORK, &[1, 1, 42, 42])),
            Some(Event::Forked(42))
        );
        assert_eq!(parse(&datagram(FORK, &[1, 1, 43, 42])), None);
        assert_eq!(parse(&datagram(EXEC, &[7, 7])), Some(Event::Execed(7)));
        assert_eq!(
            parse(&datagram(EXIT, &[9, 9, 1 << 8, 17, 1, 1])),
            Some(Event::Exited {
                pid: 9,
                status: 1 << 8
            })
        );
        assert_eq!(parse(&datagram(EXIT, &[10, 9, 0, 17])), None);
        assert_eq!(parse(&datagram(0x40, &[1, 1])), None);
        assert_eq!(parse(&[0u8; 10]), None);
        assert_eq!(listen_message().len(), 40);
    }

    #[test]
    fn an_exit_with_a_code_or_a_crash_is_against_a_stop() {
        let e = |status| Ended {
            pid: 5,
            cgroup: "/x".into(),
            status,
        };
        assert_eq!(
            e(1 << 8).against_a_stop().as_deref(),
            Some("pid 5 exited with code 1")
        );
        assert_eq!(e(0).against_a_stop(), None);
        assert_eq!(e(15).against_a_stop(), None);
        assert_eq!(e(9).against_a_stop(), None);
        assert_eq!(
            e(11 | 0x80).against_a_stop().as_deref(),
            Some("pid 5 died of SIGSEGV")
        );
    }
}
