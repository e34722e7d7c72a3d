import FoundationEssentials
import Glibc
import LoopSocket

/// The server's socket address, resolved once per run before any loop starts, so opening a connection costs
/// no lookup: `getaddrinfo` blocks (it must never run on a loop) and may ask a DNS server, and thousands of
/// connections to one host need the answer only once.
///
/// ```swift
/// let address = try ServerAddress.resolve(host: "localhost", port: 9000)
/// address.withSockaddr { sockaddr, length in connect(fd, sockaddr, length) }
/// ```
struct ServerAddress: Sendable {
    private var storage = sockaddr_storage()
    /// The length of the `sockaddr` in `storage`.
    let length: socklen_t

    /// The address family, `AF_INET` or `AF_INET6`.
    var family: Int32 { Int32(storage.ss_family) }

    /// An address from the raw `sockaddr` bytes `getaddrinfo` produced; nil if they are not IPv4 or IPv6.
    init?(raw: Data) {
        guard raw.count <= MemoryLayout<sockaddr_storage>.size, raw.count >= MemoryLayout<sa_family_t>.size else {
            return nil
        }
        _ = withUnsafeMutableBytes(of: &storage) { raw.copyBytes(to: $0) }
        length = socklen_t(raw.count)
        guard family == AF_INET || family == AF_INET6 else { return nil }
    }

    /// The address of `host` (a numeric IPv4 or IPv6 address, or a name) at `port`. Blocks in `getaddrinfo`:
    /// call it off the loops. Where a name has both, IPv4 is preferred (as GCDAsyncSocket does by default),
    /// so `localhost` reaches a server listening on 127.0.0.1 only.
    static func resolve(host: String, port: UInt16) throws(LoadTestError) -> ServerAddress {
        let candidates: [ServerAddress]
        do {
            candidates = try GCDAsyncSocket.lookupHost(host, port: port).compactMap(ServerAddress.init(raw:))
        } catch {
            throw LoadTestError((error as? GCDAsyncSocketError)?.message ?? "cannot resolve host '\(host)': \(error)")
        }
        guard let chosen = candidates.first(where: { $0.family == AF_INET }) ?? candidates.first else {
            throw LoadTestError("host '\(host)' has no IPv4 or IPv6 address")
        }
        return chosen
    }

    /// Calls `body` with the `sockaddr` and its length.
    func withSockaddr<R, E: Error>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer throws(E) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr throws(E) -> R in
                try body(sockaddr, length)
            }
        }
    }
}
