import Glibc

extension EventLoop {
    /// The loop whose thread is calling, or nil on a thread that runs no loop. Any thread.
    ///
    /// For code that must know whether waiting for another loop could hold a loop still (LoopSocket's
    /// synchronous calls): `inEventLoop` answers for one loop, this for all of them, without a registry of
    /// loops (a weak reference to each would give every loop a side table, and make every retain and release
    /// of a loop, a few per connection, take the runtime's slow path).
    package static var current: EventLoop? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Marks the calling thread as this loop's for the duration of `run()` (unretained: the loop outlives
    /// its own `run()`).
    func setCurrent(_ running: Bool) {
        pthread_setspecific(Self.currentKey, running ? Unmanaged.passUnretained(self).toOpaque() : nil)
    }

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        guard pthread_key_create(&key, nil) == 0 else { fatalError("EpollLoop: pthread_key_create failed") }
        return key
    }()
}
