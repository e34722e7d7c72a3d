import Foundation
import Glibc

/// A program from outside this package that a test runs as a peer or a helper (openssl, curl, python3,
/// redis-server, prlimit, ...), found on `PATH`, never at a fixed path, since distributions and
/// installs put them in different places.
///
/// A missing tool fails the test that needs it with the command that installs it: `scripts/test.sh`
/// installs every peer the suite needs and then runs it; the distribution's package is named too.
public enum TestTool {
    /// The Debian/Ubuntu package of each tool whose package has another name (the rest share theirs).
    private static let packages = ["prlimit": "util-linux", "ip": "iproute2", "env": "coreutils"]

    /// Searched after `PATH`: Debian installs servers such as mosquitto in the sbin directories, which an
    /// unprivileged user's `PATH` leaves out.
    private static let systemDirectories = ["/usr/local/sbin", "/usr/sbin", "/sbin"]

    /// The full path of `name` on `searchPath` (`PATH` unless given), then in the sbin directories, or nil.
    public static func find(_ name: String, searchPath: String? = nil) -> String? {
        let path = searchPath ?? ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + systemDirectories
        return directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// The full path of `name`, or a ``TestToolMissing`` error that names the command installing it.
    public static func path(_ name: String, searchPath: String? = nil) throws -> String {
        guard let found = find(name, searchPath: searchPath) else { throw TestToolMissing(tool: name) }
        return found
    }

    /// The one line that says how to get `name`: the suite's own set-up script, or the system package.
    public static func installHint(_ name: String) -> String {
        "run scripts/test.sh, or apt-get install \(packages[name] ?? name)"
    }

    /// What to run when the `python3` on `PATH` lacks the `websockets` package (a peer for the WebSocket
    /// tests, from PyPI): `scripts/test.sh` puts it in a virtual environment of its own and puts that first.
    public static let websocketsHint =
        "run scripts/test.sh (it installs websockets into .build/test-venv and puts that venv's python3 first on PATH), "
        + "or put a python3 that can `import websockets` first on PATH"
}

/// A tool a test needs is not installed; the message names the command that installs it.
public struct TestToolMissing: Error, CustomStringConvertible {
    /// The program's name, as looked up on `PATH`.
    public let tool: String

    /// Creates the error for `tool`.
    public init(tool: String) { self.tool = tool }

    /// "redis-server not found on PATH: run scripts/test.sh, or apt-get install redis-server".
    public var description: String { "\(tool) not found on PATH: \(TestTool.installHint(tool))" }
}
