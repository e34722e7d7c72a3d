import HTTPHello

/// http-hello's request body decoder, `HTTPBodyDecoder.consume(_:)`, a state machine fed as bytes arrive.
///
/// Input: byte 0 picks the framing (even: chunked; odd: a Content-Length of bytes 1-2), bytes 3-4 a split
/// point; the rest is the body. Properties: one feed, two feeds split anywhere, and one byte at a time all
/// consume the same bytes and end the same way; a decoder that is done consumes nothing more.
enum HTTPBodyTarget {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let chunked = input.byte() % 2 == 0
        let length = input.uint16()
        let split = input.uint16()
        let body: HTTPRequestHead.Body = chunked ? .chunked : length == 0 ? .none : .length(length)
        let bytes = input.rest

        var once = HTTPBodyDecoder(body)
        let whole = once.consume(bytes.typed)
        try check(whole.used <= bytes.count, "used \(whole.used) of \(bytes.count) bytes")
        if whole.outcome == .needMore {
            try check(whole.used == bytes.count, "needs more after using \(whole.used) of \(bytes.count) bytes")
        }
        if whole.outcome == .done {
            let after = once.consume(bytes.typed)
            try check(after.used == 0 && after.outcome == .done, "a finished body went on to \(after)")
        }

        let fed = feed(body, pieces(bytes, at: [split % (bytes.count + 1)]))
        try check(fed.used == whole.used && fed.outcome == whole.outcome,
                  "split at \(split % (bytes.count + 1)): \(fed), one feed: \(whole)")
        let bytewise = feed(body, (0..<bytes.count).map { UnsafeRawBufferPointer(rebasing: bytes[$0..<$0 + 1]) })
        try check(bytewise.used == whole.used && bytewise.outcome == whole.outcome,
                  "byte at a time: \(bytewise), one feed: \(whole)")
    }

    /// Feeds `pieces` in turn, as http-hello does, until the body ends or fails; the bytes used in all.
    static func feed(_ body: HTTPRequestHead.Body, _ pieces: [UnsafeRawBufferPointer]) -> (used: Int, outcome: HTTPBodyDecoder.Outcome) {
        var decoder = HTTPBodyDecoder(body)
        var used = 0
        var outcome = HTTPBodyDecoder.Outcome.needMore
        if pieces.allSatisfy(\.isEmpty) { return decoder.consume(UnsafeBufferPointer(start: nil, count: 0)) }
        for piece in pieces where !piece.isEmpty {
            let step = decoder.consume(piece.typed)
            used += step.used
            outcome = step.outcome
            if outcome != .needMore { break }
        }
        return (used, outcome)
    }
}
