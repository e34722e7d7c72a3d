import CEpollShim
import EpollLoop

/// One descriptor of a ``DatagramEngine`` (a socket has one per IP family it uses, as GCDAsyncUdpSocket
/// has `socket4FD` and `socket6FD`), registered with the socket's loop as TCP's engine is, through
/// `LoopIOHandler` (the loop calls it directly; nothing of it is public).
///
/// The loop holds the channel and the channel holds its socket: an open socket stays alive without its user
/// keeping a reference, until it closes (the cycle ends there).
final class DatagramChannel: OwnedDescriptor {
    let fd: Int32
    /// `AF_INET` or `AF_INET6`.
    let family: Int32
    /// The interest registered with the loop (kept here so an unchanged interest costs no system call).
    var interest: IOEvents = []
    /// The kernel takes `UDP_SEGMENT` (GSO, Linux 4.18) on this descriptor.
    var canSegment = false
    /// `UDP_GRO` is on (Linux 5.0): a received message may hold a run of datagrams.
    var coalesces = false
    let owner: DatagramEngine

    init(fd: Int32, family: Int32, owner: DatagramEngine) {
        self.fd = fd
        self.family = family
        self.owner = owner
    }

    /// Finds out what the kernel offers: GSO where `getsockopt(UDP_SEGMENT)` answers, GRO where
    /// `setsockopt(UDP_GRO)` is accepted (when `offload` is wanted). Older kernels refuse both: plain I/O.
    func detectOffload(_ offload: Bool) {
        canSegment = (try? Syscall.option(fd, level: CEPOLL_SOL_UDP, name: CEPOLL_UDP_SEGMENT)) != nil
        setCoalescing(offload)
    }

    /// Turns `UDP_GRO` on or off.
    func setCoalescing(_ on: Bool) {
        guard on != coalesces else { return }
        if (try? Syscall.setOption(fd, level: CEPOLL_SOL_UDP, name: CEPOLL_UDP_GRO, value: on ? 1 : 0)) != nil {
            coalesces = on
        }
    }

    var engine: DatagramEngine? { owner }

    @inline(__always)
    func ready(_ events: IOEvents, for engine: DatagramEngine) {
        engine.handleIO(events, on: self)
    }
}

extension DatagramEngine: DescriptorOwner {
    func loopWillShutDown() {
        closeWithError(.loopShutDown)
    }
}
