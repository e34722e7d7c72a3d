import Glibc

/// A FIFO of read or write operations: a ring buffer over raw storage, so an operation is moved in and out
/// (never copied), dequeuing is O(1), and the storage is reused (no allocation per operation once it has
/// grown to the socket's usual depth, which is one or two).
///
/// Noncopyable and pointer-based on purpose: an `[Element?]` ring paid, per operation, an array uniqueness
/// check, an outlined copy of the optional element into the slot and an outlined destroy of the `nil` it
/// replaced (about 400 instructions on the echo path, callgrind); here an append is one initialisation and a
/// removal one move. Reading the front borrows it in place (``front(_:)``) instead of copying the operation.
struct OpQueue<Element>: ~Copyable {
    private var storage: UnsafeMutablePointer<Element>?
    // 32-bit indexes: every socket holds two queues, and 16 bytes less each keeps an idle connection's
    // socket object in a smaller heap chunk. A queue never holds 2^32 operations.
    private var capacity32: UInt32 = 0
    private var head32: UInt32 = 0
    private var count32: UInt32 = 0
    /// The storage is the owner's one-element slot (``useInlineSlot(_:)``), which is never freed.
    private var storageIsInline = false

    private var capacity: Int {
        get { Int(capacity32) }
        set { capacity32 = UInt32(truncatingIfNeeded: newValue) }
    }
    private var head: Int {
        get { Int(head32) }
        set { head32 = UInt32(truncatingIfNeeded: newValue) }
    }
    private(set) var count: Int {
        get { Int(count32) }
        set { count32 = UInt32(truncatingIfNeeded: newValue) }
    }

    init() {
        storage = nil
    }

    deinit {
        guard let storage else { return }
        for i in 0..<count { (storage + slot(i)).deinitialize(count: 1) }
        if !storageIsInline { Self.release(storage) }
    }

    /// Makes `slot`, room for one element that the owner keeps inline in its own object, this queue's storage
    /// while the queue holds at most one element: an idle connection's one queued read then costs no
    /// allocation of its own. A second element moves the queue to allocated storage, where it stays until
    /// the owner hands the slot back: with this call once the queue is empty again (allocated storage is
    /// then freed), or with ``shrinkToFit(inlineSlot:)``. Emptying the queue keeps the slot. `slot` must
    /// outlive the queue and be the queue's alone, uninitialised except for what the queue put there.
    mutating func useInlineSlot(_ slot: UnsafeMutablePointer<Element>) {
        guard !storageIsInline else { return }
        precondition(count == 0)
        moveToInlineSlot(slot)
    }

    /// Moves the element (if any: at most one) into `slot` and frees the storage it leaves.
    private mutating func moveToInlineSlot(_ slot: UnsafeMutablePointer<Element>) {
        if let storage {
            if count == 1 { slot.moveInitialize(from: storage + head, count: 1) }
            Self.release(storage)
        }
        storage = slot
        capacity = 1
        head = 0
        storageIsInline = true
    }

    /// Whether the storage is the owner's inline slot (for tests and footprint accounting).
    var usesInlineSlot: Bool { storageIsInline }

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func slot(_ i: Int) -> Int { (head + i) & (capacity - 1) }

    mutating func append(_ element: consuming Element) {
        if count == capacity { grow() }
        (storage! + slot(count)).initialize(to: element)
        count += 1
    }

    /// Reads the front element in place; nil when the queue is empty.
    @inline(__always)
    func front<R>(_ body: (borrowing Element) throws -> R) rethrows -> R? {
        guard count > 0 else { return nil }
        return try body(storage![head])
    }

    /// Reads the `i`-th element from the front in place (`i < count`).
    @inline(__always)
    func at<R>(_ i: Int, _ body: (borrowing Element) throws -> R) rethrows -> R {
        precondition(i < count)
        return try body(storage![slot(i)])
    }

