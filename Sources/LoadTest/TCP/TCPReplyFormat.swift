/// How tcp mode finds where a reply ends in the bytes received: at a delimiter (`--reply-until`), after a
/// fixed length (`--reply-length`), after the length a binary prefix gives (`--reply-length-prefix`), or where
/// a Redis RESP2 value ends (`--reply resp`). Pure functions of the bytes so far, testable with any split.
package enum TCPReplyFormat: Sendable, Equatable {
    /// Up to and including the first occurrence of these bytes.
    case until([UInt8])
    /// Exactly this many bytes.
    case length(Int)
    /// A big- or little-endian length first, then that many bytes; `inclusive`: the length counts the prefix's
    /// own bytes too.
    case lengthPrefix(LengthPrefix, inclusive: Bool)
    /// One RESP2 value: simple string, error (an `error_reply`), integer, bulk string, array (nested).
    case resp

    /// The width and byte order of a length prefix.
    package enum LengthPrefix: String, Sendable, CaseIterable {
        case u8, u16be, u32be, u32le

        /// Its bytes.
        var size: Int {
            switch self {
            case .u8: 1
            case .u16be: 2
            case .u32be, .u32le: 4
            }
        }

        /// The length it gives at the start of `b` (which holds at least ``size`` bytes).
        func value(_ b: UnsafeRawBufferPointer) -> Int {
            switch self {
            case .u8: Int(b[0])
            case .u16be: Int(b[0]) << 8 | Int(b[1])
            case .u32be: Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
            case .u32le: Int(b[3]) << 24 | Int(b[2]) << 16 | Int(b[1]) << 8 | Int(b[0])
            }
        }
    }

    /// What the bytes received so far (`input`, from the start of the reply) make.
    package func frame(_ input: UnsafeRawBufferPointer) -> ReplyFraming {
        switch self {
        case .until(let delimiter):
            guard let at = input.firstIndex(of: delimiter) else { return .needMore }
            return .reply(length: at + delimiter.count)
        case .length(let length):
            return input.count >= length ? .reply(length: length) : .needMore
        case .lengthPrefix(let prefix, let inclusive):
            guard input.count >= prefix.size else { return .needMore }
            let value = prefix.value(input)
            let total = inclusive ? value : value + prefix.size
            guard total > (inclusive ? prefix.size - 1 : 0) else {
                return .malformed("a length prefix of \(value) (the prefix counts itself: --reply-prefix-inclusive)")
            }
            return input.count >= total ? .reply(length: total) : .needMore
        case .resp:
            switch RESP.value(input, at: 0, depth: 0) {
            case .end(let end):
                guard input[0] == UInt8(ascii: "-") else { return .reply(length: end) }
                // Printed in the report: escaped, so that a server cannot send escape sequences to the terminal.
                let text = ServerText.escaped(UnsafeRawBufferPointer(rebasing: input[1..<end - 2]))
                return .errorReply(length: end, text)
            case .needMore: return .needMore
            case .malformed(let why): return .malformed(why)
            }
        }
    }
}

/// Where a Redis RESP2 value ends (<https://redis.io/docs/latest/develop/reference/protocol-spec/>).
enum RESP {
    /// Arrays nest at most this deep (deeper is malformed, not a stack overflow).
    static let maxDepth = 64

    enum Step: Equatable {
        /// The value ends before this index.
        case end(Int)
        case needMore
        case malformed(String)
    }

    /// The value starting at `at`.
    static func value(_ b: UnsafeRawBufferPointer, at: Int, depth: Int) -> Step {
        guard at < b.count else { return .needMore }
        guard depth <= maxDepth else { return .malformed("RESP arrays nested deeper than \(maxDepth)") }
        let type = b[at]
        guard let lineEnd = lineEnd(b, from: at + 1) else {
            // A line longer than any legitimate header is left to --reply-max.
            return .needMore
        }
        let line = UnsafeRawBufferPointer(rebasing: b[(at + 1)..<lineEnd])
        let afterLine = lineEnd + 2
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            return .end(afterLine)
        case UInt8(ascii: ":"):
            return integer(line) != nil ? .end(afterLine) : .malformed("a RESP integer that is not a number")
        case UInt8(ascii: "$"):
            guard let n = integer(line), n >= -1, n <= 512 << 20 else {
                return .malformed("a RESP bulk string length that is not -1 to 512 MiB")
            }
            if n == -1 { return .end(afterLine) }
            let end = afterLine + n + 2
            guard b.count >= end else { return .needMore }
            guard b[end - 2] == 13 && b[end - 1] == 10 else {
                return .malformed("a RESP bulk string not followed by CRLF")
            }
            return .end(end)
        case UInt8(ascii: "*"):
            guard let n = integer(line), n >= -1 else {
                return .malformed("a RESP array length that is not -1 or more")
            }
            var next = afterLine
            var left = n
            while left > 0 {
                switch value(b, at: next, depth: depth + 1) {
                case .end(let end): next = end
                case let other: return other
                }
                left -= 1
            }
            return .end(next)
        default:
            return .malformed("not a RESP2 value: it starts with byte \(type)")
        }
    }

    /// Where the first CR LF at or after `from` starts: a byte loop, as RESP lines (a type byte, a number or a
    /// short status) are a few bytes long and a bulk string's payload is skipped by its length, not searched.
    @inline(__always)
    static func lineEnd(_ b: UnsafeRawBufferPointer, from: Int) -> Int? {
        var i = from
        while i + 1 < b.count {
            if b[i] == 13 && b[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// A decimal integer (optional minus, 1 to 18 digits); nil otherwise.
    static func integer(_ line: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        var negative = false
        if line.first == UInt8(ascii: "-") {
            negative = true
            i = 1
        }
        guard line.count > i, line.count - i <= 18 else { return nil }
        var value = 0
        while i < line.count {
            let digit = Int(line[i]) - 48
            guard digit >= 0 && digit <= 9 else { return nil }
            value = value * 10 + digit
            i += 1
        }
        return negative ? -value : value
    }
}
