import Foundation
import Glibc
import SharedTestSupport

/// One of the package's executables run with the allocation counter preloaded. The counter keeps its totals
/// in the first page of a file both processes map shared, so this process reads them at any moment, with no
/// signal or request to the measured one.
final class CountedProcess {
    /// The running program.
    let child: ChildProcess
    private let pagePath: String
    private let page: UnsafeMutableRawPointer

    /// Where the measured executables are: `ALLOCATION_COUNTER_BUILD` (say `.build/release`, to measure a
    /// release build of them), else the directory of this test bundle, which `swift build` put them in.
    static var buildDirectory: URL {
        guard let given = ProcessInfo.processInfo.environment["ALLOCATION_COUNTER_BUILD"], !given.isEmpty else {
            return ChildProcess.buildDirectory
        }
        return URL(fileURLWithPath: given).resolvingSymlinksInPath()
    }

    /// Starts the executable `name` of ``buildDirectory`` with `arguments`, the counter preloaded.
    init(_ name: String, _ arguments: [String]) throws {
        let library = try AllocationHook.library.get()
        pagePath = AllocationHook.directory + "/\(name)-\(UUID().uuidString).counts"
        guard FileManager.default.createFile(atPath: pagePath, contents: Data(count: 4096)) else {
            throw MeasurementFailure("cannot create \(pagePath)")
        }
        let fd = open(pagePath, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw MeasurementFailure("cannot open \(pagePath): errno \(errno)") }
        defer { close(fd) }
        guard let mapped = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw MeasurementFailure("cannot map \(pagePath): errno \(errno)")
        }
        page = mapped
        // Through env, so that only the child gets the variables, not this process.
        child = try ChildProcess(TestTool.path("env"), [
            "ALLOC_COUNTER_FILE=\(pagePath)", "LD_PRELOAD=\(library)", Self.buildDirectory.appendingPathComponent(name).path,
        ] + arguments)
    }

    deinit {
        munmap(page, 4096)
        unlink(pagePath)
    }

    /// Allocating calls so far (malloc, calloc, realloc, the aligned ones). An aligned 8-byte load, which is
    /// never torn on the 64-bit targets the package builds for; the counter adds with relaxed atomics.
    var allocations: UInt64 { page.load(fromByteOffset: 0, as: UInt64.self) }

    /// Waits (at most 20 s) for the line announcing the server and returns the port in it ("... port N ...").
    func port(announcedWith text: String) throws -> UInt16 {
        guard child.waitForOutput(containing: text, seconds: 20),
              let range = child.standardOutput.range(of: " port "),
              let port = UInt16(child.standardOutput[range.upperBound...].prefix { $0.isNumber }) else {
            child.wait(seconds: 5)
            throw MeasurementFailure("did not start: \(child.standardOutput) \(child.standardError)")
        }
        guard allocations > 0 else {
            throw MeasurementFailure("the preloaded counter counted nothing (LD_PRELOAD refused?): \(child.standardError)")
        }
        return port
    }

    /// SIGTERM, then the exit (bounded); the exit status.
    @discardableResult
    func stop() -> Int32 {
        child.process.terminate()
        return child.wait(seconds: 20)
    }
}
