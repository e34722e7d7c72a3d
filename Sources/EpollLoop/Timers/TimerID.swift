/// A timer's slab index and generation: 8 bytes, no reference counting.
///
/// A cancel or reset with a stale ID (its timer already fired or was cancelled, and the slot perhaps reused)
/// finds a different generation and does nothing.
package struct TimerID: Hashable, Sendable {
    package var index: UInt32
    package var generation: UInt32

    @inlinable package init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }

    /// An ID that never names a live timer.
    ///
    /// `@inlinable`, as is `==`: sockets compare their timer IDs with this on every read and write, and as
    /// out-of-module calls (a lazy global's addressor, then `==` through the `Equatable` witness table) the
    /// comparisons cost about 60 instructions per echo round trip (callgrind, docs/benchmarks.md).
    @inlinable package static var invalid: TimerID { TimerID(index: .max, generation: .max) }

    @inlinable package static func == (a: TimerID, b: TimerID) -> Bool {
        a.index == b.index && a.generation == b.generation
    }
}
