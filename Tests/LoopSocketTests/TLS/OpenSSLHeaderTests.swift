import Foundation
import SharedTestSupport
import XCTest

/// Where OpenSSL's headers are missing, building stops with the line that installs them, before any bare
/// "file not found". The COpenSSL header is compiled by the toolchain's clang with the system include
/// directories left out (`-nostdinc`), which is what a machine without libssl-dev looks like to it.
final class OpenSSLHeaderTests: XCTestCase {
    private static let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/COpenSSL/include/COpenSSL.h").path

    func testMissingHeadersStopTheBuildWithTheInstallLineFirst() throws {
        let clang = try TestTool.path("clang")
        let missing = try ChildProcess.run(clang, ["-fsyntax-only", "-nostdinc", "-x", "c", Self.header])
        XCTAssertNotEqual(missing.status, 0)
        let firstError = try XCTUnwrap(missing.error.split(separator: "\n").first { $0.contains("error") })
        XCTAssertTrue(firstError.contains("apt-get install libssl-dev"), String(firstError))
        XCTAssertTrue(firstError.contains("dnf install openssl-devel"), String(firstError))

        let present = try ChildProcess.run(clang, ["-fsyntax-only", "-x", "c", Self.header])
        XCTAssertEqual(present.status, 0, present.error)
    }
}
