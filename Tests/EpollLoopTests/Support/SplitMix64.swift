/// A small, seeded, fully deterministic random source (Steele, Lea & Flood's SplitMix64).
///
/// Written here rather than taken from the standard library so that a failing seed replays identically on
/// every toolchain: `below(_:)` and `chance(_:)` are defined in this file, not by `Int.random(in:using:)`.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (`bound` > 0), by multiply-high (the bias is far below anything a test sees).
    mutating func below(_ bound: UInt64) -> UInt64 {
        precondition(bound > 0)
        return next().multipliedFullWidth(by: bound).high
    }

    /// A value in `range`.
    mutating func inRange(_ range: ClosedRange<UInt64>) -> UInt64 {
        let width = range.upperBound - range.lowerBound
        if width == .max { return next() }
        return range.lowerBound + below(width + 1)
    }

    /// An index into a collection of `count` elements.
    mutating func index(_ count: Int) -> Int { Int(below(UInt64(count))) }

    /// True with probability `percent` / 100.
    mutating func chance(_ percent: UInt64) -> Bool { below(100) < percent }
}
