/// Whether bytes are well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF), as a
/// WebSocket text message and a close reason must be (RFC 6455 sections 5.6 and 8.1).
package enum WebSocketUTF8Validation {
    package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // ASCII 8 bytes at a time; the standard library's validating decoder from the first byte that is not.
        var i = 0
        let count = bytes.count
        while i + 8 <= count && bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            i += 8
        }
        var iterator = UnsafeRawBufferPointer(rebasing: bytes[i...]).makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .error: return false
            case .emptyInput: return true
            }
        }
    }
}
