import Foundation
import SharedTestSupport
import XCTest

/// The Linux half of the dual-platform recipe (Fixtures/DualPlatformApp/Package.swift): an app package whose
/// sources say `import CocoaAsyncSocket` builds against this package with no edit.
///
/// The fixture is copied to a new temporary directory beside a link to this package (`EpollLoop`), and built
/// with `swift build` into a scratch directory kept under this package's `.build`, so that only the first run
/// compiles the library (about as long as `swift build` of LoopSocket); later runs compile the app alone.
final class DualPlatformPackageTests: XCTestCase {
    /// This package's root directory.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testAnAppPackageImportingCocoaAsyncSocketBuildsAgainstThisPackage() throws {
        let files = FileManager.default
        let workspace = files.temporaryDirectory.appendingPathComponent("dual-platform-\(UUID().uuidString)")
        try files.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? files.removeItem(at: workspace) }
        let app = workspace.appendingPathComponent("DualPlatformApp")
        try files.copyItem(
            at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/DualPlatformApp"),
            to: app)
        try files.createSymbolicLink(
            at: workspace.appendingPathComponent("EpollLoop"), withDestinationURL: Self.packageRoot)

        let scratch = Self.packageRoot.appendingPathComponent(".build/fixtures/DualPlatformApp")
        let build = try ChildProcess.run(
            "/usr/bin/env", ["swift", "build", "--package-path", app.path, "--scratch-path", scratch.path],
            seconds: 900)
        XCTAssertEqual(build.status, 0, "swift build failed:\n\(build.output)\n\(build.error)")
        XCTAssertFalse(build.output.contains("warning:"), "the app builds with warnings:\n\(build.output)")
        let binary = try ChildProcess.run(
            "/usr/bin/env", ["swift", "build", "--package-path", app.path, "--scratch-path", scratch.path, "--show-bin-path"])
        let executable = binary.output.trimmingCharacters(in: .whitespacesAndNewlines) + "/DualPlatformApp"
        XCTAssertTrue(files.isExecutableFile(atPath: executable), "no \(executable)")
    }
}
