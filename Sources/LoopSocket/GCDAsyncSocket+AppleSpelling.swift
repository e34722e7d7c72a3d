// Full Foundation, for the Apple types a few of these names carry (`NSString`, `NSMutableArray`). Nothing on
// the hot path goes through here: each method forwards to the engine's own entry point.
import Dispatch
import EpollLoop
import Foundation

/// The exact Swift names an iOS or macOS app compiles against (what Swift imports from CocoaAsyncSocket's
/// `GCDAsyncSocket.h`) where the engine's own spelling differs: an optional `Data` for writes and separators,
/// `progress(ofReadReturningTag:…)`, the descriptor accessors as methods, the socket-queue initialisers and
/// target-queue calls, the out-pointer getters. See docs/migrating-from-gcdasyncsocket.md for what cannot exist
/// on Linux and what stands in for it.
extension GCDAsyncSocket {
    /// A socket without a delegate yet; the socket queue is ignored (the socket's event loop takes its place).
    public convenience init(socketQueue: DispatchQueue?) {
        self.init(delegate: nil, delegateQueue: nil)
    }

    /// Adopts a connected descriptor (GCDAsyncSocket's
    /// `socketFromConnectedSocketFD:delegate:delegateQueue:socketQueue:error:`); the socket queue is ignored.
    public convenience init(
        fromConnectedSocketFD socketFD: Int32, delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?,
        socketQueue: DispatchQueue?
    ) throws {
        try self.init(fromConnectedSocketFD: socketFD, delegate: delegate, delegateQueue: delegateQueue)
    }

    /// Reads the delegate and its queue together, through out-pointers (either may be nil).
    public func getDelegate(
        _ delegatePtr: AutoreleasingUnsafeMutablePointer<(any GCDAsyncSocketDelegate)?>?,
        delegateQueue delegateQueuePtr: AutoreleasingUnsafeMutablePointer<DispatchQueue?>?
    ) {
        let (delegate, queue) = storedDelegate()
        delegatePtr?.pointee = delegate
        delegateQueuePtr?.pointee = queue
    }

    /// Does nothing: GCDAsyncSocket needs it so that its `dispatch_sync` calls do not deadlock when the socket
    /// queue targets another queue. A LoopSocket socket has no socket queue and its getters never wait on it.
    public func markQueueTargetQueue(_ socketQueuesPreConfiguredTargetQueue: DispatchQueue) {}

    /// Does nothing (see ``markQueueTargetQueue(_:)``).
    public func unmarkSocketQueueTargetQueue(_ socketQueuesPreviouslyConfiguredTargetQueue: DispatchQueue) {}

    /// Queues `data` for writing; `nil` or empty data does nothing, as in GCDAsyncSocket. The Apple spelling
    /// of ``write(_:withTimeout:tag:)-(Data,_,_)``, which a non-optional `Data` argument calls directly.
    public func write(_ data: Data?, withTimeout timeout: TimeInterval, tag: Int) {
        guard let data else { return }
        write(data, withTimeout: timeout, tag: tag)
    }

    /// Reads up to and including the separator `data`; a `nil` or empty separator does nothing, as in
    /// GCDAsyncSocket. The Apple spelling of ``readData(to:withTimeout:tag:)-(Data,_,_)``.
    public func readData(to data: Data?, withTimeout timeout: TimeInterval, tag: Int) {
        guard let data else { return }
        readData(to: data, withTimeout: timeout, tag: tag)
    }

    /// The current read's progress: a fraction in 0…1, 1 for open-ended reads, NaN when no read is in
    /// progress; its tag, bytes done and total through the out-pointers. Loop only (or inside ``perform(_:)``).
    public func progress(
        ofReadReturningTag tagPtr: UnsafeMutablePointer<Int>?, bytesDone donePtr: UnsafeMutablePointer<UInt>?,
        total totalPtr: UnsafeMutablePointer<UInt>?
    ) -> Float {
        progressOfRead(returningTag: tagPtr, bytesDone: donePtr, total: totalPtr)
    }

    /// The current write's progress: a fraction in 0…1, or NaN when nothing is being written; its tag, bytes
    /// done and total through the out-pointers. Loop only (or inside ``perform(_:)``).
    public func progress(
        ofWriteReturningTag tagPtr: UnsafeMutablePointer<Int>?, bytesDone donePtr: UnsafeMutablePointer<UInt>?,
        total totalPtr: UnsafeMutablePointer<UInt>?
    ) -> Float {
        progressOfWrite(returningTag: tagPtr, bytesDone: donePtr, total: totalPtr)
    }

    // MARK: Raw descriptors

    /// The connected socket's descriptor (or the first listening one); -1 if none. Call it on the socket's
    /// loop, for example inside ``perform(_:)``, as GCDAsyncSocket requires it inside `performBlock:`.
    public func socketFD() -> Int32 {
        eventLoop.preconditionInEventLoop()
        descriptorHandedOut()
        if fd >= 0 { return fd }
        return listeners.first?.fd ?? -1
    }

