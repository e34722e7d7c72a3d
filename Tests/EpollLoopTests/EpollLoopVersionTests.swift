import FoundationEssentials
import XCTest

import EpollLoop

/// The version lives in one place (`EpollLoopVersion`), and CHANGELOG.md's newest release must name it, so a
/// release cannot ship with the two apart.
final class EpollLoopVersionTests: XCTestCase {
    func testTheVersionIsSemantic() {
        let parts = EpollLoopVersion.release.split(separator: ".")
        XCTAssertEqual(parts.count, 3, EpollLoopVersion.release)
        XCTAssertTrue(parts.allSatisfy { UInt($0) != nil }, EpollLoopVersion.release)
    }

    /// A build that is not the release prints `X.Y.Z+dev`, so a report or a bug made with it cannot pass for one
    /// made with the release.
    func testABuildThatIsNotTheReleaseSaysSo() {
        if EpollLoopVersion.isRelease {
            XCTAssertEqual(EpollLoopVersion.current, EpollLoopVersion.release)
        } else {
            XCTAssertEqual(EpollLoopVersion.current, EpollLoopVersion.release + "+dev")
        }
    }

    func testTheChangelogsNewestReleaseIsTheVersion() throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(decoding: Data(contentsOf: root.appending(path: "CHANGELOG.md")), as: UTF8.self)
        // Keep a Changelog: "## [Unreleased]" first, then "## [1.2.3] - YYYY-MM-DD" for each release.
        let newest = text.split(separator: "\n").first { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        let line = try XCTUnwrap(newest, "CHANGELOG.md names a release")
        XCTAssertTrue(line.hasPrefix("## [\(EpollLoopVersion.release)] - "), "\(line) vs \(EpollLoopVersion.release)")
    }
}
