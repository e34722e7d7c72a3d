import Glibc

/// The send time a receive-only connection reads from a server's message to time it: the payload starts with
/// the Unix time it was sent, in ASCII decimal digits, 13 of them for milliseconds (JavaScript's
/// `Date.now()`), 16 for microseconds or 19 for nanoseconds (Python's `time.time_ns()`), followed by the end
/// of the message or any byte that is not a digit (`1795521600123456 {"price": 12}`). The latency is the
/// client's wall clock at arrival less that time, so the two clocks must agree (one machine, or both
/// synchronised); a time in the future counts as 0.
extension WebSocketSettings {
    /// The send time in nanoseconds since the Unix epoch, or nil when the payload does not start with one.
    static func sendTime(_ payload: UnsafeRawBufferPointer) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in payload {
            guard byte >= 0x30 && byte <= 0x39 else { break }
            digits += 1
            guard digits <= 19 else { return nil }
            value = value &* 10 &+ UInt64(byte - 0x30)
        }
        switch digits {
        case 13: return value &* 1_000_000
        case 16: return value &* 1_000
        case 19: return value
        default: return nil
        }
    }

    /// The wall clock now, nanoseconds since the Unix epoch.
    static func wallClockNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
