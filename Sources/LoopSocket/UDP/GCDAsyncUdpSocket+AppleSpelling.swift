// Full Foundation, for `NSString` in the out-pointer getters. Nothing on the hot path goes through here.
import Dispatch
import EpollLoop
import Foundation

/// The exact Swift names an iOS or macOS app compiles against (what Swift imports from CocoaAsyncSocket's
/// `GCDAsyncUdpSocket.h`) where the engine's own spelling differs: the filters' `with:` label, the
/// out-pointer getters, the target-queue calls. See docs/migrating-from-gcdasyncsocket.md.
extension GCDAsyncUdpSocket {
    /// Reads the delegate and its queue together, through out-pointers (either may be nil).
    public func getDelegate(
        _ delegatePtr: AutoreleasingUnsafeMutablePointer<(any GCDAsyncUdpSocketDelegate)?>?,
        delegateQueue delegateQueuePtr: AutoreleasingUnsafeMutablePointer<DispatchQueue?>?
    ) {
        delegatePtr?.pointee = delegate()
        delegateQueuePtr?.pointee = delegateQueue()
    }

    /// Does nothing: GCDAsyncUdpSocket needs it so that its `dispatch_sync` calls do not deadlock when the
    /// socket queue targets another queue. A LoopSocket socket has no socket queue.
    public func markQueueTargetQueue(_ socketQueuesPreConfiguredTargetQueue: DispatchQueue) {}

    /// Does nothing (see ``markQueueTargetQueue(_:)``).
    public func unmarkSocketQueueTargetQueue(_ socketQueuesPreviouslyConfiguredTargetQueue: DispatchQueue) {}

    /// GCDAsyncUdpSocket's send filter, called for each datagram before it leaves: on `filterQueue`, or
    /// inline on the loop when `filterQueue` is nil. A datagram the filter refuses is dropped and reported as
    /// sent. (The Apple spelling of `setSendFilter(_:withQueue:)`.)
    public func setSendFilter(_ filterBlock: GCDAsyncUdpSocketSendFilterBlock?, with filterQueue: DispatchQueue?) {
        setSendFilter(filterBlock, withQueue: filterQueue)
    }

    /// As ``setSendFilter(_:with:)``. A filter with a queue is always called asynchronously: a synchronous
    /// call would block the event loop.
    public func setSendFilter(_ filterBlock: GCDAsyncUdpSocketSendFilterBlock?, with filterQueue: DispatchQueue?, isAsynchronous: Bool) {
        setSendFilter(filterBlock, withQueue: filterQueue, isAsynchronous: isAsynchronous)
    }

    /// GCDAsyncUdpSocket's receive filter, called for each datagram before it is delivered: on `filterQueue`,
    /// or inline on the loop when `filterQueue` is nil. What it stores through its context pointer reaches
    /// `udpSocket(_:didReceive:fromAddress:withFilterContext:)`. (The Apple spelling of
    /// `setReceiveFilter(_:withQueue:)`.)
    public func setReceiveFilter(_ filterBlock: GCDAsyncUdpSocketReceiveFilterBlock?, with filterQueue: DispatchQueue?) {
        setReceiveFilter(filterBlock, withQueue: filterQueue)
    }

    /// As ``setReceiveFilter(_:with:)``. A filter with a queue is always called asynchronously: a synchronous
    /// call would block the event loop.
    public func setReceiveFilter(_ filterBlock: GCDAsyncUdpSocketReceiveFilterBlock?, with filterQueue: DispatchQueue?, isAsynchronous: Bool) {
        setReceiveFilter(filterBlock, withQueue: filterQueue, isAsynchronous: isAsynchronous)
    }

    /// Host and port of a raw `sockaddr`, the host as an `NSString` as on Apple platforms; false if it is
    /// neither IPv4 nor IPv6.
    @discardableResult
    public class func getHost(
        _ hostPtr: AutoreleasingUnsafeMutablePointer<NSString?>?, port portPtr: UnsafeMutablePointer<UInt16>?,
        fromAddress address: Data
    ) -> Bool {
        getHost(hostPtr, port: portPtr, family: nil, fromAddress: address)
    }

    /// Host, port and family (`AF_INET` or `AF_INET6`) of a raw `sockaddr`, the host as an `NSString` as on
    /// Apple platforms; false if it is neither IPv4 nor IPv6.
    @discardableResult
    public class func getHost(
        _ hostPtr: AutoreleasingUnsafeMutablePointer<NSString?>?, port portPtr: UnsafeMutablePointer<UInt16>?,
        family afPtr: UnsafeMutablePointer<Int32>?, fromAddress address: Data
    ) -> Bool {
        guard let family = fillAppleHostAndPort(hostPtr, portPtr, from: address) else { return false }
        afPtr?.pointee = family
        return true
    }
}

/// Two references to a socket are equal when they are the same socket, as for GCDAsyncUdpSocket (an
/// `NSObject` that does not override `isEqual:`).
extension GCDAsyncUdpSocket: Hashable {
    /// Identity: the same socket object.
    public static func == (lhs: GCDAsyncUdpSocket, rhs: GCDAsyncUdpSocket) -> Bool { lhs === rhs }

    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The name GCDAsyncUdpSocket gives the exceptions it raises (LoopSocket raises none).
public let GCDAsyncUdpSocketException = "GCDAsyncUdpSocketException"
/// The label GCDAsyncUdpSocket gives its socket queues (LoopSocket has none: its loops are named threads).
public let GCDAsyncUdpSocketQueueName = "GCDAsyncUdpSocket"
/// The name GCDAsyncUdpSocket gives its CFStream thread (LoopSocket has none).
public let GCDAsyncUdpSocketThreadName = "GCDAsyncUdpSocket-CFStream"
