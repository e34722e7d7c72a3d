import Foundation
import Glibc
import SharedTestSupport

/// alloc-counter.c (beside this file) built as a shared library, for `LD_PRELOAD` into the programs measured.
/// It is compiled when the tests run, with the C compiler on `PATH`, and linked into nothing: the sanitizer
/// builds of the suite (`.ci/run`) intercept malloc themselves, and a second interposer there would fight them.
/// There it counts through the sanitizer's own malloc and free hooks instead (alloc-counter.c says how).
enum AllocationHook {
    /// The C source.
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("alloc-counter.c").path

    /// The compilers tried, in this order, on `PATH`.
    static let compilers = ["cc", "gcc", "clang"]

    /// The library, built once per test process into a directory of its own (removed by ``remove()``).
    static let library: Result<String, MeasurementFailure> = build()

    /// The scratch directory holding the library and the measured processes' count pages.
    static let directory: String = {
        let path = NSTemporaryDirectory() + "/alloc-counter-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Removes ``directory``.
    static func remove() { try? FileManager.default.removeItem(atPath: directory) }

    private static func build() -> Result<String, MeasurementFailure> {
        guard let compiler = compilers.lazy.compactMap({ TestTool.find($0) }).first else {
            return .failure(MeasurementFailure("no C compiler (cc, gcc or clang) on PATH to build \(source): "
                + "put the Swift toolchain's usr/bin (which holds clang) on PATH, or apt-get install gcc"))
        }
        let output = directory + "/libcount.so"
        do {
            let result = try ChildProcess.run(compiler, ["-shared", "-fPIC", "-O2", "-o", output, source, "-ldl"], seconds: 120)
            guard result.status == 0 else {
                return .failure(MeasurementFailure("\(compiler) could not build \(source): \(result.error)"))
            }
        } catch {
            return .failure(MeasurementFailure("cannot run \(compiler): \(error)"))
        }
        return .success(output)
    }
}

/// A measurement could not be made (no compiler for the counter, a program that did not start); the message
/// says why, and what to install when something is missing.
struct MeasurementFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
