import XCTest

@testable import LoopSocket

/// `OpQueue`: FIFO order across the ring's wrap and growth, removal from the middle, draining, and that
/// every element is released exactly once (moved out, drained, or destroyed with the queue).
final class OpQueueTests: XCTestCase {
    /// An element that counts its live instances, so a leak or a double release shows.
    final class Tracked {
        nonisolated(unsafe) static var live = 0
        let value: Int
        init(_ value: Int) { self.value = value; Tracked.live += 1 }
        deinit { Tracked.live -= 1 }
    }

    override func setUp() {
        Tracked.live = 0
    }

    func testShrinkToFitKeepsOrderAndGivesBackStorage() {
        var queue = OpQueue<Tracked>()
        for i in 0..<5 { queue.append(Tracked(i)) }
        XCTAssertEqual(queue.storageCapacity, 8)
        for i in 0..<3 { XCTAssertEqual(queue.removeFirst().value, i) }
        queue.shrinkToFit()
        XCTAssertEqual(queue.storageCapacity, 2, "the two left, rounded up to a power of two")
        XCTAssertEqual(queue.front { $0.value }, 3)
        queue.append(Tracked(5))
        XCTAssertEqual((0..<3).map { i in queue.at(i) { $0.value } }, [3, 4, 5], "order kept across the move")
        while !queue.isEmpty { _ = queue.removeFirst() }
        queue.shrinkToFit()
        XCTAssertEqual(queue.storageCapacity, 0, "an empty queue keeps none")
        queue.append(Tracked(6))
        XCTAssertEqual(queue.storageCapacity, 1, "and grows again from one")
        XCTAssertEqual(Tracked.live, 1)
    }

    func testFIFOAcrossWrapAndGrowth() {
        var queue = OpQueue<Tracked>()
        var next = 0
        var expected = 0
        // Interleave appends and removals so the ring's start moves, then let it grow while wrapped.
        for round in 0..<50 {
            for _ in 0..<(round % 7 + 1) { queue.append(Tracked(next)); next += 1 }
            for _ in 0..<(round % 5) where !queue.isEmpty {
                XCTAssertEqual(queue.removeFirst().value, expected)
                expected += 1
            }
            XCTAssertEqual(queue.count, next - expected)
            XCTAssertEqual(queue.front { $0.value }, queue.isEmpty ? nil : expected)
        }
        for i in 0..<queue.count { XCTAssertEqual(queue.at(i) { $0.value }, expected + i) }
        while !queue.isEmpty {
            XCTAssertEqual(queue.removeFirst().value, expected)
            expected += 1
        }
        XCTAssertEqual(expected, next)
        XCTAssertNil(queue.front { $0.value })
        XCTAssertEqual(Tracked.live, 0)
    }

    func testRemoveWhereFromFrontAndMiddle() {
        do {
            var queue = OpQueue<Tracked>()
            for i in 0..<6 { queue.append(Tracked(i)) }
            _ = queue.removeFirst()  // start at 1, so the ring is offset
            queue.append(Tracked(6))

            let middle = queue.remove { $0.value == 4 }
            XCTAssertEqual(middle?.element.value, 4)
            XCTAssertEqual(middle?.wasFront, false)
            let front = queue.remove { $0.value == 1 }
            XCTAssertEqual(front?.element.value, 1)
            XCTAssertEqual(front?.wasFront, true)
            XCTAssertNil(queue.remove { $0.value == 42 })
            XCTAssertEqual(queue.removeAll().map(\.value), [2, 3, 5, 6])
            XCTAssertTrue(queue.isEmpty)
        }
        XCTAssertEqual(Tracked.live, 0)
    }

    func testWithFirstMutatesInPlace() {
        var queue = OpQueue<Int>()
        queue.append(1)
        queue.append(2)
        queue.withFirst { $0 += 10 }
        XCTAssertEqual(queue.removeAll(), [11, 2])
    }

    func testDrainHandsOverEveryElementAndTheQueueIsReusable() {
        var queue = OpQueue<Tracked>()
        for i in 0..<5 { queue.append(Tracked(i)) }
        var seen: [Int] = []
        queue.drain { seen.append($0.value) }
        XCTAssertEqual(seen, [0, 1, 2, 3, 4])
        XCTAssertEqual(Tracked.live, 0)
        queue.append(Tracked(7))
        XCTAssertEqual(queue.front { $0.value }, 7)
        XCTAssertEqual(queue.removeAll().map(\.value), [7])
        XCTAssertTrue(queue.removeAll().isEmpty, "an empty queue drains to nothing")
    }

    func testElementsStillQueuedAreReleasedWithTheQueue() {
        do {
            var queue = OpQueue<Tracked>()
            for i in 0..<9 { queue.append(Tracked(i)) }
            _ = queue.removeFirst()
            _ = queue.removeFirst()
            XCTAssertEqual(Tracked.live, 7)
        }
        XCTAssertEqual(Tracked.live, 0)
    }

    /// The owner's inline slot: one element lives there, a second moves both to allocated storage (and the
    /// slot is not touched again until handed back), emptying keeps the slot, and everything is released
    /// once, from the slot as from allocated storage.
    func testAnInlineSlotHoldsOneElementAndIsNeverFreed() {
        let slot = UnsafeMutablePointer<Tracked>.allocate(capacity: 1)
        defer { slot.deallocate() }
        do {
            var queue = OpQueue<Tracked>()
            queue.useInlineSlot(slot)
            queue.append(Tracked(0))
            XCTAssertTrue(queue.usesInlineSlot)
            XCTAssertEqual(slot.pointee.value, 0, "the element is in the slot")
            XCTAssertEqual(queue.removeFirst().value, 0)
            queue.append(Tracked(1))
            queue.append(Tracked(2))
            XCTAssertFalse(queue.usesInlineSlot, "two elements moved out of the slot")
            XCTAssertEqual(queue.storageCapacity, 2)
            XCTAssertEqual(queue.removeFirst().value, 1)
            queue.shrinkToFit(inlineSlot: slot)
            XCTAssertTrue(queue.usesInlineSlot, "one element goes back to the slot")
            XCTAssertEqual(queue.front { $0.value }, 2)
            var seen: [Int] = []
            queue.drain { seen.append($0.value) }
            XCTAssertEqual(seen, [2])
            XCTAssertTrue(queue.usesInlineSlot, "draining keeps the slot")
            for i in 3..<6 { queue.append(Tracked(i)) }
            XCTAssertEqual(queue.removeAll().map(\.value), [3, 4, 5])
            XCTAssertFalse(queue.usesInlineSlot)
            queue.useInlineSlot(slot)
            XCTAssertTrue(queue.usesInlineSlot, "handed back once empty")
            queue.append(Tracked(6))
            XCTAssertEqual(Tracked.live, 1)
        }
        XCTAssertEqual(Tracked.live, 0, "destroyed with the queue, from the slot")
    }
}
