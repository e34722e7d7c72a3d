import FoundationEssentials

/// The sender addresses a loop has recently delivered, each with the `Data` it was delivered as, so that a
/// peer that sends again gets the same (shared, copy-on-write) `Data` instead of a new one.
///
/// A `Data` over 14 bytes is a heap object, and making and freeing one costs some 800 instructions (most of
/// them in FoundationEssentials' exclusivity checks), a fifth of what echoing a small datagram costs in user
/// space. Senders repeat (a flow, a client, a resolver), so a direct-mapped table keyed by the raw `sockaddr`
/// bytes turns that into a hash, a compare and a retain. Sharing is invisible to users: `Data` is a value.
///
/// Bounded: ``slotCount`` entries per loop, each one `Data` (a `sockaddr_in6` at most), allocated when the
/// loop first receives a datagram; a new sender replaces the entry its hash lands on. Loop-confined (kept in
/// the loop's ``DatagramScratch``).
final class DatagramAddressCache {
    /// Entries: a power of two. At 1,000 concurrent senders about four in five find their entry.
    static let slotCount = 4_096

    /// A `sockaddr_in` or `sockaddr_in6`, zero-padded to 32 bytes, and its length.
    private struct Key: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var length = 0

        static func == (a: Key, b: Key) -> Bool {
            a.length == b.length && a.words.0 == b.words.0 && a.words.1 == b.words.1
                && a.words.2 == b.words.2 && a.words.3 == b.words.3
        }

        var slot: Int {
            // Fibonacci hashing of the folded words: the family, port and address all land in the top bits.
            let folded = words.0 ^ (words.1 &* 31) ^ (words.2 &* 131) ^ (words.3 &* 1_031)
            return Int(truncatingIfNeeded: (folded &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - DatagramAddressCache.slotBits))
        }
    }

    private static let slotBits = slotCount.trailingZeroBitCount
    private let keys: UnsafeMutablePointer<Key>
    private let values: UnsafeMutablePointer<Data>

    init() {
        keys = .allocate(capacity: Self.slotCount)
        keys.initialize(repeating: Key(), count: Self.slotCount)
        values = .allocate(capacity: Self.slotCount)
        values.initialize(repeating: Data(), count: Self.slotCount)
    }

    deinit {
        keys.deinitialize(count: Self.slotCount)
        keys.deallocate()
        values.deinitialize(count: Self.slotCount)
        values.deallocate()
    }

    /// `address` (raw `sockaddr` bytes from the kernel) as a `Data`: the cached one when this sender was the
    /// last to use its slot, else a new one that takes the slot.
    @inline(__always)
    func data(for address: UnsafeRawBufferPointer) -> Data {
        guard address.count <= MemoryLayout<(UInt64, UInt64, UInt64, UInt64)>.size, address.count > 0 else {
            return Data(bytes: address.baseAddress!, count: address.count)
        }
        var key = Key(length: address.count)
        withUnsafeMutableBytes(of: &key.words) { $0.copyMemory(from: address) }
        let slot = key.slot
        if keys[slot] == key { return values[slot] }
        let data = Data(bytes: address.baseAddress!, count: address.count)
        keys[slot] = key
        values[slot] = data
        return data
    }
}
