@testable import EpollLoop
import XCTest

/// The loop's fd-indexed table: slots exist up to the highest descriptor seen, generations make events for
/// an earlier registration of a descriptor stale, and growth keeps what was registered.
final class RegistrationTableTests: XCTestCase {
    final class Handler: LoopIOHandler {
        func handleIO(_ events: IOEvents) {}
    }

    func testSlotsGrowToTheHighestDescriptorAndKeepTheirRegistrations() {
        var table = RegistrationTable()
        let low = Handler()
        let high = Handler()
        let lowGeneration = table.add(3, interest: .readable, handler: low)
        XCTAssertEqual(table.slotCount, 4, "slots up to descriptor 3, not the allocated capacity")
        let highGeneration = table.add(1_000, interest: .writable, handler: high)
        XCTAssertEqual(table.slotCount, 1_001)
        XCTAssertTrue(table.handler(fd: 3, generation: lowGeneration) === low, "kept across the growth")
        XCTAssertTrue(table.handler(fd: 1_000, generation: highGeneration) === high)
        XCTAssertEqual(table.interest(of: 3), .readable)
        XCTAssertEqual(table.interest(of: 1_000), .writable)
        XCTAssertNil(table.interest(of: 500), "a slot in between is empty")
        XCTAssertFalse(table.isRegistered(2_000), "past the slots")
        XCTAssertNil(table.handler(fd: 2_000, generation: 1))
        XCTAssertEqual(table.registeredDescriptors, [3, 1_000])
        XCTAssertEqual(table.count, 2)
    }

    func testAnEventForAnEarlierRegistrationIsStale() {
        var table = RegistrationTable()
        let first = Handler()
        let second = Handler()
        let old = table.add(7, interest: .readable, handler: first)
        table.remove(7)
        XCTAssertFalse(table.isRegistered(7))
        XCTAssertNil(table.handler(fd: 7, generation: old), "removed")
        let new = table.add(7, interest: .readable, handler: second)
        XCTAssertNotEqual(old, new)
        XCTAssertNil(table.handler(fd: 7, generation: old), "the old registration's event")
        XCTAssertTrue(table.handler(fd: 7, generation: new) === second)
        XCTAssertEqual(table.count, 1)
    }

    /// The loop calls handlers without retaining them, so while it dispatches, a handler the table drops
    /// (removed, or replaced by `reassign`) is kept (`retired`) until the loop releases it; outside a
    /// dispatch it is released at once, as before.
    func testHandlersDroppedWhileDispatchingAreKeptUntilReleased() {
        var table = RegistrationTable()
        weak var removed: Handler?
        weak var replaced: Handler?
        do {
            let a = Handler()
            let b = Handler()
            _ = table.add(3, interest: .readable, handler: a)
            _ = table.add(4, interest: .readable, handler: b)
            removed = a
            replaced = b
        }
        table.isDispatching = true
        table.remove(3)
        table.setHandler(4, Handler())
        XCTAssertNotNil(removed, "released while the loop may still be inside its call")
        XCTAssertNotNil(replaced, "released while the loop may still be inside its call")
        XCTAssertTrue(table.hasRetired)
        XCTAssertEqual(table.moreRetired.count, 1, "the second one dropped in the same call")
        table.isDispatching = false
        table.retired = nil
        table.moreRetired.removeAll()
        XCTAssertNil(removed)
        XCTAssertNil(replaced)

        weak var dropped: Handler?
        do {
            let c = Handler()
            _ = table.add(5, interest: .readable, handler: c)
            dropped = c
        }
        table.remove(5)
        XCTAssertNil(dropped, "outside a dispatch nothing is kept")
        XCTAssertFalse(table.hasRetired)
    }
}
