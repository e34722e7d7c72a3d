/// The bytes an echo connection has queued but the kernel has not taken yet: one buffer allocated with the
/// connection and rewritten in place, so sending a request allocates nothing.
///
/// Messages are appended at the end and sent from the start. A partial send advances the start (the rest
/// waits for the socket to become writable); once everything is sent the buffer is empty again and the next
/// message goes to the front. An append that would run past the end first moves the unsent bytes to the
/// front, which only happens after a partial send.
///
/// The owner frees the memory with ``deallocate()``: the buffer is a plain value with a pointer, kept in a
/// loop-confined object, so there is no reference count to pay for on the hot path.
struct EchoSendBuffer: LoopSocketOutput {
    private let base: UnsafeMutableRawPointer
    /// Bytes it can hold.
    let capacity: Int
    private var start = 0
    private var end = 0

    /// An empty buffer of `capacity` bytes.
    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    /// Frees the memory; the buffer must not be used afterwards.
    func deallocate() {
        base.deallocate()
    }

    /// Whether every byte appended has been sent.
    var isEmpty: Bool { start == end }

    /// Whether `count` more bytes fit (after moving the unsent ones to the front, if need be).
    func hasRoom(for count: Int) -> Bool { end - start + count <= capacity }

    /// Appends `count` bytes, written in place by `fill`. There must be room (``hasRoom(for:)``).
    @inline(__always)
    mutating func append(_ count: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) {
        if end + count > capacity { compact() }
        precondition(end + count <= capacity, "echo send buffer overflow")
        fill(UnsafeMutableRawBufferPointer(start: base + end, count: count))
        end += count
    }

    /// The bytes not sent yet.
    var unsent: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + start, count: end - start)
    }

    /// How many bytes are not sent yet.
    var count: Int { end - start }

    /// The bytes not sent yet (``unsent``).
    var bytes: UnsafeRawBufferPointer {
        @inline(__always) get { unsent }
    }

    /// Appends a copy of `bytes`. There must be room (``hasRoom(for:)``).
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        append(bytes.count) { $0.baseAddress!.copyMemory(from: source, byteCount: bytes.count) }
    }

    /// Drops every byte not sent yet.
    mutating func removeAll() {
        start = 0
        end = 0
    }

    /// Marks the first `count` unsent bytes as sent.
    @inline(__always)
    mutating func consume(_ count: Int) {
        start += count
        if start == end {
            start = 0
            end = 0
        }
    }

    private mutating func compact() {
        let pending = end - start
        if pending > 0 { base.copyMemory(from: base + start, byteCount: pending) }
        start = 0
        end = pending
    }
}
