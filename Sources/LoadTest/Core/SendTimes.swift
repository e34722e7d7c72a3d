/// Send times of the requests in flight, a power-of-two ring indexed by sequence number.
///
/// The ring is memory of its own, freed with the value, rather than an array: writing an element of an array
/// held in an object checks that the array is not shared (a runtime call) on every request. Non-copyable, so
/// that memory has exactly one owner.
struct SendTimes: ~Copyable {
    private let times: UnsafeMutablePointer<UInt64>
    let mask: UInt64
    /// How many sends it holds.
    let capacity: Int

    init(capacity: Int) {
        var size = 1
        while size < capacity { size <<= 1 }
        times = .allocate(capacity: size)
        times.initialize(repeating: 0, count: size)
        mask = UInt64(size - 1)
        self.capacity = size
    }

    deinit {
        times.deallocate()
    }

    @inline(__always)
    subscript(sequence: UInt64) -> UInt64 {
        get { times[Int(sequence & mask)] }
        nonmutating set { times[Int(sequence & mask)] = newValue }
    }
}
