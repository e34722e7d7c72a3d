import Foundation
import SharedTestSupport
import XCTest

/// allocation-limits.json (beside this file): for each build configuration (`debug`, `release`: counts
/// differ between them) and workload, the allocations one operation costs, and the tolerance a measurement
/// may differ from it by. `UPDATE_ALLOCATION_LIMITS=1` makes the tests write what they measured instead of
/// checking it.
struct AllocationLimits: Codable {
    /// Why the file exists and how to change it; kept in the file for whoever opens it.
    var about: String
    /// Allocations per operation a measurement may differ from its limit by, either way.
    var tolerance: Double
    /// Allocations per operation, by configuration, then by workload.
    var limits: [String: [String: Double]]

    /// The file's path.
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("allocation-limits.json").path

    /// The file as the repository holds it.
    static func load() throws -> AllocationLimits {
        try JSONDecoder().decode(AllocationLimits.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes the file back, keys sorted, so that an update shows as a small diff.
    func save() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(self) + Data("\n".utf8)).write(to: URL(fileURLWithPath: Self.path))
    }

    /// The build configuration of the executables measured: the name of the directory they were built in.
    static var configuration: String { CountedProcess.buildDirectory.lastPathComponent }

    /// Rewrite the limits from the measurements rather than check them.
    static var updating: Bool { ProcessInfo.processInfo.environment["UPDATE_ALLOCATION_LIMITS"] == "1" }

    /// Windows measured per workload.
    static let windows = 3

    /// Checks `windows` (allocations per operation over each measured window) of `workload` against its limit;
    /// with ``updating``, records their least as the limit instead. Prints the figures either way.
    ///
    /// The least window is the measurement: what else the process does now and then (a periodic timer, the
    /// load generator's once-a-second bookkeeping) only ever adds allocations to the window it falls in, while
    /// a change to the code path moves every window alike. A window more than 1 allocation per operation above
    /// the least fails too, as a measurement that noisy says nothing.
    static func check(_ workload: String, _ windows: [Double], file: StaticString = #filePath, line: UInt = #line) throws {
        let configuration = Self.configuration
        var limits = try load()
        let measured = windows.min() ?? 0
        let shown = windows.map { String(format: "%.3f", $0) }.joined(separator: ", ")
        print("allocations per operation [\(configuration)] \(workload): \(String(format: "%.3f", measured)) (windows: \(shown))")
        if updating {
            limits.limits[configuration, default: [:]][workload] = (measured * 100).rounded() / 100
            try limits.save()
            return
        }
        XCTAssertLessThanOrEqual((windows.max() ?? 0) - measured, 1,
            "\(workload) [\(configuration)]: the windows disagree (\(shown) allocations per operation): the measurement is unstable",
            file: file, line: line)
        guard let recorded = limits.limits[configuration] else {
            XCTFail("no \(configuration) limits in \(Self.relativePath) (measured \(workload): \(shown)); "
                + "record them with UPDATE_ALLOCATION_LIMITS=1", file: file, line: line)
            return
        }
        guard let limit = recorded[workload] else {
            XCTFail("\(workload) [\(configuration)]: no limit in \(Self.relativePath); measured \(shown) allocations per operation; "
                + "record it with UPDATE_ALLOCATION_LIMITS=1", file: file, line: line)
            return
        }
        if abs(measured - limit) > limits.tolerance {
            let direction = measured > limit ? "more" : "fewer"
            XCTFail("\(workload) [\(configuration)]: \(String(format: "%.3f", measured)) allocations per operation "
                + "(windows: \(shown)), \(String(format: "%.2f", abs(measured - limit))) \(direction) than the limit \(limit) "
                + "± \(limits.tolerance) in \(Self.relativePath); if the change means to move it: UPDATE_ALLOCATION_LIMITS=1 "
                + "swift test --disable-swift-testing --filter AllocationCounterTests, then commit the file", file: file, line: line)
        }
    }

    /// The path as the repository names it.
    static let relativePath = "Tests/AllocationCounterTests/allocation-limits.json"
}
