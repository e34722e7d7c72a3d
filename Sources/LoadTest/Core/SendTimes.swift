/// Send times of the requests in flight, a power-of-two ring indexed by sequence number.
struct SendTimes {
    private var times: [UInt64]
    let mask: UInt64

    init(capacity: Int) {
        var size = 1
        while size < capacity { size <<= 1 }
        times = Array(repeating: 0, count: size)
        mask = UInt64(size - 1)
    }

    var capacity: Int { times.count }

    @inline(__always)
    subscript(sequence: UInt64) -> UInt64 {
        get { times.withUnsafeBufferPointer { $0[Int(sequence & mask)] } }
        set { times.withUnsafeMutableBufferPointer { $0[Int(sequence & mask)] = newValue } }
    }
}
