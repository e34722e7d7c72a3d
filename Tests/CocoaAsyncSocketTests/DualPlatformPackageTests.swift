import Foundation
import SharedTestSupport
import XCTest

/// The Linux half of the dual-platform recipe (Fixtures/DualPlatformApp/Package.swift): an app package whose
/// sources say `import CocoaAsyncSocket` builds against this package with no edit, and without a warning.
///
/// The fixture is copied afresh into a directory of its own under this package's `.build`, beside a link to
/// this package named `EpollLoop`, and built there with `swift build`. The place stays the same from run to
/// run so that only the first run compiles the library (about as long as `swift build` of LoopSocket); later
/// runs find it up to date and compile the app alone.
final class DualPlatformPackageTests: XCTestCase {
    /// This package's root directory.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testAnAppPackageImportingCocoaAsyncSocketBuildsAgainstThisPackage() throws {
        let files = FileManager.default
        let workspace = Self.packageRoot.appendingPathComponent(".build/fixtures/dual-platform")
        let app = workspace.appendingPathComponent("DualPlatformApp")
        let link = workspace.appendingPathComponent("EpollLoop")
        try? files.removeItem(at: app)
        try? files.removeItem(at: link)
        try files.createDirectory(at: workspace, withIntermediateDirectories: true)
        try files.copyItem(
            at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/DualPlatformApp"),
            to: app)
        try files.createSymbolicLink(at: link, withDestinationURL: Self.packageRoot)

        let swift = try TestTool.path("swift")
        let swiftBuild = ["build", "--package-path", app.path,
                          "--scratch-path", workspace.appendingPathComponent("scratch").path, "--disable-index-store"]
        let build = try ChildProcess.run(swift, swiftBuild, seconds: 900)
        XCTAssertEqual(build.status, 0, "swift build failed:\n\(build.output)\n\(build.error)")
        XCTAssertFalse(build.output.contains("warning:"), "the app builds with warnings:\n\(build.output)")
        let binPath = try ChildProcess.run(swift, swiftBuild + ["--show-bin-path"])
        let executable = binPath.output.trimmingCharacters(in: .whitespacesAndNewlines) + "/DualPlatformApp"
        XCTAssertTrue(files.isExecutableFile(atPath: executable), "no \(executable)")
    }
}
