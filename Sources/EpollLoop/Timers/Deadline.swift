import Glibc

/// A point on the monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds.
///
/// Timers are set against this clock so that changes to the wall clock never move them.
///
/// ```swift
/// let deadline = Deadline.now() + .milliseconds(250)
/// ```
public struct Deadline: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary, fixed point (the kernel's monotonic clock origin).
    public var uptimeNanoseconds: UInt64

    /// A deadline at `uptimeNanoseconds` on the monotonic clock.
    public init(uptimeNanoseconds: UInt64) { self.uptimeNanoseconds = uptimeNanoseconds }

    /// The current time (`clock_gettime(CLOCK_MONOTONIC)`; a vDSO call, no syscall).
    @inline(__always)
    public static func now() -> Deadline {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Deadline(uptimeNanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// A deadline that is never reached.
    public static let distantFuture = Deadline(uptimeNanoseconds: .max)

    /// The deadline `duration` after `lhs`; negative durations move it earlier, saturating at 0 and `.max`.
    public static func + (lhs: Deadline, rhs: Duration) -> Deadline {
        let nanos = rhs.nanoseconds
        if nanos >= 0 {
            let (sum, overflow) = lhs.uptimeNanoseconds.addingReportingOverflow(UInt64(nanos))
            return Deadline(uptimeNanoseconds: overflow ? .max : sum)
        }
        let magnitude = nanos.magnitude
        return Deadline(uptimeNanoseconds: lhs.uptimeNanoseconds > magnitude ? lhs.uptimeNanoseconds - magnitude : 0)
    }

    /// Orders deadlines by time.
    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.uptimeNanoseconds < rhs.uptimeNanoseconds }

    /// The time in nanoseconds.
    public var description: String { "Deadline(\(uptimeNanoseconds) ns)" }
}

extension Duration {
    /// The duration in whole nanoseconds (toward zero), saturating at `Int64`'s range.
    ///
    /// One 128-bit division of `attoseconds`; `components` would cost two and showed in timer profiles.
    var nanoseconds: Int64 {
        Int64(clamping: attoseconds / 1_000_000_000)
    }
}