    /// Mutates the front element in place (the queue must not be empty).
    @inline(__always)
    mutating func withFirst<R>(_ body: (inout Element) throws -> R) rethrows -> R {
        precondition(count > 0)
        return try body(&storage![head])
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        precondition(count > 0)
        let element = (storage! + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        if count == 0 { head = 0 }
        return element
    }

    /// Removes the first element matching `predicate`; returns it and whether it was at the front.
    mutating func remove(where predicate: (borrowing Element) -> Bool) -> (element: Element, wasFront: Bool)? {
        guard let i = (0..<count).first(where: { at($0, predicate) }) else { return nil }
        if i == 0 { return (removeFirst(), true) }
        // Close the gap by moving the elements after it one slot towards the front.
        let element = (storage! + slot(i)).move()
        for j in i..<(count - 1) {
            (storage! + slot(j)).moveInitialize(from: storage! + slot(j + 1), count: 1)
        }
        count -= 1
        return (element, false)
    }

    /// Empties the queue, returning what it held, front first; the storage is released. An empty queue
    /// returns the empty array without allocating (a connection that closes usually has no writes queued).
    mutating func removeAll() -> [Element] {
        var result: [Element] = []
        if count > 0 { result.reserveCapacity(count) }
        while count > 0 { result.append(removeFirst()) }
        releaseStorage()
        return result
    }

    /// Empties the queue, handing each element to `body`, front first, and releases the storage: what
    /// ``removeAll()`` does without building an array. `body` must not touch this queue.
    mutating func drain(_ body: (consuming Element) -> Void) {
        while count > 0 { body(removeFirst()) }
        releaseStorage()
    }

    /// Frees allocated storage; an inline slot is kept (empty, it costs nothing).
    private mutating func releaseStorage() {
        head = 0
        guard !storageIsInline else { return }
        if let storage { Self.release(storage) }
        storage = nil
        capacity = 0
    }

    private mutating func grow() {
        resize(to: Swift.max(1, capacity * 2))  // 1 first: an idle connection's one queued read
    }

    /// The slots the storage has room for (for tests and footprint accounting).
    var storageCapacity: Int { capacity }

    /// Gives back the storage a one-off burst grew (startTLS's marker beside a read, in both queues): down
    /// to the smallest power of two that holds what is queued, or none for an empty queue. A long-lived
    /// idle connection then keeps only what it uses; the next append grows it again. With `inlineSlot` (the
    /// owner's, see ``useInlineSlot(_:)``), a queue of one element or none goes back to it.
    mutating func shrinkToFit(inlineSlot: UnsafeMutablePointer<Element>? = nil) {
        guard capacity > 0, !storageIsInline else { return }
        if count <= 1, let inlineSlot { return moveToInlineSlot(inlineSlot) }
        guard count > 0 else { return releaseStorage() }
        var fitted = 1
        while fitted < count { fitted *= 2 }
        if fitted < capacity { resize(to: fitted) }
    }

    /// Moves the queued elements, front first, into new storage of `newCapacity` (at least `count`) slots.
    private mutating func resize(to newCapacity: Int) {
        let new = Self.allocate(newCapacity)
        if let storage {
            for i in 0..<count { (new + i).moveInitialize(from: storage + slot(i), count: 1) }
            if !storageIsInline { Self.release(storage) }
        }
        storageIsInline = false
        storage = new
        capacity = newCapacity
        head = 0
    }

    // `malloc`/`free` rather than `UnsafeMutablePointer.allocate`, which asks the runtime for an aligned
    // allocation (`posix_memalign`, about 60 instructions more) even at malloc's own alignment: one storage
    // per queue per connection.

    private static func allocate(_ count: Int) -> UnsafeMutablePointer<Element> {
        precondition(MemoryLayout<Element>.alignment <= 16)
        guard let raw = malloc(MemoryLayout<Element>.stride * count) else { fatalError("out of memory") }
        return raw.bindMemory(to: Element.self, capacity: count)
    }

    private static func release(_ storage: UnsafeMutablePointer<Element>) {
        free(storage)
    }
}
