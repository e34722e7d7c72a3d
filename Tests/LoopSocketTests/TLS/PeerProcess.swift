import Foundation
import Glibc
import SharedTestSupport
import XCTest

/// A real peer program (`openssl`, `curl`, `python3`) run as a child process, its stdin a Unix socket the test
/// writes to (sent with `MSG_NOSIGNAL`, so a peer that exits first cannot raise SIGPIPE in the test process)
/// and its stdout and stderr (Unix sockets too) collected by two reader threads. Every wait is bounded.
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`: `Process` closes its termination socket on
/// its manager thread *after* it has reported the exit, which races with the descriptor count each test
/// compares in tearDown. Here every descriptor is closed before ``stop()`` returns.
final class PeerProcess: @unchecked Sendable {
    let name: String
    let pid: pid_t
    private let waiter = ConditionWaiter()
    private var stdinFD: Int32
    private var stdoutData = Data()
    private var stderrData = Data()
    private var openStreams = 2
    private var waitStatus: Int32?

    /// Starts `tool` (a name on `PATH` or a path) with `arguments`, and `environment` added to ours.
    init(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let executable = tool.hasPrefix("/") ? tool : try TestTool.path(tool)
        name = tool
        // Unix socket pairs, close-on-exec from the start (Glibc's Swift overlay has no pipe2).
        let stdinPair = try Self.socketPair()
        let outPipe: [Int32], errPipe: [Int32]
        do {
            outPipe = try Self.socketPair()
            do { errPipe = try Self.socketPair() } catch {
                for fd in stdinPair + outPipe { Glibc.close(fd) }
                throw error
            }
        } catch {
            for fd in stdinPair { Glibc.close(fd) }
            throw error
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies; every other descriptor of ours is close-on-exec.
        posix_spawn_file_actions_adddup2(&actions, stdinPair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var spawned: pid_t = 0
        let result = posix_spawn(&spawned, executable, &actions, &attributes, argv, envp)
        for fd in [stdinPair[1], outPipe[1], errPipe[1]] { Glibc.close(fd) }
        guard result == 0 else {
            for fd in [stdinPair[0], outPipe[0], errPipe[0]] { Glibc.close(fd) }
            throw RawSocketError(call: "posix_spawn \(tool)", errno: result)
        }
        pid = spawned
        stdinFD = stdinPair[0]
        startReader(outPipe[0], isStdout: true)
        startReader(errPipe[0], isStdout: false)
        let pid = spawned
        Thread { [self] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            waiter.update { waitStatus = status }
        }.start()
    }

    private static func socketPair() throws -> [Int32] {
        var pair: [Int32] = [-1, -1]
        try check("socketpair", socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair))
        return pair
    }

    private func startReader(_ fd: Int32, isStdout: Bool) {
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                waiter.update {
                    if isStdout { stdoutData.append(contentsOf: buffer[0..<n]) } else { stderrData.append(contentsOf: buffer[0..<n]) }
                }
            }
            Glibc.close(fd)
            waiter.update { openStreams -= 1 }
        }.start()
    }

    // MARK: Talking to it

    /// Writes `text` to the peer's stdin.
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(stdinFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RawSocketError(call: "send to \(name)'s stdin", errno: errno)
            }
            offset += n
        }
    }

    /// Ends the peer's stdin (it reads end of file).
    func closeStdin() {
        waiter.update {
            if stdinFD >= 0 {
                Glibc.close(stdinFD)
                stdinFD = -1
            }
        }
    }

    var stdout: String { waiter.read { String(decoding: stdoutData, as: UTF8.self) } }
    var stderr: String { waiter.read { String(decoding: stderrData, as: UTF8.self) } }
    var stdoutBytes: Data { waiter.read { stdoutData } }

    /// Both outputs, for failure messages.
    var transcript: String { "\(name) stdout:\n\(stdout)\n\(name) stderr:\n\(stderr)" }

    /// Waits until stdout (or stderr) contains `text` `times` times; returns whether it did, recording a
    /// failure if not.
    @discardableResult
    func waitForOutput(
        _ text: String, times: Int = 1, onStderr: Bool = false, file: StaticString = #filePath, line: UInt = #line
    ) -> Bool {
        let needle = Data(text.utf8)
        let found = waiter.wait { Self.count(needle, in: onStderr ? stderrData : stdoutData) >= times }
        if !found {
            XCTFail("\(name) never printed \(text.debugDescription)\(times > 1 ? " \(times) times" : ""); \(transcript)", file: file, line: line)
        }
        return found
    }

    private static func count(_ needle: Data, in haystack: Data) -> Int {
        var count = 0
        var start = haystack.startIndex
        while let range = haystack.range(of: needle, in: start..<haystack.endIndex) {
            count += 1
            start = range.upperBound
        }
        return count
    }

    /// Waits for a line of stdout that starts with `prefix`; returns the rest of that line.
    func waitForLine(startingWith prefix: String, timeout: TimeInterval = testTimeout) throws -> String {
        var found: String?
        let matched = waiter.wait(timeout: timeout) {
            let lines = String(decoding: stdoutData, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            found = lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            return found != nil
        }
        guard matched, let found else { throw TestTimeout(what: "\(name) to print \(prefix.debugDescription); \(transcript)") }
        return found
    }

    /// Waits (bounded) for the peer to exit; its exit status, or minus the signal that ended it.
    func waitForExit(timeout: TimeInterval = testTimeout) throws -> Int32 {
        guard waiter.wait(timeout: timeout, until: { waitStatus != nil && openStreams == 0 }), let raw = waiter.read({ waitStatus }) else {
            throw TestTimeout(what: "\(name) to exit; \(transcript)")
        }
        return (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : -(raw & 0x7F)
    }

    /// Kills the peer (SIGKILL) unless it has exited.
    func kill() {
        if waiter.read({ waitStatus }) == nil { Glibc.kill(pid, SIGKILL) }
    }

    /// Kills it if it still runs and releases every descriptor (the test's tearDown calls this).
    func stop() {
        kill()
        closeStdin()
        if !waiter.wait(until: { waitStatus != nil && openStreams == 0 }) {
            XCTFail("\(name) (pid \(pid)) was not reaped within \(Int(testTimeout)) s")
        }
    }
}

extension SocketTestCase {
    /// Starts `tool` as a peer, killed and reaped in tearDown. A tool that is not installed fails the test
    /// with the command that installs it (``TestToolMissing``): the peer is the point of an interop test.
    func launchPeer(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws -> PeerProcess {
        let peer = try PeerProcess(tool, arguments, environment: environment)
        addTeardown { peer.stop() }
        return peer
    }
}
