/// Checks the bytes an echo connection receives against the messages it sent, as they arrive.
///
/// TCP keeps no message boundaries: a reply may arrive split at any byte, several replies may arrive in one
/// read, and a read may end in the middle of a reply. The reader remembers which reply it is in and how far,
/// checks each byte against the ``Pattern`` (never against a copy of what was sent: the send buffer is rewritten
/// as soon as a message is on its way), and counts a reply once its last byte has matched. A value type with
/// no socket, so tests can feed it any split.
///
/// ```swift
/// var reader = EchoReplyReader(size: 64, phase: phase)
/// let before = reader.sequence
/// guard reader.read(bytes) else { /* mismatch */ }
/// // replies before ..< reader.sequence are complete
/// ```
struct EchoReplyReader {
    /// Bytes per message.
    let size: Int
    /// ``Pattern/shared``, copied here so the hot path does not go through its lazy initialiser every time.
    private let pattern = Pattern.shared
    /// The sequence number of the next reply to complete.
    private(set) var sequence: UInt64 = 0
    /// How many bytes of that reply have arrived and matched.
    private(set) var offset = 0
    /// Where that reply starts in the pattern.
    private var cursor: Pattern.Cursor

    init(size: Int, phase: UInt32) {
        precondition(size > 0, "echo messages have at least one byte")
        self.size = size
        cursor = Pattern.Cursor(size: size, phase: phase)
    }

    /// Checks `bytes`, the next bytes of the connection's stream, and moves past every reply they complete.
    /// Returns false at the first reply containing a byte that differs from what was sent; replies completed
    /// before it stay counted, and the reader is then positioned in the bad reply.
    @inline(__always)
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var left = bytes.count
        while left > 0 {
            let take = min(left, size - offset)
            let part = UnsafeRawBufferPointer(start: next, count: take)
            guard pattern.checkMessagePart(
                part, at: offset, size: size, sequence: sequence, from: cursor.start(in: pattern)) else {
                return false
            }
            next += take
            left -= take
            offset += take
            if offset == size {
                offset = 0
                sequence &+= 1
                cursor.advance()
            }
        }
        return true
    }
}
