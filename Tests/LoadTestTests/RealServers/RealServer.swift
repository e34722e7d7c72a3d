import Foundation
import Glibc
import SharedTestSupport
import XCTest

/// A server no one here wrote (redis-server, memcached, mosquitto, from Debian's packages), started for one
/// test on 127.0.0.1 and stopped after it. None of the three takes port 0 as "any free port" (to each, 0
/// turns TCP off), so the port is picked by binding 127.0.0.1:0, reading the port the kernel chose, and
/// releasing it just before the server binds it. Readiness is the line each server logs once it listens,
/// waited for with a bound (never a sleep). A missing server fails the test with the command that installs it.
final class RealServer {
    let process: ChildProcess
    let port: UInt16
    let name: String

    /// Starts `command` (found on the PATH) with `arguments(port)` through `sh` with standard error joined to
    /// standard output, and waits up to 10 s for `ready` in its output.
    init(_ command: String, ready: String, _ arguments: (UInt16) -> [String]) throws {
        name = command
        let path = try TestTool.path(command)
        port = try Self.freePort()
        let line = ([path] + arguments(port)).map { "'\($0)'" }.joined(separator: " ")
        process = try ChildProcess("/bin/sh", ["-c", "exec \(line) 2>&1"])
        guard process.waitForOutput(containing: ready, seconds: 10) else {
            process.wait(seconds: 1)
            throw RealServerError("\(command) did not say '\(ready)' within 10 s: \(process.standardOutput)")
        }
    }

    /// Stops the server (SIGTERM) and waits for it, bounded.
    func stop() {
        kill(process.process.processIdentifier, SIGTERM)
        process.wait(seconds: 10)
    }

    /// A port free on 127.0.0.1 now: bound with port 0, read back, released.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RealServerError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw RealServerError("bind 127.0.0.1:0: \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }
}

struct RealServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
