import FoundationEssentials

/// The sender addresses a loop has recently delivered, each with the `Data` it was delivered as, so that a
/// peer that sends again gets the same (shared, copy-on-write) `Data` instead of a new one.
///
/// A `Data` over 14 bytes is a heap object, and making and freeing one costs some 800 instructions (most of
/// them in FoundationEssentials' exclusivity checks), a fifth of what echoing a small datagram costs in user
/// space. Senders repeat (a flow, a client, a resolver), so a table keyed by the raw `sockaddr` bytes turns
/// that into a hash, a few compares and a retain. Sharing is invisible to users: `Data` is a value.
///
/// Set-associative, ``ways`` entries per set: in a direct-mapped table two active senders whose hashes meet
/// evict each other on every datagram, and at 1,000 senders in 4,096 slots one in five did; with eight ways a
/// sender misses only when nine or more active senders share its set (at 1,000 random senders, one run
/// in ten has such a set, and only its few senders miss). A miss compares eight keys, most of which differ
/// in their first word.
///
/// Bounded: ``slotCount`` entries per loop, each one `Data` (a `sockaddr_in6` at most), allocated when the
/// loop first receives a datagram; a new sender replaces its set's entries in turn. Loop-confined (kept in
/// the loop's ``DatagramScratch``).
final class DatagramAddressCache {
    /// Entries: a power of two.
    static let slotCount = 4_096
    /// Entries per set: a sender's entry may be any of its set's.
    static let ways = 8

    /// A `sockaddr_in` or `sockaddr_in6`, zero-padded to 32 bytes, and its length (0 for an empty entry,
    /// which no address matches).
    private struct Key: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var length = 0

        static func == (a: Key, b: Key) -> Bool {
            a.length == b.length && a.words.0 == b.words.0 && a.words.1 == b.words.1
                && a.words.2 == b.words.2 && a.words.3 == b.words.3
        }

        /// The key's set: its first entry's index.
        var firstSlot: Int {
            // Fibonacci hashing of the folded words: the family, port and address all land in the top bits.
            let folded = words.0 ^ (words.1 &* 31) ^ (words.2 &* 131) ^ (words.3 &* 1_031)
            let set = (folded &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - DatagramAddressCache.setBits)
            return Int(truncatingIfNeeded: set) &* DatagramAddressCache.ways
        }
    }

    private static let setBits = (slotCount / ways).trailingZeroBitCount
    private let keys: UnsafeMutablePointer<Key>
    private let values: UnsafeMutablePointer<Data>
    /// Per set, the way the next new sender takes (round robin).
    private let nextWay: UnsafeMutablePointer<UInt8>

    init() {
        keys = .allocate(capacity: Self.slotCount)
        keys.initialize(repeating: Key(), count: Self.slotCount)
        values = .allocate(capacity: Self.slotCount)
        values.initialize(repeating: Data(), count: Self.slotCount)
        nextWay = .allocate(capacity: Self.slotCount / Self.ways)
        nextWay.initialize(repeating: 0, count: Self.slotCount / Self.ways)
    }

    deinit {
        keys.deinitialize(count: Self.slotCount)
        keys.deallocate()
        values.deinitialize(count: Self.slotCount)
        values.deallocate()
        nextWay.deallocate()
    }

    /// `address` (raw `sockaddr` bytes from the kernel) as a `Data`: the cached one when this sender has an
    /// entry, else a new one that takes the next entry of its set.
    @inline(__always)
    func data(for address: UnsafeRawBufferPointer) -> Data {
        guard address.count <= MemoryLayout<(UInt64, UInt64, UInt64, UInt64)>.size, address.count > 0 else {
            return Data(bytes: address.baseAddress!, count: address.count)
        }
        var key = Key(length: address.count)
        withUnsafeMutableBytes(of: &key.words) { $0.copyMemory(from: address) }
        let first = key.firstSlot
        for slot in first..<(first &+ Self.ways) where keys[slot] == key {
            return values[slot]
        }
        let set = first / Self.ways
        let slot = first &+ Int(nextWay[set])
        nextWay[set] = (nextWay[set] &+ 1) & UInt8(Self.ways - 1)
        let data = Data(bytes: address.baseAddress!, count: address.count)
        keys[slot] = key
        values[slot] = data
        return data
    }
}
