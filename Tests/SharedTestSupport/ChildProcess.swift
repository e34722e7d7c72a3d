import Foundation

/// A program of this package's build (loadtest, echo-server) or a system tool (`swift build` on a fixture
/// package), run as a child process with its output collected. Every wait is bounded; a child still running at the deadline is killed.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    private let outPipe = Pipe()
    private let errPipe = Pipe()
    private let lock = NSLock()
    private var outData = Data()
    private var errData = Data()
    private let exited = DispatchSemaphore(value: 0)
    private let outputArrived = DispatchSemaphore(value: 0)

    /// The directory holding the test bundle, where `swift build` also put the package's executables.
    public static var buildDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// The path of one of the package's executables.
    public static func product(_ name: String) -> String {
        buildDirectory.appendingPathComponent(name).path
    }

    public init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = outPipe
        process.standardError = errPipe
        outPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            if d.isEmpty { h.readabilityHandler = nil }  // end of file
            self?.lock.withLock { self?.outData.append(d) }
            self?.outputArrived.signal()
        }
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            if d.isEmpty { h.readabilityHandler = nil }
            self?.lock.withLock { self?.errData.append(d) }
        }
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // The child has its own copies of the write ends; ours are closed now, within the test that started
        // it, not whenever the pipes are released (a later test's descriptor check would see them close).
        try? outPipe.fileHandleForWriting.close()
        try? errPipe.fileHandleForWriting.close()
    }

    public var standardOutput: String { lock.withLock { String(decoding: outData, as: UTF8.self) } }
    public var standardError: String { lock.withLock { String(decoding: errData, as: UTF8.self) } }

    /// Waits up to `seconds` for the child to exit (killing it if it does not: SIGTERM, then SIGKILL after 5 s
    /// more for a child that handles SIGTERM and does not leave), then for its output to drain.
    @discardableResult
    public func wait(seconds: Double) -> Int32 {
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            process.terminate()
            if exited.wait(timeout: .now() + 5) == .timedOut { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        outPipe.fileHandleForReading.readabilityHandler = nil
        errPipe.fileHandleForReading.readabilityHandler = nil
        let restOut = outPipe.fileHandleForReading.readDataToEndOfFile()
        let restErr = errPipe.fileHandleForReading.readDataToEndOfFile()
        // Closed here, within the calling test: left to the handles' deinit, the pipes closed whenever
        // Dispatch released the readability sources, sometimes inside the next test, whose descriptor check
        // then saw a descriptor it did not open closed.
        try? outPipe.fileHandleForReading.close()
        try? errPipe.fileHandleForReading.close()
        lock.withLock {
            outData.append(restOut)
            errData.append(restErr)
        }
        return process.terminationStatus
    }

    /// Waits up to `seconds` for standard output to contain `text`; true if it did.
    public func waitForOutput(containing text: String, seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while !standardOutput.contains(text) {
            if outputArrived.wait(timeout: deadline) == .timedOut { return standardOutput.contains(text) }
        }
        return true
    }

    /// Runs a tool to completion (bounded) and returns its exit status and standard output.
    public static func run(_ executable: String, _ arguments: [String], seconds: Double = 30) throws -> (status: Int32, output: String, error: String) {
        let child = try ChildProcess(executable, arguments)
        let status = child.wait(seconds: seconds)
        return (status, child.standardOutput, child.standardError)
    }
}
