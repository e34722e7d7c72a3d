import Glibc

/// The one place where the library reports what it notices (see ``LoopDiagnostic``).
///
/// By default a report goes to standard error, at most one line per category per second (the line says how
/// many were held back). A server points it at its own logger once, at start-up:
///
/// ```swift
/// LoopDiagnostics.handler = { diagnostic in logger.warning("\(diagnostic)") }
/// ```
///
/// The handler runs on the thread that noticed (for a stall, the loop's, right after the callback
/// returned), so it should be quick: hand the line over, do not write a file synchronously.
public enum LoopDiagnostics {
    /// What receives the reports.
    public typealias Handler = @Sendable (LoopDiagnostic) -> Void

    // `Locked`, not `Synchronization.Mutex`: ThreadSanitizer sees the ordering `Locked` provides.
    private static let current = Locked<Handler>(standardError)

    /// The handler now receiving reports; set it to route them elsewhere (``standardError`` by default).
    public static var handler: Handler {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// Hands `diagnostic` to the current handler.
    public static func report(_ diagnostic: LoopDiagnostic) {
        let handler = current.withLock { $0 }
        handler(diagnostic)
    }

    /// The default handler: one line on standard error per category per second at most.
    public static let standardError: Handler = { diagnostic in
        guard let heldBack = limiter.admit(diagnostic.category.name) else { return }
        let more = heldBack > 0 ? " (\(heldBack) more since the last line)" : ""
        let line = "\(diagnostic)\(more)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
    }

    private static let limiter = RateLimiter(intervalNanoseconds: 1_000_000_000)
}

/// Lets through at most one event per key and interval, counting the ones held back: for lines that would
/// otherwise flood a log (a loop stalling on every request, a server refusing every connection).
package final class RateLimiter: Sendable {
    private let intervalNanoseconds: UInt64
    /// Per key: when an event was last let through, and how many were held back since.
    private let state = Locked<[String: (last: UInt64, heldBack: Int)]>([:])

    /// A limiter letting through one event per key every `intervalNanoseconds`.
    package init(intervalNanoseconds: UInt64) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// `nil` if the event is held back; otherwise how many events with this key were held back since the
    /// last one let through.
    package func admit(_ key: String, now: UInt64 = Deadline.now().uptimeNanoseconds) -> Int? {
        state.withLock { state in
            var entry = state[key] ?? (0, 0)
            defer { state[key] = entry }
            // `now` is read before the lock: another thread may have stored a later one meanwhile.
            guard entry.last == 0 || (now > entry.last && now - entry.last >= intervalNanoseconds) else {
                entry.heldBack += 1
                return nil
            }
            let heldBack = entry.heldBack
            entry = (now, 0)
            return heldBack
        }
    }
}
