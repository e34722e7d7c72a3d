import LoadTest

/// loadtest tcp's reply framing, `TCPReplyFormat.frame(_:)` (`--reply resp`, `--reply-length-prefix`,
/// `--reply-until`, `--reply-length`), and the loop FramedConnection runs it in: the bytes not framed yet are
/// kept between reads, up to `--reply-max`. FramedConnection is a socket delegate; its loop is replayed here
/// with the same rules.
///
/// Input: byte 0 picks the format, byte 1 its parameter (the delimiter's length, the fixed length), byte 2
/// `--reply-max`, bytes 3-8 three split points; then the delimiter's bytes (for `until`); the rest is what the
/// server sent. Properties:
/// - a framing decided on a prefix stands: the first `length` bytes of a reply frame to the same reply, one
///   byte fewer to "need more", and whatever the bytes at a split point make, if not "need more", is what the
///   whole input makes;
/// - a reply is 1 byte at least and no longer than what was given;
/// - the connection's loop keeps at most `--reply-max` bytes unframed, and gives the same replies and the same
///   failure whether the bytes come at once, in four reads, or (short inputs) one byte at a time.
enum ReplyFramingTarget {
    enum Failure: Equatable {
        case replyTooLarge
        case badResponse
    }

    struct Outcome: Equatable {
        var replies: [ReplyFraming] = []
        var failure: Failure?

        /// The same replies, and a failure in both or in neither. Which failure may differ: bytes that arrive
        /// in pieces can pass `--reply-max` while still "need more" (reply_too_large) before the byte that
        /// makes them malformed (bad_response) has arrived.
        func agrees(with other: Outcome) -> Bool {
            replies == other.replies && (failure == nil) == (other.failure == nil)
        }
    }

    static let replyMaxes = [1, 16, 64, 256, 4096, 1 << 20]

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let selector = Int(input.byte())
        let parameter = Int(input.byte())
        let replyMax = replyMaxes[Int(input.byte()) % replyMaxes.count]
        let seeds = [input.uint16(), input.uint16(), input.uint16()]
        let format: TCPReplyFormat
        switch selector % 7 {
        case 0: format = .resp
        case 1, 2, 3, 4:
            let prefix = TCPReplyFormat.LengthPrefix.allCases[selector % 7 - 1]
            format = .lengthPrefix(prefix, inclusive: selector & 0x80 != 0)
        case 5: format = .until((0..<(1 + parameter % 4)).map { _ in input.byte() })
        default: format = .length(1 + parameter)
        }
        let bytes = input.rest

        let whole = format.frame(bytes)
        switch whole {
        case .reply(let length), .errorReply(let length, _):
            try check(length >= 1 && length <= bytes.count, "\(format): a reply of \(length) bytes in \(bytes.count)")
            let exact = format.frame(bytes.bytes(upTo: length))
            try check(exact == whole, "\(format): the reply's own bytes frame to \(exact), the whole input to \(whole)")
            let short = format.frame(bytes.bytes(upTo: length - 1))
            try check(short == .needMore, "\(format): one byte short of a reply frames to \(short)")
        case .needMore, .malformed:
            break
        }
        let cut = seeds[0] % (bytes.count + 1)
        let early = format.frame(bytes.bytes(upTo: cut))
        if early != .needMore {
            try check(early == whole, "\(format): the first \(cut) bytes frame to \(early), the whole input to \(whole)")
        }

        let once = try stream([bytes], format, replyMax: replyMax)
        let points = splitPoints(seeds, length: bytes.count)
        let split = try stream(pieces(bytes, at: points), format, replyMax: replyMax)
        try check(split.agrees(with: once), "\(format): split at \(points): \(split), at once: \(once)")
        if bytes.count <= 512 {
            let bytewise = try stream((0..<bytes.count).map { bytes.bytes(from: $0).bytes(upTo: 1) }, format, replyMax: replyMax)
            try check(bytewise.agrees(with: once), "\(format): byte at a time: \(bytewise), at once: \(once)")
        }
    }

    /// FramedConnection's loop over `reads` (every request in flight): frames what it can, keeps the rest.
    static func stream(
        _ reads: [UnsafeRawBufferPointer], _ format: TCPReplyFormat, replyMax: Int
    ) throws(PropertyFailure) -> Outcome {
        var outcome = Outcome()
        var kept: [UInt8] = []
        for read in reads {
            kept.append(contentsOf: read)
            var used = 0
            framing: while true {
                let framing = kept.withUnsafeBytes { format.frame($0.bytes(from: used)) }
                let available = kept.count - used
                switch framing {
                case .needMore:
                    if available > replyMax { outcome.failure = .replyTooLarge }
                    break framing
                case .malformed:
                    outcome.failure = .badResponse
                    break framing
                case .reply(let length), .errorReply(let length, _):
                    guard length >= 1, length <= available else {
                        outcome.failure = .badResponse
                        break framing
                    }
                    if length > replyMax {
                        outcome.failure = .replyTooLarge
                        break framing
                    }
                    outcome.replies.append(framing)
                    used += length
                }
            }
            if outcome.failure != nil { return outcome }
            kept.removeFirst(used)
            try check(kept.count <= replyMax, "\(kept.count) bytes kept unframed, --reply-max \(replyMax)")
        }
        return outcome
    }
}
