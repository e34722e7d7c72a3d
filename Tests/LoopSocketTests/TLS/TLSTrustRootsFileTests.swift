import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Trust roots read from a file (`TrustRoots.file`) follow the file: a CA taken out of it is no longer trusted
/// by the next connection, without a restart, while an unchanged file keeps its one shared context.
final class TLSTrustRootsFileTests: TLSTestCase {
    private func write(_ certificate: String, to path: String) throws {
        let pem = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path(certificate)))
        try pem.write(to: URL(fileURLWithPath: path))  // in place: the same inode
    }

    private func client(_ path: String) -> TLSConfiguration {
        var configuration = TLSConfiguration.client()
        configuration.trustRoots = .file(path)
        return configuration
    }

    func testACARemovedFromTheFileIsNoLongerTrusted() throws {
        let server = try makeTLSEchoServer(makeDelegate("server"), .server(identity: try Self.identity()))
        let directory = try makeTempDirectory()
        let path = directory.file("roots.pem")
        try write("ca.pem", to: path)
        let trustedDelegate = makeDelegate("trusted")
        let trusted = try connectTLSClient(trustedDelegate, port: server.localPort, client(path))
        waitForSecure(trustedDelegate, trusted)

        // The test CA out, another certificate in (of another size, so the change shows whatever the
        // file system's clock granularity).
        try write("untrusted.pem", to: path)
        let refusedDelegate = makeDelegate("refused")
        let refused = try connectTLSClient(refusedDelegate, port: server.localPort, client(path))
        let error = refusedDelegate.waitForDisconnect(of: refused)?.tlsError
        XCTAssertEqual(error?.code, .certificateVerificationFailed, "\(String(describing: error))")

        // Put back by renaming a new file over it (another inode), as update-ca-certificates does.
        let staged = directory.file("roots.pem.new")
        try write("ca.pem", to: staged)
        XCTAssertEqual(rename(staged, path), 0)
        let againDelegate = makeDelegate("trusted again")
        let again = try connectTLSClient(againDelegate, port: server.localPort, client(path))
        waitForSecure(againDelegate, again)
    }

    func testAnUnchangedFileKeepsItsSharedContext() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("roots.pem")
        try write("ca.pem", to: path)
        let first = try TLSContext.shared(for: client(path))
        XCTAssertTrue(first === (try TLSContext.shared(for: client(path))))
        try write("untrusted.pem", to: path)
        XCTAssertFalse(first === (try TLSContext.shared(for: client(path))))
    }

    /// A file that is gone fails the connection with the reason, rather than trusting what it held.
    func testARemovedFileIsNotTrustedFromMemory() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("roots.pem")
        try write("ca.pem", to: path)
        _ = try TLSContext.shared(for: client(path))
        XCTAssertEqual(unlink(path), 0)
        XCTAssertThrowsError(try TLSContext.shared(for: client(path))) { error in
            XCTAssertEqual((error as? TLSError)?.code, .badConfiguration, "\(error)")
        }
    }
}
