import COpenSSL
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// The three public error types over their shared core: each bridges to `NSError` and back with its own
/// domain, code, message and `errno`; a failed system call keeps its `errno` and call; equal errors hash
/// equal; none grew.
final class ErrorCoreTests: SocketTestCase {
    private let reset = SyscallError(.recv, errno: .connectionReset)

    /// `error` bridged to `NSError` has `domain`, `code` and its message, and comes back from it equal.
    private func assertRoundTrip<E: Error & Hashable>(
        _ error: E, domain: String, code: Int, message: String, back: (NSError) -> E,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let bridged = error as NSError
        XCTAssertEqual(bridged.domain, domain, file: file, line: line)
        XCTAssertEqual(bridged.code, code, file: file, line: line)
        XCTAssertEqual(bridged.localizedDescription, message, file: file, line: line)
        XCTAssertEqual(back(bridged), error, file: file, line: line)
    }

    // MARK: GCDAsyncSocketError

    func testSocketErrorRoundTripsThroughNSError() {
        let error = GCDAsyncSocketError(.readTimeoutError, "Read operation timed out")
        assertRoundTrip(error, domain: GCDAsyncSocketErrorDomain, code: 4, message: "Read operation timed out",
                        back: GCDAsyncSocketError.init(_nsError:))
        XCTAssertNil(GCDAsyncSocketError(_nsError: error as NSError).errno)
    }

    func testSocketErrorOfAFailedCallKeepsItsErrnoAndCallAndBridgesAsPOSIX() {
        let error = GCDAsyncSocketError(reset)
        XCTAssertEqual(error.code, .otherError)
        XCTAssertEqual(error.errno, .connectionReset)
        XCTAssertEqual(error.syscall, .recv)
        XCTAssertEqual(error.message, reset.description)
        XCTAssertEqual(error.description, "GCDAsyncSocketError.otherError: \(reset.description)")

        let bridged = error as NSError
        XCTAssertEqual(bridged.domain, NSPOSIXErrorDomain)
        XCTAssertEqual(bridged.code, Int(ECONNRESET))
        XCTAssertEqual(bridged.localizedDescription, reset.description)
        // NSError has no place for the call; the errno, code and message come back.
        let back = GCDAsyncSocketError(_nsError: bridged)
        XCTAssertEqual(back.code, .otherError)
        XCTAssertEqual(back.errno, .connectionReset)
        XCTAssertEqual(back.message, reset.description)
        XCTAssertEqual((back as NSError).domain, NSPOSIXErrorDomain)
        XCTAssertEqual((back as NSError).code, Int(ECONNRESET))

        // A refused connect keeps its own code as well as the errno.
        let refused = GCDAsyncSocketError(SyscallError(.connect, errno: .connectionRefused), code: .connectTimeoutError)
        XCTAssertEqual(refused.code, .connectTimeoutError)
        XCTAssertEqual(refused.errno, .connectionRefused)
        XCTAssertEqual(refused.syscall, .connect)
    }

    func testSocketErrorKeepsExtraUserInfo() {
        let error = GCDAsyncSocketError(.closedError, userInfo: [NSLocalizedDescriptionKey: "bye", "peer": "x"])
        let back = GCDAsyncSocketError(_nsError: NSError(domain: GCDAsyncSocketErrorDomain, code: 7, userInfo: error.userInfo))
        XCTAssertEqual(back.code, .closedError)
        XCTAssertEqual(back.message, "bye")
        XCTAssertEqual(back.userInfo["peer"] as? String, "x")
        XCTAssertEqual(back, error)
        XCTAssertEqual(GCDAsyncSocketError(.closedError).message,
                       "The operation couldn’t be completed. (GCDAsyncSocketErrorDomain error 7.)")
    }

    // MARK: GCDAsyncUdpSocketError

    func testUdpErrorRoundTripsThroughNSError() {
        assertRoundTrip(GCDAsyncUdpSocketError(.sendTimeoutError, "Send operation timed out"), domain: GCDAsyncUdpSocketErrorDomain,
                        code: 3, message: "Send operation timed out", back: GCDAsyncUdpSocketError.init(_nsError:))

        // An errno comes in from NSPOSIXErrorDomain and stays through the type's own domain, as GCDAsyncUdpSocket's.
        let posix = GCDAsyncUdpSocketError(_nsError: NSError(domain: NSPOSIXErrorDomain, code: Int(ENOBUFS),
                                                             userInfo: [NSLocalizedDescriptionKey: "no buffers"]))
        XCTAssertEqual(posix.code, .otherError)
        XCTAssertEqual(posix.errno, .noBufferSpace)
        XCTAssertEqual(posix.message, "no buffers")
        XCTAssertEqual((posix as NSError).domain, GCDAsyncUdpSocketErrorDomain)
        XCTAssertEqual((posix as NSError).code, GCDAsyncUdpSocketError.Code.otherError.rawValue)
    }

    func testUdpErrorOfAFailedCallKeepsItsErrnoAndCall() {
        let failure = SyscallError(.sendmmsg, errno: .noBufferSpace)
        let error = GCDAsyncUdpSocketError(failure)
        XCTAssertEqual(error.code, .otherError)
        XCTAssertEqual(error.errno, .noBufferSpace)
        XCTAssertEqual(error.syscall, .sendmmsg)
        XCTAssertEqual(error.message, failure.description)
        XCTAssertEqual(error.localizedDescription, failure.description)
        XCTAssertEqual((error as NSError).localizedDescription, failure.description)
        XCTAssertEqual(error.description, "GCDAsyncUdpSocketError.otherError: \(failure.description)")

        // A loop's refusal that is a failed epoll_ctl keeps its errno too; any other keeps its sentence.
        let refused = GCDAsyncUdpSocketError(EventLoopError.system(SyscallError(.epollCtl, errno: .noMemory)))
        XCTAssertEqual(refused.errno, .noMemory)
        XCTAssertEqual(refused.syscall, .epollCtl)
        let unregistered = GCDAsyncUdpSocketError(EventLoopError.notRegistered(fd: 9))
        XCTAssertEqual(unregistered.code, .otherError)
        XCTAssertNil(unregistered.errno)
        XCTAssertEqual(unregistered.message, EventLoopError.notRegistered(fd: 9).description)
    }

