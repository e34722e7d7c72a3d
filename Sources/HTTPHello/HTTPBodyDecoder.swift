/// Consumes a request body as it arrives, without keeping it: by `Content-Length`, or chunked (RFC 9112
/// §7.1: sizes, extensions, data, trailers). http-hello answers every request the same way, so a body only
/// has to be read past, exactly, for the next request to start in the right place.
package struct HTTPBodyDecoder {
    package enum Outcome: Equatable {
        case needMore
        case done
        case failed
    }

    enum State: Equatable {
        case data(remaining: Int)
        case chunkSize(value: Int, digits: Int)
        case chunkExtension
        case chunkSizeLF(value: Int)
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
        case trailerLineStart
        case trailerLine
        case trailerLineLF
        case finalLF
        case done
    }

    /// Trailer bytes accepted before the request is refused (the same bound as a head).
    static let maxTrailerBytes = 8192

    private(set) var state: State
    private var trailerBytes = 0

    package init(_ body: HTTPRequestHead.Body) {
        switch body {
        case .none: state = .done
        case .length(let count): state = .data(remaining: count)
        case .chunked: state = .chunkSize(value: 0, digits: 0)
        }
    }

    /// Consumes the body bytes at the start of `bytes`; returns how many it used and whether the body ended.
    package mutating func consume(_ bytes: UnsafeBufferPointer<UInt8>) -> (used: Int, outcome: Outcome) {
        var i = 0
        while i < bytes.count {
            switch state {
            case .done:
                return (i, .done)
            case .data(let remaining), .chunkData(let remaining):
                let take = min(remaining, bytes.count - i)
                i += take
                let left = remaining - take
                if case .data = state {
                    state = left == 0 ? .done : .data(remaining: left)
                } else {
                    state = left == 0 ? .chunkDataCR : .chunkData(remaining: left)
                }
            default:
                guard step(bytes[i]) else { return (i, .failed) }
                i += 1
            }
        }
        return (i, state == .done ? .done : .needMore)
    }

    /// One byte of the chunked framing; false if it is malformed.
    private mutating func step(_ byte: UInt8) -> Bool {
        switch state {
        case .chunkSize(let value, let digits):
            if let digit = Self.hexValue(byte) {
                guard digits < 15 else { return false }  // a size that would not fit an Int
                state = .chunkSize(value: value * 16 + digit, digits: digits + 1)
            } else if digits > 0 && (byte == UInt8(ascii: ";") || byte == 0x20 || byte == 0x09) {
                state = .chunkExtension
                extensionValue = value
            } else if digits > 0 && byte == HTTPHeadParser.cr {
                state = .chunkSizeLF(value: value)
            } else {
                return false
            }
        case .chunkExtension:
            if byte == HTTPHeadParser.cr {
                state = .chunkSizeLF(value: extensionValue)
            } else if byte == HTTPHeadParser.lf || (byte < 0x20 && byte != 0x09) || byte == 0x7F {
                return false
            }
        case .chunkSizeLF(let value):
            guard byte == HTTPHeadParser.lf else { return false }
            state = value == 0 ? .trailerLineStart : .chunkData(remaining: value)
        case .chunkDataCR:
            guard byte == HTTPHeadParser.cr else { return false }
            state = .chunkDataLF
        case .chunkDataLF:
            guard byte == HTTPHeadParser.lf else { return false }
            state = .chunkSize(value: 0, digits: 0)
        case .trailerLineStart, .trailerLine:
            trailerBytes += 1
            guard trailerBytes <= Self.maxTrailerBytes, byte != HTTPHeadParser.lf else { return false }
            if byte == HTTPHeadParser.cr {
                state = state == .trailerLineStart ? .finalLF : .trailerLineLF
            } else {
                state = .trailerLine
            }
        case .trailerLineLF:
            guard byte == HTTPHeadParser.lf else { return false }
            state = .trailerLineStart
        case .finalLF:
            guard byte == HTTPHeadParser.lf else { return false }
            state = .done
        case .data, .chunkData, .done:
            return false  // handled by consume
        }
        return true
    }

    /// The chunk size while its extension is skipped.
    private var extensionValue = 0

    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: Int(byte - 0x30)
        case 0x41...0x46: Int(byte - 0x41 + 10)
        case 0x61...0x66: Int(byte - 0x61 + 10)
        default: nil
        }
    }
}
