/// A FIFO of read or write operations: an array with a head index, so dequeuing is O(1) and the storage
/// is reused once the queue drains (no allocation per operation in steady state).
struct OpQueue<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    /// The operation at the front.
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) { storage.append(element) }

    /// Mutates the front element in place.
    mutating func withFirst<R>(_ body: (inout Element) throws -> R) rethrows -> R {
        try body(&storage[head])
    }

    /// The `i`-th element from the front.
    subscript(i: Int) -> Element {
        get { storage[head + i] }
        set { storage[head + i] = newValue }
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 16)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes the first element matching `predicate`; returns it and whether it was at the front.
    mutating func remove(where predicate: (Element) -> Bool) -> (element: Element, wasFront: Bool)? {
        guard let i = storage[head...].firstIndex(where: predicate) else { return nil }
        let wasFront = i == head
        let element = storage.remove(at: i)
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 16)
            head = 0
        }
        return (element, wasFront)
    }

    /// Empties the queue, returning what it held, front first.
    mutating func removeAll() -> [Element] {
        let rest = Array(storage[head...])
        storage = []
        head = 0
        return rest
    }
}
