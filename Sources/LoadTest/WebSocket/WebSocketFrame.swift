/// A WebSocket frame's opcode (RFC 6455 section 5.2).
package enum WebSocketOpcode: UInt8 {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes of payload, never fragmented, allowed between fragments.
    package var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Writing client frames: always masked (section 5.3), each with the next key of the connection's
/// ``WebSocketMaskKeys``.
package enum WebSocketFrame {
    /// The largest header a client frame has: 2 bytes, an 8-byte length, a 4-byte masking key.
    static let maxClientHeader = 14

    /// The bytes a client frame with `payloadCount` bytes of payload takes.
    @inline(__always)
    package static func clientFrameSize(payloadCount: Int) -> Int {
        (payloadCount < 126 ? 6 : payloadCount <= 0xFFFF ? 8 : 14) + payloadCount
    }

    /// Writes a whole client frame (FIN set unless `fin` is false) into `out`, which must hold
    /// ``clientFrameSize(payloadCount:)`` bytes, masking `payload` with `maskKey` (the key's bytes in
    /// big-endian order are the four masking bytes). `payload` may be nil to mask the bytes already in place at
    /// the payload's offset (see ``payloadOffset(payloadCount:)``). Returns the bytes written.
    @discardableResult @inline(__always)
    package static func writeClientFrame(
        _ opcode: WebSocketOpcode, fin: Bool = true, payload: UnsafeRawBufferPointer?,
        payloadCount: Int, maskKey: UInt32, into out: UnsafeMutableRawPointer
    ) -> Int {
        out.storeBytes(of: (fin ? 0x80 : 0) | opcode.rawValue, as: UInt8.self)
        var offset: Int
        if payloadCount < 126 {
            out.storeBytes(of: 0x80 | UInt8(payloadCount), toByteOffset: 1, as: UInt8.self)
            offset = 2
        } else if payloadCount <= 0xFFFF {
            out.storeBytes(of: 0x80 | 126, toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt16(payloadCount).bigEndian, toByteOffset: 2, as: UInt16.self)
            offset = 4
        } else {
            out.storeBytes(of: 0x80 | 127, toByteOffset: 1, as: UInt8.self)
            (out + 2).storeBytes(of: UInt64(payloadCount).bigEndian, as: UInt64.self)
            offset = 10
        }
        (out + offset).storeBytes(of: maskKey.bigEndian, as: UInt32.self)
        offset += 4
        let body = out + offset
        if let payload, payloadCount > 0 {
            body.copyMemory(from: payload.baseAddress!, byteCount: payloadCount)
        }
        mask(body, count: payloadCount, key: maskKey)
        return offset + payloadCount
    }

    /// Where the payload starts in a client frame with `payloadCount` bytes of payload.
    @inline(__always)
    static func payloadOffset(payloadCount: Int) -> Int { clientFrameSize(payloadCount: payloadCount) - payloadCount }

    /// XORs `count` bytes in place with the masking key (masking and unmasking are the same): 64 bytes a
    /// round in four 16-byte vectors, then 16 at a time, then 8, then byte by byte. Every x86-64 and ARM64
    /// has 16-byte vectors; a wider one would need a CPU the build cannot assume.
    @inline(__always)
    package static func mask(_ bytes: UnsafeMutableRawPointer, count: Int, key: UInt32) {
        // The key's four bytes in memory order, repeated: the vector and the word the bytes are XORed with.
        let key4 = key.bigEndian
        let word = UInt64(key4) | UInt64(key4) << 32
        let vector = unsafeBitCast(SIMD2<UInt64>(repeating: word), to: SIMD16<UInt8>.self)
        // Offsets never come near overflowing: wrapping arithmetic spares the loops their checks.
        var i = 0
        while i &+ 64 <= count {
            maskVector(bytes + i, vector)
            maskVector(bytes + (i &+ 16), vector)
            maskVector(bytes + (i &+ 32), vector)
            maskVector(bytes + (i &+ 48), vector)
            i &+= 64
        }
        while i &+ 16 <= count {
            maskVector(bytes + i, vector)
            i &+= 16
        }
        if i &+ 8 <= count {
            (bytes + i).storeBytes(of: (bytes + i).loadUnaligned(as: UInt64.self) ^ word, as: UInt64.self)
            i += 8
        }
        var rest = word
        while i < count {
            (bytes + i).storeBytes(
                of: (bytes + i).load(as: UInt8.self) ^ UInt8(truncatingIfNeeded: rest), as: UInt8.self)
            rest >>= 8
            i += 1
        }
    }

    @inline(__always)
    private static func maskVector(_ bytes: UnsafeMutableRawPointer, _ vector: SIMD16<UInt8>) {
        bytes.storeBytes(of: bytes.loadUnaligned(as: SIMD16<UInt8>.self) ^ vector, as: SIMD16<UInt8>.self)
    }
}

/// A fresh masking key for every frame a connection sends (section 5.3: unpredictable, so that script-chosen
/// bytes cannot be aimed at an intermediary). A wyrand generator per connection, seeded from the system's
/// random source: one `getrandom` per connection rather than one per frame, which would cost more than the
/// rest of the frame.
struct WebSocketMaskKeys {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    /// A generator with a fixed seed, for tests.
    init(seed: UInt64) { state = seed }

    @inline(__always)
    mutating func next() -> UInt32 {
        state &+= 0xA076_1D64_78BD_642F
        let product = state.multipliedFullWidth(by: state ^ 0xE703_7ED1_A0B4_28DB)
        return UInt32(truncatingIfNeeded: product.high ^ product.low)
    }
}
