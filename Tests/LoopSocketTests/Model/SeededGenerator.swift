import Foundation

/// A small, fast, seedable random number generator (O'Neill's PCG32, XSH-RR output, two outputs per 64-bit
/// value), so that one 64-bit seed reproduces a whole script: Swift's own generators cannot be seeded.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    /// PCG's stream selector (must be odd).
    private static let increment: UInt64 = 1_442_695_040_888_963_407

    init(seed: UInt64) {
        state = seed &+ Self.increment
        _ = next32()
    }

    private mutating func next32() -> UInt32 {
        let old = state
        state = old &* 6_364_136_223_846_793_005 &+ Self.increment
        let mixed = UInt32(truncatingIfNeeded: ((old >> 18) ^ old) >> 27)
        let rotation = UInt32(truncatingIfNeeded: old >> 59)
        return (mixed >> rotation) | (mixed << ((~rotation &+ 1) & 31))
    }

    mutating func next() -> UInt64 { UInt64(next32()) << 32 | UInt64(next32()) }

    /// The seed of the `index`th case of a run started from `base`: cases are independent, so any one of
    /// them reruns alone from its own seed.
    static func caseSeed(base: UInt64, index: Int) -> UInt64 {
        var generator = SeededGenerator(seed: base ^ (UInt64(index) &* 0xD6E8_FEB8_6659_FD93))
        return generator.next()
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// A size from a skewed distribution: mostly small, sometimes large, so that both the common short
    /// messages and the multi-segment, multi-`recv` paths are exercised.
    mutating func size(max: Int) -> Int {
        switch int(0...9) {
        case 0...5: return int(1...Swift.min(max, 64))
        case 6...7: return int(1...Swift.min(max, 4096))
        default: return int(1...max)
        }
    }

    /// `count` random bytes, none of them in `excluded` (a separator's first byte, so that the separator
    /// can occur only where the script puts it).
    mutating func bytes(_ count: Int, excluding excluded: UInt8? = nil) -> Data {
        var result = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            var word = next()
            for _ in 0..<8 where i < count {
                var byte = UInt8(truncatingIfNeeded: word)
                word >>= 8
                if let excluded, byte == excluded { byte = excluded &+ 1 }
                result[i] = byte
                i += 1
            }
        }
        return Data(result)
    }

    /// Cuts `data` into random consecutive pieces (the peer sends each on its own), at most `maxPieces`.
    mutating func splits(of data: Data, maxPieces: Int = 6) -> [Data] {
        guard data.count > 1 else { return data.isEmpty ? [] : [data] }
        let pieces = int(1...Swift.min(maxPieces, data.count))
        var cuts = Set<Int>()
        while cuts.count < pieces - 1 { cuts.insert(int(1...(data.count - 1))) }
        var result: [Data] = []
        var start = data.startIndex
        for cut in cuts.sorted() {
            result.append(data[start..<(data.startIndex + cut)])
            start = data.startIndex + cut
        }
        result.append(data[start...])
        return result.map { Data($0) }
    }
}
