/// Bytes a connection has written (WebSocket frames, HTTP requests) but not handed to the kernel yet: one
/// allocation, rewritten in place, that grows (doubling) only when more is queued at once than it ever held.
///
/// Bytes are appended at the end, written in place, and taken from the start. A partial send advances the
/// start; once everything is taken the buffer is empty again and the next bytes go to the front. Its size is
/// bounded by its owner, which queues only what one read of the server's bytes calls for (and the raw
/// transport stops reading while its bytes wait for the kernel).
///
/// The owner frees the memory with ``deallocate()``: a plain value with a pointer, kept in a loop-confined
/// object, so the hot path pays no reference count.
struct ByteOutputBuffer: LoopSocketOutput {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private var start = 0
    private var end = 0

    /// An empty buffer with room for `capacity` bytes (at least 1) before it first grows.
    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    /// Frees the memory; the buffer must not be used afterwards.
    func deallocate() {
        base.deallocate()
    }

    /// Whether every byte appended has been taken.
    var isEmpty: Bool { start == end }

    /// How many bytes are not taken yet.
    var count: Int { end - start }

    /// The bytes not taken yet.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + start, count: end - start)
    }

    /// Appends `count` bytes, written in place by `fill` (given where they start).
    @inline(__always)
    mutating func append(_ count: Int, _ fill: (UnsafeMutableRawPointer) -> Void) {
        if end + count > capacity { makeRoom(for: count) }
        fill(base + end)
        end += count
    }

    /// Appends a copy of `bytes`.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        append(bytes.count) { $0.copyMemory(from: source, byteCount: bytes.count) }
    }

    /// Marks the first `count` bytes as taken.
    @inline(__always)
    mutating func consume(_ count: Int) {
        start += count
        if start == end { removeAll() }
    }

    /// Drops every byte not taken yet.
    @inline(__always)
    mutating func removeAll() {
        start = 0
        end = 0
    }

    /// Moves the bytes not taken yet to the front, then grows (doubling) if `count` more still do not fit.
    @inline(never)
    private mutating func makeRoom(for count: Int) {
        let pending = end - start
        if pending + count > capacity {
            let grown = max(capacity * 2, pending + count)
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            if pending > 0 { bigger.copyMemory(from: base + start, byteCount: pending) }
            base.deallocate()
            base = bigger
            capacity = grown
        } else if pending > 0 {
            base.copyMemory(from: base + start, byteCount: pending)
        }
        start = 0
        end = pending
    }
}