    /// The IPv4 descriptor (connected or listening), or -1. Loop only.
    public func socket4FD() -> Int32 {
        eventLoop.preconditionInEventLoop()
        descriptorHandedOut()
        if fd >= 0 { return SocketAddress.of(fd: fd, peer: false)?.isIPv4 == true ? fd : -1 }
        return listeners.first { $0.address.isIPv4 }?.fd ?? -1
    }

    /// The IPv6 descriptor (connected or listening), or -1. Loop only.
    public func socket6FD() -> Int32 {
        eventLoop.preconditionInEventLoop()
        descriptorHandedOut()
        if fd >= 0 { return SocketAddress.of(fd: fd, peer: false)?.isIPv6 == true ? fd : -1 }
        return listeners.first { $0.address.isIPv6 }?.fd ?? -1
    }

    // MARK: Deprecated spellings

    /// Listens on a Unix-domain socket.
    @available(*, deprecated, renamed: "accept(on:)")
    public func accept(onUrl url: URL) throws {
        try accept(on: url)
    }

    /// Connects to a Unix-domain socket.
    @available(*, deprecated, renamed: "connect(to:withTimeout:)")
    public func connect(toUrl url: URL, withTimeout timeout: TimeInterval) throws {
        try connect(to: url, withTimeout: timeout)
    }

    // MARK: Class helpers

    /// Resolves `host` synchronously (`getaddrinfo`, which blocks: never call it on an event loop) into an
    /// array of raw `sockaddr` values (each element a `Data`), as GCDAsyncSocket's `lookupHost:port:error:`.
    /// `let addresses: [Data] = try lookupHost(…)` gives the Swift array directly.
    public class func lookupHost(_ host: String, port: UInt16) throws -> NSMutableArray {
        let addresses: [Data] = try lookupHost(host, port: port)
        return NSMutableArray(array: addresses)
    }

    /// Extracts host and port from a raw `sockaddr`; returns false if it is not IPv4 or IPv6. The host comes
    /// back as an `NSString`, as on Apple platforms (a `String?` out-pointer works too).
    @discardableResult
    public class func getHost(
        _ hostPtr: AutoreleasingUnsafeMutablePointer<NSString?>?, port portPtr: UnsafeMutablePointer<UInt16>?,
        fromAddress address: Data
    ) -> Bool {
        getHost(hostPtr, port: portPtr, family: nil, fromAddress: address)
    }

    /// Extracts host, port and address family (`AF_INET` or `AF_INET6`) from a raw `sockaddr`; returns false if
    /// it is not IPv4 or IPv6.
    @discardableResult
    public class func getHost(
        _ hostPtr: AutoreleasingUnsafeMutablePointer<NSString?>?, port portPtr: UnsafeMutablePointer<UInt16>?,
        family afPtr: UnsafeMutablePointer<sa_family_t>?, fromAddress address: Data
    ) -> Bool {
        guard let family = fillAppleHostAndPort(hostPtr, portPtr, from: address) else { return false }
        afPtr?.pointee = sa_family_t(family)
        return true
    }
}

/// The Apple `getHost` forms' work (both classes): host as an `NSString` and port through the out-pointers;
/// returns the address family, or nil (pointers untouched) if the address is neither IPv4 nor IPv6.
func fillAppleHostAndPort(
    _ hostPtr: UnsafeMutablePointer<NSString?>?, _ portPtr: UnsafeMutablePointer<UInt16>?, from address: Data
) -> Int32? {
    guard let parsed = SocketAddress(bytes: address), let host = parsed.host else { return nil }
    hostPtr?.pointee = NSString(string: host)
    portPtr?.pointee = parsed.port
    return parsed.family
}

/// Two references to a socket are equal when they are the same socket, as for GCDAsyncSocket (an `NSObject`
/// that does not override `isEqual:`): `clients.firstIndex(of: sock)`, `[GCDAsyncSocket: Session]`.
extension GCDAsyncSocket: Hashable {
    /// Identity: the same socket object.
    public static func == (lhs: GCDAsyncSocket, rhs: GCDAsyncSocket) -> Bool { lhs === rhs }

    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The name GCDAsyncSocket gives the exceptions it raises (LoopSocket raises none: misuse is a thrown error).
public let GCDAsyncSocketException = "GCDAsyncSocketException"
/// The label GCDAsyncSocket gives its socket queues (LoopSocket has none: its loops are named threads).
public let GCDAsyncSocketQueueName = "GCDAsyncSocket"
/// The name GCDAsyncSocket gives its CFStream thread (LoopSocket has none).
public let GCDAsyncSocketThreadName = "GCDAsyncSocket-CFStream"
/// GCDAsyncSocket's CocoaLumberjack logging context (65535). LoopSocket does not log through CocoaLumberjack.
public var GCDAsyncSocketLoggingContext: Int32 { 65535 }
