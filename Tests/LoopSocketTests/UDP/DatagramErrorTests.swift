import EpollLoop
import Glibc
@testable import LoopSocket
import XCTest

/// The face words the engine's ``DatagramError`` as GCDAsyncUdpSocket did: each case's code, message and
/// `errno`, so that moving the words out of the engine changed nothing a delegate sees.
final class DatagramErrorTests: XCTestCase {
    func testEachErrorHasGCDAsyncUdpSocketsCodeAndMessage() {
        let refused = SyscallError(.sendmmsg, errno: Errno(rawValue: ECONNREFUSED))
        let rows: [(DatagramError, GCDAsyncUdpSocketError.Code, String)] = [
            (.refused(.alreadyBound), .badConfigError, "Cannot bind a socket more than once."),
            (.refused(.noDescriptor), .badConfigError,
             "Must bind socket before you can receive data. You can do this explicitly via bind, or implicitly via connect or by sending data."),
            (.noFamilyEnabled, .badConfigError, "Both IPv4 and IPv6 have been disabled. Must enable at least one protocol first."),
            (.systemCall(refused), .otherError, refused.description),
            (.loop(.shutDown), .otherError, EventLoopError.shutDown.description),
            (.loopShutDown, .badConfigError, "The socket's event loop is shut down"),
            (.closed, .closedError, "Socket closed"),
            (.sendTimeout, .sendTimeoutError, "Send operation timed out"),
            (.datagramTooLarge(bytes: 70_000, limit: 65_535), .badParamError,
             "Datagram of 70000 bytes is larger than maxSendBufferSize (65535)"),
            (.sendQueueFull(queued: 10, limit: 8), .otherError, "Send queue full: 10 bytes queued, bound 8 (maxQueuedSendBytes)"),
            (.destinationWhenConnected, .badConfigError, "Cannot specify destination of packet for connected socket"),
            (.noDestination, .badConfigError, "You must specify destination of packet for a non-connected socket"),
            (.noDescriptorToSend(ipv4: false), .badConfigError,
             "The socket has no IPv6 descriptor: that family is disabled, or the socket is bound to the other one"),
            (.unresolved(ResolverError(host: "a.invalid", reason: .noAddress)), .badParamError, "Host 'a.invalid' has no IPv4 or IPv6 address"),
            (.noEnabledAddress(ipv4Enabled: true, ipv6Enabled: false), .badConfigError,
             "The host has no address of an enabled family (IPv4 enabled: true, IPv6 enabled: false)"),
            (.peerFamilyNotBound(ipv4: true), .badConfigError, "The socket is bound to no address of the peer's family (IPv4)"),
            (.broadcastWithoutIPv4, .badConfigError, "Broadcast is IPv4 only, and the socket has no IPv4 descriptor"),
            (.noDescriptor(ipv4: false), .badConfigError, "The socket has no IPv6 descriptor"),
            (.unknownInterface, .badParamError, "Unknown interface. Specify valid interface by name (e.g. \"lo\") or IP address."),
            (.unknownGroup, .badParamError, "Unknown group. Specify valid group IP address."),
            (.groupFamilyMismatch, .badParamError, "Socket, group, and interface do not have matching IP versions"),
            (.datagramTooLong(limit: 512), .otherError, "Datagram longer than the maximum receive size (512 bytes) dropped"),
            (.invalidAddress, .badParamError, "A valid IPv4 or IPv6 address was not given"),
            (.invalidHost, .badParamError, "The host param is not valid."),
            (.unknownBindInterface(nil), .badParamError, "Unknown interface, or no address of an enabled family: any"),
            (.familyDisabled(ipv4: true), .badParamError, "The address's family (IPv4) is disabled"),
        ]
        for (error, code, message) in rows {
            let face = GCDAsyncUdpSocketError(error)
            XCTAssertEqual(face.code, code, "\(error)")
            XCTAssertEqual(face.message, message, "\(error)")
        }
        XCTAssertEqual(GCDAsyncUdpSocketError(.systemCall(refused)).errno?.rawValue, ECONNREFUSED)
        XCTAssertEqual(GCDAsyncUdpSocketError(.systemCall(refused)).syscall, .sendmmsg)
        XCTAssertEqual(GCDAsyncUdpSocketError(.sendQueueFull(queued: 1, limit: 1)).errno, .noBufferSpace)
        XCTAssertEqual(GCDAsyncUdpSocketError(.datagramTooLong(limit: 1)).errno?.rawValue, EMSGSIZE)
    }

    /// A name that does not resolve is a `badParamError` naming the host, from either face.
    func testAResolverErrorIsABadParamNamingTheHost() {
        let failure = ResolverError(host: "nonexistent.invalid", reason: .lookupFailed(EAI_NONAME))
        XCTAssertTrue(failure.message.hasPrefix("Cannot resolve host 'nonexistent.invalid': "), failure.message)
        let tcp = GCDAsyncSocketError(ConnectionError(passingThrough: failure))
        XCTAssertEqual(tcp.code, .badParamError)
        XCTAssertEqual(tcp.message, failure.message)
        let reported = GCDAsyncSocketError.reporting(ConnectionError(passingThrough: failure))
        XCTAssertEqual((reported as? GCDAsyncSocketError)?.code, .badParamError, "\(reported)")
        XCTAssertEqual(GCDAsyncUdpSocketError(.unresolved(failure)).message, failure.message)
    }
}
