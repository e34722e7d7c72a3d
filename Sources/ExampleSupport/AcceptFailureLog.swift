import EpollLoop
import Glibc

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
    /// The same limiter `LoopDiagnostics` writes its default lines through.
    private let limiter: RateLimiter

    /// A log for `server` (the program's name) writing at most one line per `interval` seconds.
    public init(server: String, interval: Double = 1) {
        self.server = server
        limiter = RateLimiter(intervalNanoseconds: UInt64(interval * 1e9))
    }

    /// Counts `error`, and writes a line if the last one is at least an interval old.
    public func report(_ error: any Error) {
        guard let heldBack = limiter.admit("accept") else { return }
        let more = heldBack > 0 ? " (\(heldBack + 1) failures since the last report)" : ""
        let line = "\(server): accept failed: \(error)\(more)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
    }
}
