import EpollLoop
import FoundationEssentials
import Glibc

/// GCDAsyncSocket's class helpers: separators, address conversion, a synchronous lookup.
extension GCDAsyncSocket {
    /// `"\r\n"`, the HTTP line separator.
    public class func crlfData() -> Data { Data([0x0D, 0x0A]) }
    /// `"\r"`.
    public class func crData() -> Data { Data([0x0D]) }
    /// `"\n"`.
    public class func lfData() -> Data { Data([0x0A]) }
    /// A single zero byte.
    public class func zeroData() -> Data { Data([0x00]) }

    /// The numeric host of a raw `sockaddr` (IPv4 or IPv6), or `nil`.
    public class func host(fromAddress address: Data) -> String? {
        SocketAddress(bytes: address)?.host
    }

    /// The port of a raw `sockaddr`, or 0.
    public class func port(fromAddress address: Data) -> UInt16 {
        SocketAddress(bytes: address)?.port ?? 0
    }

    /// Whether a raw `sockaddr` is IPv4.
    public class func isIPv4Address(_ address: Data) -> Bool {
        SocketAddress(bytes: address)?.isIPv4 ?? false
    }

    /// Whether a raw `sockaddr` is IPv6.
    public class func isIPv6Address(_ address: Data) -> Bool {
        SocketAddress(bytes: address)?.isIPv6 ?? false
    }

    /// Extracts host and port from a raw `sockaddr`; returns false if it is not IPv4 or IPv6.
    @discardableResult @_disfavoredOverload
    public class func getHost(_ host: UnsafeMutablePointer<String?>?, port: UnsafeMutablePointer<UInt16>?, fromAddress address: Data) -> Bool {
        guard let parsed = SocketAddress(bytes: address), let text = parsed.host else { return false }
        host?.pointee = text
        port?.pointee = parsed.port
        return true
    }

    /// Resolves `host` synchronously (`getaddrinfo`, which blocks: never call it on an event loop) into raw
    /// `sockaddr` values, as GCDAsyncSocket's `lookupHost:port:error:`; `let addresses: [Data] = try …` picks
    /// it over the `NSMutableArray` form Apple platforms return.
    @_disfavoredOverload
    public class func lookupHost(_ host: String, port: UInt16) throws -> [Data] {
        if let immediate = Resolver.immediate(host, port: port) { return immediate.map(\.data) }
        return try Resolver.resolve(host, port: port).mapError(GCDAsyncSocketError.init).get().map(\.data)
    }

    /// Adopts a descriptor that is already connected (GCDAsyncSocket's `socketFromConnectedSocketFD:`).
    /// The socket takes ownership: it makes the descriptor nonblocking and closes it when it disconnects.
    ///
    /// - Throws: ``GCDAsyncSocketError/Code/badParamError`` if `socketFD` is not a connected stream socket.
    public convenience init(fromConnectedSocketFD socketFD: Int32, delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?) throws {
        self.init(delegate: delegate, delegateQueue: delegateQueue)
        let type = try? Syscall.option(socketFD, level: SOL_SOCKET, name: SO_TYPE)
        guard type == Int32(SOCK_STREAM.rawValue), let peer = SocketAddress.of(fd: socketFD, peer: true) else {
            throw GCDAsyncSocketError(.badParamError, "Descriptor \(socketFD) is not a connected stream socket")
        }
        let flags = fcntl(socketFD, F_GETFL)
        guard flags >= 0, fcntl(socketFD, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw GCDAsyncSocketError(SyscallError(.fcntl, errno: Errno(rawValue: errno)))
        }
        _ = fcntl(socketFD, F_SETFD, FD_CLOEXEC)
        let configuration = try claimForStart(.adopted)
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try adoptConnected(socketFD, isUnix: peer.isUnix, configuration: configuration)
        }
    }

    /// Adopts a connected descriptor, with GCDAsyncSocket's socket-queue parameter (ignored: the loop replaces it).
    public convenience init(fromConnectedSocketFD socketFD: Int32, socketQueue: DispatchQueue?) throws {
        try self.init(fromConnectedSocketFD: socketFD, delegate: nil, delegateQueue: nil)
    }
}

import Dispatch
