import Glibc

/// HTTP/1.1 responses framed from the bytes as they arrive, in whatever pieces: the head to CRLF CRLF within
/// `--max-head`, then the body by its `Content-Length` or, with `Transfer-Encoding: chunked`, chunk by chunk
/// (a size line within ``HTTPChunkLine/maxLineLength``, the chunk, its CRLF), then the trailer lines to the
/// empty one, all of them within `--max-head`.
///
/// The bytes are read where they lie (the loop's scratch buffer): a head, size line or trailer line that a read
/// cuts in two is the only thing copied, and it is bounded by its limit. A body is never held: it is counted,
/// and looked at only when `--expect-body` or `--expect-length` ask (a body that arrives whole is checked in
/// place, one in pieces by ``ResponseChecks/BodyScan``). So what a server sends costs memory bounded by the
/// limits, whatever it sends.
///
/// One state machine (``Phase``) for every transport: ``HTTPConnection`` feeds it the loop's bytes for
/// `http://` and the TLS layer's for `https://`.
package struct HTTPResponseReader {
    /// What ``next(_:)`` found.
    package enum Step: Equatable {
        /// A whole response: its head, the bytes of the head and of the body (a chunked body counts its
        /// framing and trailers), and whether the body passes the checks.
        case response(HTTPResponseHead, headBytes: Int, bodyBytes: Int, bodyPasses: Bool)
        /// Every byte given was taken; the response goes on in the next ones.
        case needMore
        /// The bytes are not a response loadtest can use (a limit passed, or malformed): the connection ends.
        case failed(ErrorKind, String)
    }

    /// Where in a response the next byte belongs.
    enum Phase: Equatable {
        case head
        /// A `Content-Length` body: ``bodyLeft`` bytes to come.
        case body
        /// A chunk's size line.
        case sizeLine
        /// A chunk's bytes: ``bodyLeft`` to come.
        case chunkData
        /// The CRLF after a chunk: ``crlfSeen`` of its two bytes have come.
        case chunkEnd
        /// The trailer lines after the last chunk, to the empty line.
        case trailers
    }

    private static let headEnd: [UInt8] = [13, 10, 13, 10]

    private let maxHead: Int
    private let maxBody: Int
    private let checks: ResponseChecks
    /// Whether bodies are looked at (`--expect-body`, `--expect-length`); otherwise only counted.
    private let inspectsBody: Bool
    /// What `--expect-body` looks for, when bodies are looked at.
    private let needle: [UInt8]?
    /// CR LF CR LF and CR LF, held here so the hot path reads no global.
    private let headEnd = HTTPResponseReader.headEnd
    private let lineEnd: [UInt8] = [13, 10]

    private var phase = Phase.head
    /// A head or line that a read cut in two: its first part, at most its limit.
    private var carry: [UInt8] = []
    /// The response being read, once its head is in.
    private var head = HTTPResponseHead(status: 0, contentLength: nil, chunked: false, closes: false)
    private var headBytes = 0
    /// The body bytes so far (chunked: with the framing and trailers).
    private var bodyBytes = 0
    /// Of a `Content-Length` body, or of the current chunk.
    private var bodyLeft = 0
    /// The chunks' own bytes so far, held to `--max-body`.
    private var chunkBytes = 0
    private var crlfSeen = 0
    private var trailerBytes = 0
    /// A body that came in pieces, or chunked, counted and checked as it arrives.
    private var scan = ResponseChecks.BodyScan()
    /// The body came whole in one piece and passed (or failed) the checks in place.
    private var wholeBodyPasses: Bool?
    /// The last head parsed, CR LF CR LF included (when at most ``remembered`` bytes), and what it said. A server
    /// answering the same request sends the same head (until its Date changes), and bytes that begin with
    /// exactly these end their head where this one ends and parse to the same fields: one `memcmp` instead of a
    /// walk over every line.
    private var lastHead: [UInt8] = []
    private var lastParsed = HTTPResponseHead(status: 0, contentLength: nil, chunked: false, closes: false)
    private static let remembered = 512

    /// A reader holding responses to `limits` and judging their bodies by `checks`.
    package init(limits: HTTPResponseLimits, checks: ResponseChecks = ResponseChecks()) {
        maxHead = limits.maxHead
        maxBody = limits.maxBody
        self.checks = checks
        inspectsBody = checks.inspectsBody
        needle = checks.inspectsBody ? checks.body : nil
    }

    /// Whether no byte of a response has arrived since the last one completed (a byte now starts a response).
    package var isBetweenResponses: Bool { phase == .head && carry.isEmpty }

    /// The bytes held between reads: a head or line cut in two, and the remembered head. Bounded by the limits
    /// whatever the server sends (`--max-head`, ``HTTPChunkLine/maxLineLength``, and 512).
    package var heldBytes: Int { carry.count + lastHead.count }

    /// Takes bytes from the front of `input` up to the end of the next response (returned), or all of them
    /// (``Step/needMore``). After ``Step/failed(_:_:)`` the reader must not be used again.
    package mutating func next(_ input: inout UnsafeRawBufferPointer) -> Step {
        while !input.isEmpty {
            let step: Step?
            switch phase {
            case .head: step = readHead(&input)
            case .body: step = readBody(&input)
            case .sizeLine: step = readSizeLine(&input)
            case .chunkData: step = readChunkData(&input)
            case .chunkEnd: step = readChunkEnd(&input)
            case .trailers: step = readTrailer(&input)
            }
            if let step { return step }
        }
        return .needMore
    }

    // MARK: Head

    private mutating func readHead(_ input: inout UnsafeRawBufferPointer) -> Step? {
        if carry.isEmpty {
            // The usual case: the whole head in this read, the same as the last one, or found and parsed where it
            // lies in one pass.
            let known = lastHead.count
            if known > 0 && input.count >= known
                && lastHead.withUnsafeBytes({ memcmp(input.baseAddress!, $0.baseAddress!, known) }) == 0 {
                input = UnsafeRawBufferPointer(rebasing: input[known...])
                return headArrived(lastParsed, length: known)
            }
            let window = UnsafeRawBufferPointer(rebasing: input[..<min(input.count, maxHead)])
            switch HTTPResponseHead.scan(window) {
            case .head(let parsed, let length):
                if length <= Self.remembered {
                    lastHead.removeAll(keepingCapacity: true)
                    lastHead.append(contentsOf: UnsafeRawBufferPointer(rebasing: window[..<length]))
                    lastParsed = parsed
                }
                input = UnsafeRawBufferPointer(rebasing: input[length...])
                return headArrived(parsed, length: length)
            case .malformed:
                // Judged once the whole head is in, as when a read cuts it (whatever the reads, the same step).
                if let end = window.firstIndex(of: headEnd) {
                    return malformed(UnsafeRawBufferPointer(rebasing: window[..<(end + 4)]))
                }
                fallthrough
            case .incomplete:
                if window.count == maxHead { return headTooLarge() }
                carry.append(contentsOf: input)
                input = UnsafeRawBufferPointer(rebasing: input[input.count...])
                return nil
            }
        }
        // A head cut by a read: CRLF CRLF searched for only in what is new (and the three bytes before it),
        // so a server sending a byte at a time costs no more than one that sends the head at once.
        let old = carry.count
        let take = min(input.count, maxHead - old)
        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<take]))
        guard let end = carry.withUnsafeBytes({ $0.firstIndex(of: headEnd, from: max(0, old - 3)) }) else {
            if carry.count >= maxHead { return headTooLarge() }
            input = UnsafeRawBufferPointer(rebasing: input[take...])
            return nil
        }
        let length = end + 4
        input = UnsafeRawBufferPointer(rebasing: input[(length - old)...])
        var bytes: [UInt8] = []
        swap(&bytes, &carry)
        defer {
            bytes.removeAll(keepingCapacity: true)
            swap(&bytes, &carry)
        }
        return bytes.withUnsafeBytes { all in
            let head = UnsafeRawBufferPointer(rebasing: all[..<length])
            guard case .head(let parsed, length) = HTTPResponseHead.scan(head) else { return malformed(head) }
            return headArrived(parsed, length: length)
        }
    }

    private func malformed(_ head: UnsafeRawBufferPointer) -> Step {
        .failed(.badResponse, "response head could not be used (malformed): \(ServerText.escaped(head))")
    }

    /// The head is in (`length` bytes with CR LF CR LF): where the body is, or the response when it has none.
    private mutating func headArrived(_ parsed: HTTPResponseHead, length headLength: Int) -> Step? {
        head = parsed
        headBytes = headLength
        bodyBytes = 0
        if parsed.hasChunkedBody {
            chunkBytes = 0
            phase = .sizeLine
            return nil
        }
        let length = parsed.bodyLength
        guard length > 0 else {
            let empty = UnsafeRawBufferPointer(start: nil, count: 0)
            return complete(bodyPasses: !inspectsBody || checks.passes(body: empty))
        }
        guard length <= maxBody else {
            return bodyTooLarge("a response announced a body of \(length) bytes")
        }
        bodyLeft = length
        bodyBytes = length
        phase = .body
        return nil
    }

    // MARK: Body

    /// The next piece of a body or chunk: what has arrived of its ``bodyLeft`` bytes, taken from `input`.
    @inline(__always)
    private mutating func takePiece(_ input: inout UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let n = min(input.count, bodyLeft)
        defer { input = UnsafeRawBufferPointer(rebasing: input[n...]) }
        bodyLeft -= n
        return UnsafeRawBufferPointer(rebasing: input[..<n])
    }

    private mutating func readBody(_ input: inout UnsafeRawBufferPointer) -> Step? {
        let piece = takePiece(&input)
        if inspectsBody {
            if piece.count == bodyBytes {
                // The whole body in one piece: checked where it lies.
                wholeBodyPasses = checks.passes(body: piece)
            } else {
                scan.feed(piece, needle: needle)
            }
        }
        guard bodyLeft == 0 else { return nil }
        return complete(bodyPasses: !inspectsBody || (wholeBodyPasses ?? scan.passes(checks)))
    }

    // MARK: Chunked body

    private mutating func readSizeLine(_ input: inout UnsafeRawBufferPointer) -> Step? {
        switch takeLine(&input, limit: Int(HTTPChunkLine.maxLineLength), { reader, line in reader.sizeLine(line) }) {
        case .tooLong: return .failed(.badResponse, "a chunk size line over \(HTTPChunkLine.maxLineLength) bytes")
        case .incomplete: return nil
        case .line(let step): return step
        }
    }

    private mutating func sizeLine(_ line: UnsafeRawBufferPointer) -> Step? {
        bodyBytes += line.count
        guard let size = HTTPChunkLine.size(line) else {
            return .failed(.badResponse, "chunk size line could not be used: \(ServerText.escaped(line, limit: 100))")
        }
        guard chunkBytes + size <= maxBody else {
            return bodyTooLarge("a chunked response body reached \(chunkBytes + size) bytes")
        }
        if size == 0 {
            trailerBytes = 0
            phase = .trailers
        } else {
            bodyLeft = size
            phase = .chunkData
        }
        return nil
    }

    private mutating func readChunkData(_ input: inout UnsafeRawBufferPointer) -> Step? {
        let piece = takePiece(&input)
        if inspectsBody { scan.feed(piece, needle: needle) }
        bodyBytes += piece.count
        chunkBytes += piece.count
        if bodyLeft == 0 {
            crlfSeen = 0
            phase = .chunkEnd
        }
        return nil
    }

    private mutating func readChunkEnd(_ input: inout UnsafeRawBufferPointer) -> Step? {
        while crlfSeen < 2, let byte = input.first {
            guard byte == (crlfSeen == 0 ? 13 : 10) else {
                return .failed(.badResponse, "a chunk was not followed by CRLF")
            }
            input = UnsafeRawBufferPointer(rebasing: input[1...])
            crlfSeen += 1
            bodyBytes += 1
        }
        if crlfSeen == 2 { phase = .sizeLine }
        return nil
    }

    private mutating func readTrailer(_ input: inout UnsafeRawBufferPointer) -> Step? {
        let left = maxHead - trailerBytes
        guard left >= 2 else { return trailersTooLarge() }
        let limit = min(left, Int(HTTPChunkLine.maxLineLength))
        switch takeLine(&input, limit: limit, { reader, line in reader.trailerLine(line) }) {
        case .tooLong: return trailersTooLarge()
        case .incomplete: return nil
        case .line(let step): return step
        }
    }

    private mutating func trailerLine(_ line: UnsafeRawBufferPointer) -> Step? {
        bodyBytes += line.count
        trailerBytes += line.count
        guard HTTPChunkLine.endsTrailers(line) else { return nil }
        return complete(bodyPasses: !inspectsBody || scan.passes(checks))
    }

    // MARK: Lines

    private enum LineOutcome {
        case line(Step?)
        case incomplete
        case tooLong
    }

    /// The next line (to CRLF, within `limit` bytes with it) handed to `use`, where it lies or, when a read cut
    /// it in two, from ``carry``.
    private mutating func takeLine(
        _ input: inout UnsafeRawBufferPointer, limit: Int,
        _ use: (inout HTTPResponseReader, UnsafeRawBufferPointer) -> Step?
    ) -> LineOutcome {
        if carry.isEmpty {
            let window = UnsafeRawBufferPointer(rebasing: input[..<min(input.count, limit)])
            guard let end = window.firstIndex(of: lineEnd) else {
                if window.count == limit { return .tooLong }
                carry.append(contentsOf: input)
                input = UnsafeRawBufferPointer(rebasing: input[input.count...])
                return .incomplete
            }
            let line = UnsafeRawBufferPointer(rebasing: input[..<(end + 2)])
            input = UnsafeRawBufferPointer(rebasing: input[(end + 2)...])
            return .line(use(&self, line))
        }
        let old = carry.count
        let take = min(input.count, limit - old)
        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<max(take, 0)]))
        guard let end = carry.withUnsafeBytes({ $0.firstIndex(of: lineEnd, from: max(0, old - 1)) }) else {
            if carry.count >= limit { return .tooLong }
            input = UnsafeRawBufferPointer(rebasing: input[input.count...])
            return .incomplete
        }
        input = UnsafeRawBufferPointer(rebasing: input[(end + 2 - old)...])
        var bytes: [UInt8] = []
        swap(&bytes, &carry)
        let step = bytes.withUnsafeBytes { use(&self, UnsafeRawBufferPointer(rebasing: $0[..<(end + 2)])) }
        bytes.removeAll(keepingCapacity: true)
        swap(&bytes, &carry)
        return .line(step)
    }

    // MARK: Ends

    /// The response is whole: the reader is ready for the next one.
    private mutating func complete(bodyPasses: Bool) -> Step {
        let step = Step.response(head, headBytes: headBytes, bodyBytes: bodyBytes, bodyPasses: bodyPasses)
        phase = .head
        wholeBodyPasses = nil
        if inspectsBody { scan = ResponseChecks.BodyScan() }
        return step
    }

    private func headTooLarge() -> Step {
        .failed(.headTooLarge, "a response head over --max-head (\(maxHead) bytes)")
    }

    private func trailersTooLarge() -> Step {
        .failed(.headTooLarge, "trailer fields over --max-head (\(maxHead) bytes)")
    }

    private func bodyTooLarge(_ what: String) -> Step {
        .failed(.bodyTooLarge, "\(what), over --max-body (\(maxBody) bytes)")
    }
}
