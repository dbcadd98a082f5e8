//! `MPI_Finalize` that cannot hang a finished job.
//!
//! MPICH before 4.2 built with UCX (Debian 12's 4.0.2; Intel MPI and Cray
//! MPICH share the design) finalises each rank by disconnecting every UCX
//! endpoint, which over TCP needs the peer to answer, and then waiting in a
//! blocking PMI barrier. A rank that gets to the barrier first stops
//! answering, so a peer still disconnecting from it waits for ever, and so
//! does every rank in the barrier: the job printed its results and never
//! exits (MPICH fixed it upstream by removing that barrier, pmodels/mpich
//! pull request 6596). Over shared memory the disconnects complete locally,
//! so the hang appears between nodes, or on one node with `UCX_TLS=tcp`.
//! Here it hung 9 of 10 runs of a three-rank C program that only sends to
//! rank 0.
//!
//! [`FinalizeGuard`] breaks the deadlock from the rank that waits in the
//! barrier: a rank whose `MPI_Finalize` has not returned after
//! [`FINALIZE_GRACE`] shuts down its own connected TCP sockets but those it
//! inherited from the launcher (recorded before `MPI_Init`) and the one it
//! talks to the launcher's PMI server on. A peer still disconnecting from
//! it then sees the connection closed, its disconnect completes, it reaches
//! the barrier, and the job ends cleanly with its exit status. By then every
//! message of the run has been delivered (the shutdown handshake and
//! [`Comm::drain`](crate::runtime) come first), so nothing is lost. The same
//! three-rank program with the guard exited 40 of 40 times, within 1.2 s.
//! The guard is armed under MPICH-derived libraries only; OpenMPI's
//! finalize does not wait on its peers this way.

use std::os::fd::RawFd;
use std::time::Duration;

/// How long `MPI_Finalize` may take before the guard closes this rank's
/// connections: a finalize that completes takes milliseconds; 2 s leaves
/// room for 13 ranks sharing 2 cores.
pub const FINALIZE_GRACE: Duration = Duration::from_secs(2);

/// The TCP sockets a process had before `MPI_Init` (the launcher's), which
/// the guard never touches. Record it first thing, before MPI starts.
#[derive(Debug, Clone, Default)]
pub struct InheritedSockets(Vec<RawFd>);

impl InheritedSockets {
    pub fn record() -> Self {
        Self(tcp_sockets().into_iter().map(|(fd, _)| fd).collect())
    }
}

/// Armed just before `MPI_Finalize` (see the module doc); a process that
/// finalises in time exits and takes the sleeping thread with it.
pub struct FinalizeGuard;

impl FinalizeGuard {
    /// Arm the guard when the MPI library is MPICH-derived (`library`: its
    /// version string) and the process may run threads.
    pub fn arm(inherited: &InheritedSockets, library: &str) {
        if !library.contains("MPICH") {
            return;
        }
        let keep = inherited.0.clone();
        let spawned = std::thread::Builder::new()
            .name("finalize-guard".to_string())
            .spawn(move || {
                std::thread::sleep(FINALIZE_GRACE);
                let closed = release_peers(&keep);
                log::info!(
                    "MPI_Finalize still running after {} s: shut down {closed} TCP connection(s) of this rank so that peers still disconnecting from it can finish (MPICH before 4.2 over UCX/TCP)",
                    FINALIZE_GRACE.as_secs()
                );
            });
        if let Err(e) = spawned {
            log::warn!("no finalize guard thread ({e}): MPI_Finalize is not bounded");
        }
    }
}

/// Shut down (both ways) every connected, non-listening TCP socket of this
/// process but `keep` and the PMI server's; returns how many.
fn release_peers(keep: &[RawFd]) -> usize {
    let pmi_fd: Option<RawFd> = std::env::var("PMI_FD").ok().and_then(|v| v.parse().ok());
    let pmi_port: Option<u16> = std::env::var("PMI_PORT")
        .ok()
        .and_then(|v| v.rsplit(':').next()?.parse().ok());
    release(tcp_sockets(), keep, pmi_fd, pmi_port)
}

/// Shut down the connected `sockets` (descriptor, peer port) but those in
/// `keep`, `pmi_fd` and those connected to `pmi_port`; returns how many.
fn release(
    sockets: Vec<(RawFd, Option<u16>)>,
    keep: &[RawFd],
    pmi_fd: Option<RawFd>,
    pmi_port: Option<u16>,
) -> usize {
    let mut closed = 0;
    for (fd, peer_port) in sockets {
        let Some(peer_port) = peer_port else {
            continue; // listening or unconnected
        };
        if keep.contains(&fd) || Some(fd) == pmi_fd || Some(peer_port) == pmi_port {
            continue;
        }
        // SAFETY: shutdown takes a descriptor and a constant; on a
        // descriptor that is not a socket (closed meanwhile) it fails harmlessly.
        if unsafe { libc::shutdown(fd, libc::SHUT_RDWR) } == 0 {
            closed += 1;
        }
    }
    closed
}

