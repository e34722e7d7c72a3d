import EpollLoop
import Foundation
import XCTest

@testable import LoopSocket

/// `ErrorFacade`: each of the three public error types describes itself through the standard protocols, as
/// generic code and `any Error` see it (not only through the type's own members): its name, code and
/// message as `description`, the message as `errorDescription` and `localizedDescription`.
final class ErrorFacadeTests: XCTestCase {
    private func assertDescribes<E: Error & CustomStringConvertible & LocalizedError>(
        _ error: E, as description: String, message: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(String(describing: error), description, file: file, line: line)
        XCTAssertEqual("\(error)", description, file: file, line: line)
        XCTAssertEqual(error.errorDescription, message, file: file, line: line)
        let erased: any Error = error
        XCTAssertEqual(erased.localizedDescription, message, file: file, line: line)
        XCTAssertEqual((erased as? any LocalizedError)?.errorDescription, message, file: file, line: line)
        XCTAssertEqual(String(describing: erased), description, file: file, line: line)
    }

    func testEachTypeDescribesItselfAlike() {
        assertDescribes(GCDAsyncSocketError(.readTimeoutError, "Read operation timed out"),
                        as: "GCDAsyncSocketError.readTimeoutError: Read operation timed out",
                        message: "Read operation timed out")
        let reset = SyscallError(.recv, errno: .connectionReset)
        assertDescribes(GCDAsyncUdpSocketError(reset), as: "GCDAsyncUdpSocketError.otherError: \(reset.description)",
                        message: reset.description)
        assertDescribes(TLSError(.certificateVerificationFailed, "certificate verify failed",
                                 verificationFailure: "certificate has expired"),
                        as: "TLSError.certificateVerificationFailed: certificate verify failed (certificate has expired)",
                        message: "certificate verify failed (certificate has expired)")
    }
}
