/// A FIFO of read or write operations: a ring buffer of optional slots, so an operation is moved in and
/// out without copies, dequeuing is O(1), and the storage is reused (no allocation per operation once it
/// has grown to the socket's usual depth, which is one or two).
struct OpQueue<Element> {
    private var slots: [Element?] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The operation at the front (a copy; prefer ``withFirst(_:)`` on hot paths).
    var first: Element? { count == 0 ? nil : slots[head] }

    mutating func append(_ element: Element) {
        if count == slots.count { grow() }
        slots[(head + count) & (slots.count - 1)] = element
        count += 1
    }

    /// Mutates the front element in place (the queue must not be empty).
    mutating func withFirst<R>(_ body: (inout Element) throws -> R) rethrows -> R {
        try body(&slots[head]!)
    }

    /// The `i`-th element from the front.
    subscript(i: Int) -> Element {
        get { slots[(head + i) & (slots.count - 1)]! }
        set { slots[(head + i) & (slots.count - 1)] = newValue }
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        let element = slots[head].take()!
        head = (head + 1) & (slots.count - 1)
        count -= 1
        if count == 0 { head = 0 }
        return element
    }

    /// Removes the first element matching `predicate`; returns it and whether it was at the front.
    mutating func remove(where predicate: (Element) -> Bool) -> (element: Element, wasFront: Bool)? {
        guard let i = (0..<count).first(where: { predicate(self[$0]) }) else { return nil }
        if i == 0 { return (removeFirst(), true) }
        var rest = removeAll()
        let element = rest.remove(at: i)
        for other in rest { append(other) }
        return (element, false)
    }

    /// Empties the queue, returning what it held, front first; the storage is released.
    mutating func removeAll() -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(count)
        while count > 0 { result.append(removeFirst()) }
        slots = []
        head = 0
        return result
    }

    private mutating func grow() {
        let capacity = Swift.max(2, slots.count * 2)
        var grown: [Element?] = Array(repeating: nil, count: capacity)
        for i in 0..<count { grown[i] = slots[(head + i) & (slots.count - 1)].take() }
        slots = grown
        head = 0
    }
}
