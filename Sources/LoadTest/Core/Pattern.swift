import FoundationEssentials
import Glibc

/// The bytes every payload is cut from: a pseudo-random sequence with a prime period (as the C reference load
/// generator uses), so shifted, duplicated, reordered or foreign bytes do not match. Immutable after start-up
/// and shared by every loop.
///
/// An echo message of connection `c` with sequence number `s` is the connection's byte stream at offset
/// `s · size` (the stream of connection `c` is the pattern shifted by its phase), with the sequence number
/// written over its first 8 bytes (little endian; fewer if the message is shorter).
///
/// A struct around a pointer rather than a class: the echo hot path keeps a copy of it, and a copy of a
/// pointer costs nothing, where a class reference would be retained and released around each use.
struct Pattern: @unchecked Sendable {
    /// The period: a prime, so no message size lines up with it.
    static let period = 65_521
    /// The longest run that can be read from any offset.
    static let maxRun = 1 << 20

    /// `period + maxRun` bytes; never freed (the one instance, ``shared``, lives as long as the process).
    let bytes: UnsafeMutableRawPointer

    static let shared = Pattern()

    private init() {
        bytes = .allocate(byteCount: Self.period + Self.maxRun, alignment: 16)
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in 0..<Self.period {
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            bytes.storeBytes(of: UInt8(truncatingIfNeeded: x >> 24), toByteOffset: i, as: UInt8.self)
        }
        for i in Self.period..<(Self.period + Self.maxRun) {
            bytes.storeBytes(
                of: bytes.load(fromByteOffset: i - Self.period, as: UInt8.self), toByteOffset: i, as: UInt8.self)
        }
    }

    /// The pattern from stream offset `offset` of a stream with `phase`.
    @inline(__always)
    func at(_ offset: UInt64, phase: UInt32) -> UnsafeMutableRawPointer {
        bytes + Int((offset &+ UInt64(phase)) % UInt64(Self.period))
    }

    /// The phase of connection number `n`.
    static func phase(of n: Int) -> UInt32 {
        UInt32((UInt64(n) &* 7919) % UInt64(period))
    }

    /// Writes echo message `sequence` of a stream with `phase` into `buffer` (`size` bytes, at most `maxRun`).
    @inline(__always)
    func fillMessage(_ buffer: UnsafeMutableRawBufferPointer, sequence: UInt64, phase: UInt32) {
        fillMessage(buffer, sequence: sequence, from: at(sequence &* UInt64(buffer.count), phase: phase))
    }

    /// Writes echo message `sequence` into `buffer`, its bytes cut from the pattern at `source` (the message's
    /// ``Cursor/start``).
    @inline(__always)
    func fillMessage(_ buffer: UnsafeMutableRawBufferPointer, sequence: UInt64, from source: UnsafeMutableRawPointer) {
        let size = buffer.count
        let header = min(8, size)
        if header == 8 {
            buffer.baseAddress!.storeBytes(of: sequence.littleEndian, as: UInt64.self)
        } else {
            var seq = sequence.littleEndian
            withUnsafeBytes(of: &seq) { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: header) }
        }
        if size > header {
            (buffer.baseAddress! + header).copyMemory(from: source + header, byteCount: size - header)
        }
    }

    /// Whether `message` is echo message `sequence` of a stream with `phase`.
    @inline(__always)
    func checkMessage(_ message: UnsafeRawBufferPointer, sequence: UInt64, phase: UInt32) -> Bool {
        let size = message.count
        guard size > 0, let base = message.baseAddress else { return false }
        let header = min(8, size)
        var seq = sequence.littleEndian
        let headerOK = withUnsafeBytes(of: &seq) { memcmp(base, $0.baseAddress!, header) == 0 }
        guard headerOK else { return false }
        if size == header { return true }
        let source = at(sequence &* UInt64(size), phase: phase)
        return memcmp(base + header, source + header, size - header) == 0
    }

    /// Whether `part` is bytes `offset ..< offset + part.count` of echo message `sequence` (`size` bytes), whose
    /// bytes start in the pattern at `source` (the message's ``Cursor/start``): the check for replies that
    /// arrive split at any byte. `part` must not run past the message's end.
    @inline(__always)
    func checkMessagePart(
        _ part: UnsafeRawBufferPointer, at offset: Int, size: Int, sequence: UInt64,
        from source: UnsafeMutableRawPointer
    ) -> Bool {
        guard let base = part.baseAddress else { return true }
        let header = min(8, size)
        var checked = 0
        if offset == 0 && header == 8 && part.count >= 8 {
            // The usual case, a reply from its start: one 8-byte compare instead of a memcmp call.
            guard base.loadUnaligned(as: UInt64.self) == sequence.littleEndian else { return false }
            checked = 8
        } else if offset < header {
            checked = min(header - offset, part.count)
            var seq = sequence.littleEndian
            let headerOK = withUnsafeBytes(of: &seq) { memcmp(base, $0.baseAddress! + offset, checked) == 0 }
            guard headerOK else { return false }
        }
        guard checked < part.count else { return true }
        return memcmp(base + checked, source + offset + checked, part.count - checked) == 0
    }

    /// Where each message of a stream starts in the pattern, kept up message by message: one add and one
    /// compare per message, where ``at(_:phase:)`` divides by the period (16 instructions in callgrind, paid
    /// twice per echo request: once to fill the message, once to check its reply).
    struct Cursor {
        /// The offset of the current message in the pattern: `(sequence · size + phase) mod period`.
        private(set) var offset: Int
        /// How far the next message starts from this one, modulo the period.
        private let step: Int

        /// At message 0 of a stream with `phase` whose messages are `size` bytes.
        init(size: Int, phase: UInt32) {
            offset = Int(phase) % Pattern.period
            step = size % Pattern.period
        }

        /// Moves to the next message.
        @inline(__always)
        mutating func advance() {
            offset += step
            if offset >= Pattern.period { offset -= Pattern.period }
        }

        /// The current message's bytes in `pattern`.
        @inline(__always)
        func start(in pattern: Pattern) -> UnsafeMutableRawPointer { pattern.bytes + offset }
    }

    /// Whether `bytes` are the stream with `phase` at `offset` (bulk streaming, no headers).
    @inline(__always)
    func checkStream(_ bytes: UnsafeRawBufferPointer, offset: UInt64, phase: UInt32) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var done = 0
        while done < bytes.count {
            let run = min(bytes.count - done, Self.maxRun)
            if memcmp(base + done, at(offset &+ UInt64(done), phase: phase), run) != 0 { return false }
            done += run
        }
        return true
    }

    /// A `Data` viewing `count` pattern bytes of the stream with `phase` at `offset`, without copying.
    func streamChunk(offset: UInt64, phase: UInt32, count: Int) -> Data {
        precondition(count <= Self.maxRun)
        return Data(bytesNoCopy: at(offset, phase: phase), count: count, deallocator: .none)
    }
}
