import Glibc

/// Where a loop records latencies as replies arrive: a ``Histogram``'s buckets in memory the recorder owns,
/// read out as a ``Histogram`` value (``histogram``) when the run asks for figures.
///
/// ``Histogram`` keeps its buckets in an `Array`, so every record into one held by a class checks that the
/// array is not shared (the copy a progress tick takes shares it) and checks the index against its bounds.
/// On the load generator's hot path that was about a third of what recording cost, for every reply; here a
/// record is the bucket's index, an increment and the four totals. Noncopyable, so the memory has one owner
/// and is freed once.
struct HistogramRecorder: ~Copyable {
    /// ``Histogram/bucketCount`` counts, allocated (zeroed) on the first record.
    private var counts: UnsafeMutablePointer<UInt64>?
    private var count: UInt64 = 0
    private var min: UInt64 = .max
    private var max: UInt64 = 0
    private var sum: UInt64 = 0

    /// An empty recorder; it allocates nothing until a value is recorded.
    init() {}

    deinit { free(counts) }

    /// Records `value`.
    @inline(__always)
    mutating func record(_ value: UInt64) {
        let counts = self.counts ?? allocate()
        counts[Histogram.bucketIndex(of: value)] &+= 1
        count &+= 1
        sum &+= value
        if value < min { min = value }
        if value > max { max = value }
    }

    @inline(never)
    private mutating func allocate() -> UnsafeMutablePointer<UInt64> {
        guard let raw = calloc(Histogram.bucketCount, MemoryLayout<UInt64>.stride) else {
            fatalError("out of memory for a latency histogram")
        }
        let counts = raw.bindMemory(to: UInt64.self, capacity: Histogram.bucketCount)
        self.counts = counts
        return counts
    }

    /// The values recorded so far, as a value the caller may keep (a copy of the buckets).
    var histogram: Histogram {
        guard let counts, count > 0 else { return Histogram() }
        return Histogram(counts: Array(UnsafeBufferPointer(start: counts, count: Histogram.bucketCount)),
                         count: count, min: min, max: max, sum: sum)
    }
}