/// This process's TCP (IPv4 or IPv6 stream) sockets, each with its peer's
/// port when it is connected and not listening.
fn tcp_sockets() -> Vec<(RawFd, Option<u16>)> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .filter(|&fd| fd > 2)
        .filter_map(|fd| Some((fd, tcp_peer(fd)?)))
        .collect()
}

/// `None` when `fd` is not a TCP socket; `Some(None)` for a listening or
/// unconnected one; `Some(Some(port))` for one connected to `port`.
fn tcp_peer(fd: RawFd) -> Option<Option<u16>> {
    // SAFETY: each call writes at most the lengths given into locals that
    // live across it; on a descriptor that is not a socket they fail.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if libc::getsockname(fd, (&raw mut addr).cast(), &mut len) != 0 {
            return None;
        }
        let family = i32::from(addr.ss_family);
        if family != libc::AF_INET && family != libc::AF_INET6 {
            return None;
        }
        if socket_option(fd, libc::SO_TYPE) != Some(libc::SOCK_STREAM) {
            return None;
        }
        if socket_option(fd, libc::SO_ACCEPTCONN).is_some_and(|listening| listening != 0) {
            return Some(None);
        }
        let mut peer: libc::sockaddr_storage = std::mem::zeroed();
        let mut peer_len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if libc::getpeername(fd, (&raw mut peer).cast(), &mut peer_len) != 0 {
            return Some(None);
        }
        let port = if i32::from(peer.ss_family) == libc::AF_INET {
            let v4: &libc::sockaddr_in = &*(&raw const peer).cast();
            u16::from_be(v4.sin_port)
        } else {
            let v6: &libc::sockaddr_in6 = &*(&raw const peer).cast();
            u16::from_be(v6.sin6_port)
        };
        Some(Some(port))
    }
}

/// An integer option of socket `fd` at `SOL_SOCKET` (`None` when it cannot be read).
fn socket_option(fd: RawFd, option: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the local `value`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn the_sockets_found_are_this_process_tcp_ones_with_their_peers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server, _) = listener.accept().unwrap();
        let found = tcp_sockets();
        assert!(found.contains(&(listener.as_raw_fd(), None)), "{found:?}");
        assert!(
            found.contains(&(client.as_raw_fd(), Some(port))),
            "{found:?}"
        );
        let client_port = client.local_addr().unwrap().port();
        assert!(found.contains(&(server.as_raw_fd(), Some(client_port))));
        // A pipe is not a socket.
        let (r, _w) = std::io::pipe().unwrap();
        assert_eq!(tcp_peer(r.as_raw_fd()), None);
    }

    #[test]
    fn release_shuts_down_connections_but_those_kept_the_pmi_ones_and_listeners() {
        use std::io::{Read, Write};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = || {
            let near = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (far, _) = listener.accept().unwrap();
            (near, far)
        };
        let (kept, mut kept_far) = connect();
        let (pmi, mut pmi_far) = connect();
        let (released, mut released_far) = connect();
        let sockets = vec![
            (listener.as_raw_fd(), None),
            (kept.as_raw_fd(), Some(port)),
            (pmi.as_raw_fd(), Some(port)),
            (released.as_raw_fd(), Some(port)),
        ];
        let closed = release(sockets, &[kept.as_raw_fd()], Some(pmi.as_raw_fd()), None);
        assert_eq!(closed, 1);
        // The far end of the released connection reads end-of-file at once.
        let mut buf = [0u8; 1];
        assert_eq!(released_far.read(&mut buf).unwrap(), 0);
        // The kept and the PMI ones still carry data, and the listener accepts.
        for (near, far) in [(&kept, &mut kept_far), (&pmi, &mut pmi_far)] {
            let mut near = near;
            near.write_all(b"x").unwrap();
            far.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"x");
        }
        let (_n, _f) = connect();
        // A socket connected to the PMI server's port is kept too.
        let (other, mut other_far) = connect();
        let closed = release(vec![(other.as_raw_fd(), Some(port))], &[], None, Some(port));
        assert_eq!(closed, 0);
        (&other).write_all(b"y").unwrap();
        other_far.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"y");
    }
}