    /// A failed `epoll_ctl` while the socket starts receiving closes it with that `errno`, not a sentence.
    func testUdpSocketClosedByAFailedEpollCtlReportsItsErrno() throws {
        let faults = FaultInjection.Scope()
        addTeardown { faults.end() }
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        faults.inject(.noMemory, into: .epollCtl, count: 1, on: .descriptor(socket.socket4FD()))
        try socket.beginReceiving()
        delegate.waitForClose()
        let closed = delegate.events.compactMap { event -> GCDAsyncUdpSocketError? in
            if case .closed(let error) = event { return error as? GCDAsyncUdpSocketError } else { return nil }
        }
        let error = try XCTUnwrap(closed.first, "\(delegate.events)")
        XCTAssertEqual(error.code, .otherError)
        XCTAssertEqual(error.errno, .noMemory)
        XCTAssertEqual(error.syscall, .epollCtl)
        XCTAssertEqual(faults.pendingFailures, 0)
    }

    // MARK: TLSError

    func testTLSErrorBridgesWithItsDomainCodeAndMessage() {
        let error = TLSError(.certificateVerificationFailed, "certificate verify failed",
                             verificationResult: Int(X509_V_ERR_CERT_HAS_EXPIRED), verificationFailure: "certificate has expired")
        XCTAssertEqual(error.code, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed")
        XCTAssertEqual(error.verificationResult, Int(X509_V_ERR_CERT_HAS_EXPIRED))
        XCTAssertEqual(error.message, "certificate verify failed (certificate has expired)")
        XCTAssertEqual(error.description, "TLSError.certificateVerificationFailed: certificate verify failed (certificate has expired)")
        let bridged = error as NSError
        XCTAssertEqual(bridged.domain, "kCFStreamErrorDomainSSL")
        XCTAssertEqual(bridged.code, -9814)  // errSSLCertExpired
        XCTAssertEqual(bridged.localizedDescription, error.message)
        XCTAssertEqual(bridged.userInfo.count, 1)

        let plain = TLSError.handshakeTimedOut
        XCTAssertNil(plain.verificationResult)
        XCTAssertNil(plain.verificationFailure)
        XCTAssertEqual(plain.openSSLError, 0)
        XCTAssertEqual((plain as NSError).code, -9806)  // errSSLClosedAbort
        XCTAssertEqual((plain as NSError).localizedDescription, "The TLS handshake timed out")
    }

    // MARK: Equality, hashing, size

    func testEqualErrorsHashEqual() {
        func assertEqualAndHashedEqual<E: Hashable>(_ a: E, _ b: E, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(a, b, file: file, line: line)
            XCTAssertEqual(a.hashValue, b.hashValue, file: file, line: line)
            XCTAssertEqual(Set([a, b]).count, 1, file: file, line: line)
        }
        assertEqualAndHashedEqual(GCDAsyncSocketError(reset), GCDAsyncSocketError(reset))
        assertEqualAndHashedEqual(GCDAsyncSocketError(.closedError, "x"), GCDAsyncSocketError(.closedError, "x"))
        assertEqualAndHashedEqual(GCDAsyncSocketError(.otherError, userInfo: ["k": 1, NSLocalizedDescriptionKey: "m"]),
                                  GCDAsyncSocketError(.otherError, userInfo: ["k": 1, NSLocalizedDescriptionKey: "m"]))
        assertEqualAndHashedEqual(GCDAsyncUdpSocketError(SyscallError(.bind, errno: .addressInUse)),
                                  GCDAsyncUdpSocketError(SyscallError(.bind, errno: .addressInUse)))
        assertEqualAndHashedEqual(GCDAsyncUdpSocketError(.closedError), GCDAsyncUdpSocketError(.closedError))
        assertEqualAndHashedEqual(TLSError(.handshakeFailed, "r", openSSLError: 7), TLSError(.handshakeFailed, "r", openSSLError: 7))

        XCTAssertNotEqual(GCDAsyncSocketError(reset), GCDAsyncSocketError(SyscallError(.send, errno: .connectionReset)))
        XCTAssertNotEqual(GCDAsyncSocketError(reset), GCDAsyncSocketError(.otherError, reset.description))
        XCTAssertNotEqual(GCDAsyncUdpSocketError(.closedError, "a"), GCDAsyncUdpSocketError(.closedError, "b"))
        XCTAssertNotEqual(TLSError(.handshakeFailed, "r", verificationResult: 1), TLSError(.handshakeFailed, "r", verificationResult: 2))
    }

    /// The core must not make the errors bigger than they were on their own (40, 40 and 64 bytes): a
    /// `GCDAsyncSocketError` is boxed into `any Error` whenever a connection ends with one.
    func testTheErrorsAreNoLargerThanBefore() {
        XCTAssertLessThanOrEqual(MemoryLayout<GCDAsyncSocketError>.size, 40)
        XCTAssertLessThanOrEqual(MemoryLayout<GCDAsyncUdpSocketError>.size, 40)
        XCTAssertLessThanOrEqual(MemoryLayout<TLSError>.size, 64)
    }
}
