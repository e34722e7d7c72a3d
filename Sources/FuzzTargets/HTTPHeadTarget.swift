import HTTPHello

/// http-hello's request head parser, `HTTPHeadParser.parse(_:maxLength:)`: a pure function of the bytes
/// buffered so far, called again as more arrive.
///
/// Input: byte 0 picks the head limit (32 to 4096 bytes), bytes 1-2 a split point; the rest is what a client
/// sent. Properties:
/// - bounded: while the head is incomplete, what the connection buffers is within the limit, and a complete
///   head (with the empty lines before it) is too;
/// - incremental equals whole: parsing what had arrived at the split point decides nothing the whole input
///   decides otherwise (a head found early is the same head, a refusal early is a refusal), and the first
///   `length` bytes of a complete head parse to the same head.
enum HTTPHeadTarget {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let maxLength = 32 * (1 + Int(input.byte()) % 128)
        let split = input.uint16()
        let bytes = input.rest
        let whole = HTTPHeadParser.parse(bytes.typed, maxLength: maxLength)
        switch whole {
        case .incomplete:
            try check(bytes.count <= maxLength, "incomplete with \(bytes.count) bytes buffered, over the limit \(maxLength)")
        case .complete(_, let length):
            try check(length > 0 && length <= bytes.count, "a head of \(length) bytes in \(bytes.count)")
            try check(length <= maxLength, "a complete head of \(length) bytes, over the limit \(maxLength)")
            let exact = HTTPHeadParser.parse(bytes.bytes(upTo: length).typed, maxLength: maxLength)
            try check(exact == whole, "the head's own bytes parse to \(exact), the whole input to \(whole)")
            if length > 0 {
                let short = HTTPHeadParser.parse(bytes.bytes(upTo: length - 1).typed, maxLength: maxLength)
                try check(short == .incomplete, "one byte short of a complete head parses to \(short)")
            }
        case .failed:
            break
        }
        let cut = split % (bytes.count + 1)
        let early = HTTPHeadParser.parse(bytes.bytes(upTo: cut).typed, maxLength: maxLength)
        switch early {
        case .incomplete:
            break
        case .complete:
            try check(early == whole, "the first \(cut) bytes parse to \(early), the whole input to \(whole)")
        case .failed:
            guard case .failed = whole else {
                throw PropertyFailure("the first \(cut) bytes are refused (\(early)), the whole input is \(whole)")
            }
        }
    }
}
