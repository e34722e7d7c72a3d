/// A timer's slab index and generation: 8 bytes, no reference counting.
///
/// A cancel or reset with a stale ID (its timer already fired or was cancelled, and the slot perhaps reused)
/// finds a different generation and does nothing.
package struct TimerID: Hashable, Sendable {
    package var index: UInt32
    package var generation: UInt32

    package init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }

    /// An ID that never names a live timer.
    package static let invalid = TimerID(index: .max, generation: .max)
}
