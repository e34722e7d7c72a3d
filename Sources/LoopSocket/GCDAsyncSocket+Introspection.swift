import EpollLoop
import FoundationEssentials

/// What the socket is connected to, readable from any thread: the status is a snapshot the loop updates; the
/// addresses are asked of the kernel under the same lock (see ``SharedState/fd``).
extension GCDAsyncSocket {
    /// True when the socket is neither connected, connecting nor listening.
    public var isDisconnected: Bool { withSharedState { $0.status == .idle } }

    /// True once connected (false while connecting or listening).
    public var isConnected: Bool { withSharedState { $0.status == .connected } }

    /// The peer's numeric IP address.
    public var connectedHost: String? { connected(peer: true)?.host }

    /// The peer's port (0 when not connected over IP).
    public var connectedPort: UInt16 { connected(peer: true)?.port ?? 0 }

    /// The Unix-domain socket this socket is connected to.
    public var connectedUrl: URL? {
        connected(peer: true)?.unixPath.map { URL(fileURLWithPath: $0) }
    }

    /// The local numeric IP address (of the first listening socket, for a listener).
    public var localHost: String? { local()?.host }

    /// The local port (the listening port, for a listener: the one the OS chose when you asked for port 0).
    public var localPort: UInt16 { local()?.port ?? 0 }

    /// The peer's address as raw `sockaddr` bytes.
    public var connectedAddress: Data? { connected(peer: true)?.data }

    /// The local address as raw `sockaddr` bytes.
    public var localAddress: Data? { local()?.data }

    /// Whether the connection (or one of the listening sockets) is IPv4.
    public var isIPv4: Bool {
        if let address = connected(peer: false) { return address.isIPv4 }
        return withSharedState { $0.listenAddresses.contains { $0.isIPv4 } }
    }

    /// Whether the connection (or one of the listening sockets) is IPv6.
    public var isIPv6: Bool {
        if let address = connected(peer: false) { return address.isIPv6 }
        return withSharedState { $0.listenAddresses.contains { $0.isIPv6 } }
    }

    /// The connection's local address, or the first listening socket's.
    private func local() -> SocketAddress? {
        connected(peer: false) ?? withSharedState { $0.listenAddresses.first }
    }

    /// Runs `block` on the socket's loop and waits for it (GCDAsyncSocket's `performBlock:`). Inside it,
    /// ``socketFD()`` and friends may be called, for example to set an option this API does not cover.
    /// Does nothing if the loop is shut down.
    public func perform(_ block: () -> Void) {
        performWaiting(block, "GCDAsyncSocket")
    }

    /// Runs `body` with the raw descriptor on the socket's loop, asynchronously (-1 when not connected).
    public func withSocketFD(_ body: @escaping @Sendable (Int32) -> Void) {
        onLoop { [self] in body(socketFD()) }
    }
}

import Dispatch

/// The block of ``GCDAsyncSocket/perform(_:)``, run once on the loop and released right after.
final class PerformBox: @unchecked Sendable {
    private var block: (() -> Void)?
    init(_ block: @escaping () -> Void) { self.block = block }
    func run() {
        block?()
        block = nil
    }
}

/// A semaphore for ``GCDAsyncSocket/perform(_:)``.
final class DispatchSemaphoreBox: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait() { semaphore.wait() }
}
