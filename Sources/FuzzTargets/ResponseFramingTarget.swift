import HTTPHello
import LoadTest

/// loadtest's response framing, `HTTPResponseReader` (what http mode reads its responses with, over the loop's
/// bytes or TLS's): the head to CRLF CRLF within `--max-head`, then the body by its length, or chunk by chunk (a
/// size line within 8 KiB, the chunk and its CRLF, trailer lines to the empty one).
///
/// Input: the bytes a server sends, responses one after another. Properties:
/// - the reader takes the same steps whether the bytes come whole, cut in two at a point the input chooses, or
///   a byte at a time (a read never changes what a response is): the same responses, at the same places, and
///   the same kind of failure if one ends them;
/// - what it holds between reads stays within its limits;
/// - where http-hello's request body decoder, a second implementation of chunked framing, reads the same
///   chunked body, the two never disagree on where it ends (one done while the other wants more, or both done
///   at different places).
enum ResponseFramingTarget {
    static let maxHead = 4 * 1024

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        let bytes = Array(data)
        var limits = HTTPResponseLimits()
        limits.maxHead = maxHead
        let whole = try steps(bytes, cuts: [], limits: limits)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
        let split = try steps(bytes, cuts: [cut], limits: limits)
        try check(split == whole, "cut at \(cut): \(split), whole: \(whole)")
        if bytes.count <= 512 {
            let byByte = try steps(bytes, cuts: Array(0...bytes.count), limits: limits)
            try check(byByte == whole, "a byte at a time: \(byByte), whole: \(whole)")
        }

        // The first response's chunked body, framed by http-hello's decoder as well.
        guard let headEnd = MetricsRequestTarget.firstRange(of: MetricsRequestTarget.headEnd, in: bytes),
              let head = bytes.withUnsafeBytes({ HTTPResponseHead.parse($0.bytes(upTo: headEnd)) }),
              head.hasChunkedBody, let first = whole.first else { return }
        var decoder = HTTPBodyDecoder(.chunked)
        let (used, outcome) = bytes.withUnsafeBufferPointer { decoder.consume(UnsafeBufferPointer(rebasing: $0[headEnd...])) }
        switch (first.outcome, outcome) {
        case (.response, .done):
            try check(first.end == headEnd + used,
                      "loadtest ends the chunked body at \(first.end - headEnd), http-hello at \(used)")
        case (.response, .needMore):
            throw PropertyFailure("loadtest ends the chunked body at \(first.end - headEnd), http-hello wants more")
        case (.needMore, .done):
            throw PropertyFailure("http-hello ends the chunked body at \(used), loadtest wants more")
        default:
            break
        }
    }

    /// One step and the offset in the bytes where it was taken.
    struct Taken: Equatable, CustomStringConvertible {
        enum Outcome: Equatable { case response, needMore, failed }
        var outcome: Outcome
        var step: HTTPResponseReader.Step
        var end: Int
        var description: String { "\(step) at \(end)" }

        static func == (a: Taken, b: Taken) -> Bool {
            guard a.outcome == b.outcome else { return false }
            guard case .failed(let kindA, _) = a.step, case .failed(let kindB, _) = b.step else {
                return a.step == b.step && a.end == b.end
            }
            return kindA == kindB
        }
    }

    /// The reader's steps over `bytes` fed in the pieces `cuts` makes, to the first failure or the end (then
    /// `needMore` if a response was under way).
    static func steps(_ bytes: [UInt8], cuts: [Int], limits: HTTPResponseLimits) throws(PropertyFailure) -> [Taken] {
        var reader = HTTPResponseReader(limits: limits)
        var taken: [Taken] = []
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            let failed = bytes[start..<end].withUnsafeBytes { piece -> Bool in
                var input = piece
                while !input.isEmpty {
                    let step = reader.next(&input)
                    let at = end - input.count
                    switch step {
                    case .response: taken.append(Taken(outcome: .response, step: step, end: at))
                    case .failed:
                        taken.append(Taken(outcome: .failed, step: step, end: at))
                        return true
                    case .needMore: break
                    }
                }
                return false
            }
            if failed { return taken }
            try check(reader.heldBytes <= max(maxHead, 8 * 1024) + 512, "holding \(reader.heldBytes) bytes")
            start = end
        }
        if !reader.isBetweenResponses {
            taken.append(Taken(outcome: .needMore, step: .needMore, end: bytes.count))
        }
        return taken
    }
}
