import LoadTest

/// loadtest's UTF-8 validation (WebSocket text messages and close reasons), `WebSocketUTF8Validation.isValid(_:)`,
/// against the standard library's two ways of judging the same bytes.
///
/// Input: the bytes. Properties: valid exactly when `String(validating:as:)` makes a string of them, and
/// exactly when `String(decoding:as:)` gives back the same bytes (no replacement character was needed); the
/// same for every suffix that starts at an 8-byte boundary (the validator's ASCII fast path works 8 at a time).
enum UTF8Target {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var start = 0
        while start <= data.count {
            let bytes = data.bytes(from: start)
            let valid = WebSocketUTF8Validation.isValid(bytes)
            let validating = String(validating: bytes, as: UTF8.self) != nil
            try check(valid == validating, "isValid \(valid), String(validating:) \(validating), from byte \(start)")
            let decoded = String(decoding: bytes, as: UTF8.self)
            try check(valid == decoded.utf8.elementsEqual(bytes), "isValid \(valid), but String(decoding:) disagrees")
            start += 8
        }
    }
}
