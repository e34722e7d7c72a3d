import Dispatch
import Glibc
import Synchronization

/// Reports a server's accept failures on standard error, at most one line per interval, with the number of
/// failures since the last line. A server at its descriptor limit sheds connections (the loop closes them at
/// once, see docs/architecture.md); this says so without writing a line per refused connection.
///
/// ```swift
/// let failures = AcceptFailureLog(server: "echo-server")
/// // in socket(_:didFailToAcceptWithError:)
/// failures.report(error)
/// ```
public final class AcceptFailureLog: Sendable {
    private let server: String
    private let intervalNanoseconds: UInt64
    /// When the last line was written (0: never), and the failures not written since.
    private let state = Mutex<(lastLine: UInt64, unreported: Int)>((0, 0))

    /// A log for `server` (the program's name) writing at most one line per `interval` seconds.
    public init(server: String, interval: Double = 1) {
        self.server = server
        self.intervalNanoseconds = UInt64(interval * 1e9)
    }

    /// Counts `error`, and writes a line if the last one is at least an interval old.
    public func report(_ error: any Error) {
        let now = DispatchTime.now().uptimeNanoseconds
        let count: Int? = state.withLock { state in
            state.unreported += 1
            guard state.lastLine == 0 || now - state.lastLine >= intervalNanoseconds else { return nil }
            defer { state = (now, 0) }
            return state.unreported
        }
        guard let count else { return }
        let more = count > 1 ? " (\(count) failures since the last report)" : ""
        let line = "\(server): accept failed: \(error)\(more)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
    }
}
