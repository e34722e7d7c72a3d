import Foundation
import SharedTestSupport
import XCTest

/// The suite's peers are found on the search path, never at a fixed place, and a missing one fails its test
/// with the command that installs it.
final class TestToolTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("test-tool-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try FileManager.default.removeItem(at: directory)
    }

    func testAToolIsFoundInAnyDirectoryOfTheSearchPathAndOnlyWhenExecutable() throws {
        let tool = directory.appendingPathComponent("fake-peer")
        try Data("#!/bin/sh\n".utf8).write(to: tool)
        let searchPath = "/nonexistent-dir:\(directory.path)"
        XCTAssertNil(TestTool.find("fake-peer", searchPath: searchPath), "not executable yet")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tool.path)
        XCTAssertEqual(TestTool.find("fake-peer", searchPath: searchPath), tool.path)
        XCTAssertEqual(try TestTool.path("fake-peer", searchPath: searchPath), tool.path)
        XCTAssertNil(TestTool.find("fake-peer", searchPath: "/nonexistent-dir"))
    }

    func testAMissingToolFailsWithTheCommandThatInstallsIt() {
        XCTAssertThrowsError(try TestTool.path("redis-server", searchPath: directory.path)) { error in
            XCTAssertEqual("\(error)", "redis-server not found on PATH: run scripts/test.sh, or apt-get install redis-server")
        }
        XCTAssertThrowsError(try TestTool.path("prlimit", searchPath: directory.path)) { error in
            XCTAssertEqual("\(error)", "prlimit not found on PATH: run scripts/test.sh, or apt-get install util-linux")
        }
    }
}
