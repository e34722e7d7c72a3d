import Glibc

/// What an HTTP response must be to count as a success: its status (`--expect-status 200,204`; by default
/// any 2xx), and, when asked, its body (`--expect-body SUBSTRING`, `--expect-length BYTES`). A status that is
/// not expected is an `http_status` error; a body that fails a check is a `check` error. Either way the
/// response still counts as a request (with its latency), as a non-2xx one always has.
///
/// Checked on the connection's loop for every response, so the checks are plain values: a bit per status
/// code, the substring's bytes, no allocation.
package struct ResponseChecks: Sendable, Equatable {
    /// One bit per status code 0...1023.
    private var statusBits = [UInt64](repeating: 0, count: 16)
    /// No `--expect-status`: any 2xx, checked by two comparisons as before there were checks.
    private var any2xx = true
    /// The statuses as given (`200,204`), nil for the default (2xx).
    package private(set) var statusText: String?
    /// Substrings the body must contain: one for every reply, or several in step with the requests they answer
    /// (tcp mode: the i-th for the replies to the i-th `--send`).
    package var bodies: [[UInt8]] = []
    /// A substring the body must contain (the first of ``bodies``).
    package var body: [UInt8]? {
        get { bodies.first }
        set { bodies = newValue.map { [$0] } ?? [] }
    }
    /// The body length a response must have, bytes.
    package var length: Int?

    /// Any 2xx status, no body check.
    package init() {
        for status in 200...299 { set(status) }
    }

    private mutating func set(_ status: Int) { statusBits[status >> 6] |= 1 << UInt64(status & 63) }

    /// Whether `status` is expected.
    @inline(__always)
    func accepts(status: Int) -> Bool {
        if any2xx { return status >= 200 && status <= 299 }
        guard status >= 0 && status < 1024 else { return false }
        return statusBits.withUnsafeBufferPointer { $0[status >> 6] & (1 << UInt64(status & 63)) != 0 }
    }

    /// Whether the body must be looked at.
    var inspectsBody: Bool { body != nil || length != nil }

    /// Whether a body passes the checks.
    func passes(body bytes: UnsafeRawBufferPointer) -> Bool {
        passes(body: bytes, rotation: 0)
    }

    /// Whether the body of the reply to request `rotation` (0 up) passes the checks.
    func passes(body bytes: UnsafeRawBufferPointer, rotation: UInt64) -> Bool {
        if let length, bytes.count != length { return false }
        if !bodies.isEmpty { return Self.contains(bytes, bodies[Int(rotation % UInt64(bodies.count))]) }
        return true
    }

    /// A body that arrives in pieces (a chunked one), checked as it comes: it keeps the bytes counted and, for
    /// `--expect-body`, only the last `needle.count - 1` bytes, so that a match across two pieces is seen,
    /// never the body itself (a server may stream one without end).
    struct BodyScan {
        /// Body bytes so far (chunk data, without the chunked framing).
        private(set) var bytes = 0
        private var found = false
        private var tail: [UInt8] = []

        /// Takes the next piece of the body.
        mutating func feed(_ piece: UnsafeRawBufferPointer, needle: [UInt8]?) {
            bytes += piece.count
            guard let needle, !found, !needle.isEmpty else { return }
            let keep = needle.count - 1
            // Across the seam: the kept tail followed by the start of this piece.
            var seam = tail
            seam.append(contentsOf: piece.prefix(keep))
            if seam.withUnsafeBytes({ ResponseChecks.contains($0, needle) }) || ResponseChecks.contains(piece, needle) {
                found = true
                tail = []
                return
            }
            let end = Array(piece.suffix(keep))
            tail = end.count == keep ? end : Array((tail + end).suffix(keep))
        }

        /// The bytes kept between pieces: at most the needle's length less one.
        var keptBytes: Int { tail.count }

        /// Whether the whole body passes `checks` (call once it has all been fed).
        func passes(_ checks: ResponseChecks) -> Bool {
            if let length = checks.length, bytes != length { return false }
            if let needle = checks.body, !needle.isEmpty { return found }
            return true
        }
    }

    /// Why a body of `count` bytes failed (for the first error's text); `rotation` as for ``passes(body:rotation:)``.
    func failure(bodyBytes count: Int, path: String, rotation: UInt64 = 0) -> String {
        if let length, count != length {
            return "response to \(path): body of \(count) bytes, expected \(length) (--expect-length)"
        }
        let needle = bodies.isEmpty ? [] : bodies[Int(rotation % UInt64(bodies.count))]
        return
            "response to \(path): body (\(count) bytes) does not contain '\(String(decoding: needle, as: UTF8.self))' "
            + "(--expect-body)"
    }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        needle.isEmpty || haystack.firstIndex(of: needle) != nil
    }

    /// Parses `--expect-status`: codes (`200`), ranges (`200-299`) and classes (`2xx`), comma-separated.
    mutating func expectStatuses(_ text: String) throws(ArgumentError) {
        let problem = ArgumentError("--expect-status takes status codes, ranges or classes separated by commas "
            + "(200,204 or 200-299 or 2xx,301), not '\(text)'")
        var bits = [UInt64](repeating: 0, count: 16)
        swap(&bits, &statusBits)
        for part in text.split(separator: ",", omittingEmptySubsequences: false).map({ String($0).trimmed.lowercased() }
        ) {
            var range: ClosedRange<Int>
            if part.count == 3, part.hasSuffix("xx"), let digit = Int(part.prefix(1)), (1...5).contains(digit) {
                range = digit * 100...digit * 100 + 99
            } else if let dash = part.firstIndex(of: "-"), let low = Int(part[..<dash]),
                let high = Int(part[part.index(after: dash)...]), low <= high
            {
                range = low...high
            } else if let code = Int(part) {
                range = code...code
            } else {
                throw problem
            }
            guard range.lowerBound >= 100 && range.upperBound <= 999 else { throw problem }
            for status in range { set(status) }
        }
        statusText = text
        any2xx = false
    }
}

extension UnsafeRawBufferPointer {
    /// Where `needle` first occurs at or after `from` (`memchr` for its first byte, then `memcmp`); nil if it
    /// does not, or if it is empty.
    func firstIndex(of needle: [UInt8], from: Int = 0) -> Int? {
        guard !needle.isEmpty, from >= 0, count - from >= needle.count, let base = baseAddress else { return nil }
        return needle.withUnsafeBytes { n in
            let first = Int32(n[0])
            let last = count - n.count
            var i = from
            while i <= last {
                guard let hit = memchr(base + i, first, last - i + 1) else { return nil }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if n.count == 1 || memcmp(base + at + 1, n.baseAddress! + 1, n.count - 1) == 0 { return at }
                i = at + 1
            }
            return nil
        }
    }
}
