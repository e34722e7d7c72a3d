import CEpollShim
import Glibc

/// A pthread running one event loop: named, optionally pinned to a CPU, joined once.
final class LoopThread: @unchecked Sendable {
    private var handle: pthread_t?
    private var joined = false

    private final class Start {
        let loop: EventLoop
        let cpu: Int?
        init(loop: EventLoop, cpu: Int?) {
            self.loop = loop
            self.cpu = cpu
        }
    }

    /// Starts a thread that names itself after the loop, pins itself to `cpu` if given, and runs the loop.
    init(loop: EventLoop, cpu: Int?) throws(EventLoopError) {
        let start = Unmanaged.passRetained(Start(loop: loop, cpu: cpu)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            // The kernel keeps 15 bytes of a thread name: cut whole characters (a cut inside one is not UTF-8).
            var name = Substring(start.loop.name)
            while name.utf8.count > 15 { name.removeLast() }
            _ = cepoll_set_thread_name(String(name))
            if let cpu = start.cpu { _ = cepoll_pin_thread_to_cpu(Int32(cpu)) }
            try? start.loop.run()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw .system(SyscallError(.open, errno: Errno(rawValue: rc)))
        }
        handle = thread
    }

    /// Waits for the thread to exit; later calls return at once. Only one thread may call it.
    func join() {
        guard !joined, let handle else { return }
        joined = true
        pthread_join(handle, nil)
    }
}
