/// Reads a fuzz input's leading parameter bytes (a limit, a split point), then leaves the rest as the bytes a
/// peer sent. A short input reads as zeros, so every input is usable.
struct FuzzInput {
    private(set) var rest: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        rest = bytes
    }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard let first = rest.first else { return 0 }
        rest = UnsafeRawBufferPointer(rebasing: rest[1...])
        return first
    }

    /// The next two bytes, big-endian.
    mutating func uint16() -> Int {
        Int(byte()) << 8 | Int(byte())
    }
}

extension UnsafeRawBufferPointer {
    /// The first `count` bytes.
    func bytes(upTo count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[..<count])
    }

    /// The bytes from `start` on.
    func bytes(from start: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[start...])
    }

    /// The bytes as `UInt8`s, for parsers that take a typed buffer.
    var typed: UnsafeBufferPointer<UInt8> {
        assumingMemoryBound(to: UInt8.self)
    }
}

/// Split points chosen by the fuzzer: `count` positions in `0...length`, sorted.
func splitPoints(_ seeds: [Int], length: Int) -> [Int] {
    seeds.map { $0 % (length + 1) }.sorted()
}

/// `bytes` cut at `points` (sorted), as the reads a socket would deliver.
func pieces(_ bytes: UnsafeRawBufferPointer, at points: [Int]) -> [UnsafeRawBufferPointer] {
    var result: [UnsafeRawBufferPointer] = []
    var start = 0
    for point in points + [bytes.count] where point >= start {
        result.append(UnsafeRawBufferPointer(rebasing: bytes[start..<point]))
        start = point
    }
    return result
}
