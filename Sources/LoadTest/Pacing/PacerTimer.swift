import EpollLoop
import Glibc

/// A one-shot, nanosecond-resolution timer on an event loop, for open-loop pacing: a `timerfd` registered
/// with the loop (the loop's own timer wheel ticks in milliseconds, too coarse for request schedules that
/// are microseconds apart). Falls back to the wheel where `timerfd` is unavailable. Loop-confined.
final class PacerTimer: LoopIOHandler {
    private typealias Create = @convention(c) (Int32, Int32) -> Int32
    private typealias SetTime =
        @convention(c) (Int32, Int32, UnsafePointer<itimerspec>, UnsafeMutablePointer<itimerspec>?) -> Int32

    /// `timerfd_create` and `timerfd_settime`, looked up once (the Glibc module does not import
    /// `<sys/timerfd.h>`).
    private static let functions: (Create, SetTime)? = {
        guard let create = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "timerfd_create"),
              let set = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "timerfd_settime") else { return nil }
        return (unsafeBitCast(create, to: Create.self), unsafeBitCast(set, to: SetTime.self))
    }()

    private let loop: EventLoop
    /// Called with the time it fired at (ns).
    private let fire: (UInt64) -> Void
    private var fd: Int32 = -1
    /// The deadline armed (ns), or 0 when disarmed.
    private(set) var armedAt: UInt64 = 0
    private var wheelTimer: TimerID = .invalid

    /// A timer calling `fire` on `loop`, with the time, when an armed deadline passes. Call on the loop.
    init(loop: EventLoop, fire: @escaping (UInt64) -> Void) {
        self.loop = loop
        self.fire = fire
        if let (create, _) = Self.functions {
            // TFD_NONBLOCK | TFD_CLOEXEC
            let timer = create(CLOCK_MONOTONIC, Int32(O_NONBLOCK) | Int32(O_CLOEXEC))
            if timer >= 0 {
                do {
                    try loop.register(fd: timer, interest: .readable, handler: self)
                    fd = timer
                } catch {
                    Glibc.close(timer)
                }
            }
        }
    }

    /// Fires once at `deadline` (monotonic ns), replacing any deadline armed before.
    func arm(at deadline: UInt64) {
        guard deadline != armedAt else { return }
        armedAt = deadline
        if fd >= 0, let (_, set) = Self.functions {
            let at = max(deadline, 1)
            var spec = itimerspec()
            spec.it_value.tv_sec = Int(at / 1_000_000_000)
            spec.it_value.tv_nsec = Int(at % 1_000_000_000)
            if set(fd, 1 /* TFD_TIMER_ABSTIME */, &spec, nil) == 0 { return }
            // The timerfd cannot be armed: the wheel takes over for good. Left registered, it would keep a
            // deadline armed before, and its expiration, seen as stale by `handleIO` (the deadline it checks is
            // the wheel's), would be reported again by the level-triggered loop on every pass until then.
            try? loop.close(fd: fd)
            fd = -1
        }
        loop.cancelOnLoop(wheelTimer)
        wheelTimer = loop.scheduleOnLoop(at: deadline) { [weak self] in
            guard let self else { return }
            self.wheelTimer = .invalid
            self.armedAt = 0
            self.fire(Deadline.now().uptimeNanoseconds)
        }
    }

    /// The timerfd expired. Re-arming it (`timerfd_settime`) clears its expiration count, so the `read` that
    /// would do the same is needed only when `fire` leaves the timer disarmed.
    ///
    /// An expiration can be stale by the time it is handled: a reply earlier in the same batch found a request
    /// due, sent it and armed the next deadline, which cleared the expiration epoll had already reported.
    /// Firing then would find nothing due and arm the same deadline again, one `timerfd_settime` for nothing
    /// (open loop at 10k/s with 50 µs of slack paid 1.15 of them per request against `httpgen`'s 0.99:
    /// `RATE=10000 CASES=http Benchmarks/profile/client-cost-per-request.sh`).
    func handleIO(_ events: IOEvents) {
        let now = Deadline.now().uptimeNanoseconds
        if armedAt > now { return }
        armedAt = 0
        fire(now)
        if armedAt == 0 && fd >= 0 {
            var expirations: UInt64 = 0
            _ = read(fd, &expirations, 8)
        }
    }

    /// Stops the timer and closes its descriptor. Call on the loop.
    func close() {
        loop.cancelOnLoop(wheelTimer)
        wheelTimer = .invalid
        if fd >= 0 {
            try? loop.close(fd: fd)
            fd = -1
        }
    }
}
