/// A value kept on the heap behind copy-on-write, so that a struct holding it carries one pointer.
///
/// For state that every socket has but few set (or that many sockets share unchanged): copies share one box,
/// and the first mutation through a shared copy gives that copy its own box, as `Array` does. Reading costs
/// one load through the pointer.
struct HeapBox<Value> {
    private final class Storage {
        // Unchecked: a runtime exclusivity check costs about 230 instructions (see GCDAsyncSocket's fields),
        // and the box is reached only through `value`, whose writes hold the only reference.
        @exclusivity(unchecked) var value: Value

        init(_ value: Value) {
            self.value = value
        }
    }

    private var storage: Storage

    init(_ value: Value) {
        storage = Storage(value)
    }

    var value: Value {
        _read { yield storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) {
                storage = Storage(storage.value)
            }
            yield &storage.value
        }
    }
}
