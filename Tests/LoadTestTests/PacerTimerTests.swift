import Dispatch
import EpollLoop
import Synchronization
import XCTest
@testable import LoadTest

/// The open-loop pacer's timer: an expiration fires with the time it is handled at, and one that a re-arm made
/// stale (reported by epoll, then cleared by arming a later deadline before it was handled) fires nothing.
final class PacerTimerTests: XCTestCase {
    /// What the timer did, recorded on the loop and read by the test once the loop has run the body.
    private struct Outcome {
        var staleFires: [UInt64] = []
        var dueFires: [UInt64] = []
        var armedAfterStale: UInt64 = 0
        var armedAfterDue: UInt64 = 0
        var due: UInt64 = 0
    }

    private final class Recorded: Sendable {
        let outcome = Mutex(Outcome())
    }

    func testAStaleExpirationFiresNothingAndADueOneFiresWithTheTime() throws {
        let group = try EventLoopGroup(numberOfLoops: 1, name: "pacer-timer")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        let recorded = Recorded()
        let done = DispatchSemaphore(value: 0)
        try group.loops[0].execute {
            final class Fires { var times: [UInt64] = [] }
            let fires = Fires()
            let timer = PacerTimer(loop: group.loops[0]) { now in fires.times.append(now) }
            // Armed for later: an event handled now is one the re-arm made stale.
            let later = Deadline.now().uptimeNanoseconds + 60_000_000_000
            timer.arm(at: later)
            timer.handleIO(.readable)
            let staleFires = fires.times
            let armedAfterStale = timer.armedAt
            // Armed for a time already past: the expiration is real.
            let due = Deadline.now().uptimeNanoseconds - 1
            timer.arm(at: due)
            timer.handleIO(.readable)
            recorded.outcome.withLock {
                $0 = Outcome(staleFires: staleFires, dueFires: fires.times, armedAfterStale: armedAfterStale,
                             armedAfterDue: timer.armedAt, due: due)
            }
            timer.close()
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the loop ran the body")
        let result = recorded.outcome.withLock { $0 }
        XCTAssertEqual(result.staleFires, [], "a stale expiration fires nothing")
        XCTAssertNotEqual(result.armedAfterStale, 0, "and leaves the later deadline armed")
        XCTAssertEqual(result.dueFires.count, 1, "a due expiration fires once")
        XCTAssertGreaterThanOrEqual(result.dueFires.first ?? 0, result.due, "with a time at or past its deadline")
        XCTAssertEqual(result.armedAfterDue, 0, "and leaves the timer disarmed when nothing re-armed it")
    }
}
