import Glibc
import XCTest

/// The test process's peak resident memory since the last reset, KiB (`VmHWM`).
func peakResidentKiB() throws -> Int {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
    return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
}

/// Resets the peak to the current resident memory (`/proc/self/clear_refs`, "5").
func resetPeak() throws {
    let fd = open("/proc/self/clear_refs", O_WRONLY)
    XCTAssertGreaterThanOrEqual(fd, 0)
    defer { close(fd) }
    XCTAssertEqual(write(fd, "5", 1), 1)
}
