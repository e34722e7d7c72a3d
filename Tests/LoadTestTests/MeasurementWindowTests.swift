@testable import LoadTest
import XCTest

/// The measuring window's states, and the readings it takes at its two edges.
final class MeasurementWindowTests: XCTestCase {
    /// Readings that count up by one each time they are taken, and note when the series began.
    private final class Clock {
        var cpu = 0.0
        var seriesBegan: UInt64?
    }

    private func window(_ clock: Clock, warmup: Double, duration: Double) -> MeasurementWindow {
        let readings = MeasurementWindow.Readings(
            clientCPU: { clock.cpu += 1; return clock.cpu },
            serverCPU: { nil },
            serverLoops: nil,
            beginSeries: { clock.seriesBegan = $0 })
        return MeasurementWindow(loadStart: 1_000, warmup: warmup, duration: duration, readings: readings)
    }

    func testWarmsUpThenMeasuresThenCloses() {
        let clock = Clock()
        var w = window(clock, warmup: 1, duration: 2)
        w.openUnlessWarmingUp()
        XCTAssertEqual(w.state, .warmingUp)
        w.advance(to: 500_001_000, now: 500_001_000, interrupted: false)
        XCTAssertEqual(w.state, .warmingUp)
        w.advance(to: w.start, now: w.start, interrupted: false)
        XCTAssertEqual(w.state, .measuring)
        XCTAssertEqual(clock.seriesBegan, w.start)
        w.advance(to: w.start + 1_000_000_000, now: w.start + 1_000_000_000, interrupted: false)
        XCTAssertEqual(w.state, .measuring)
        w.advance(to: w.end, now: w.end + 5, interrupted: false)
        XCTAssertEqual(w.state, .closed)
        XCTAssertEqual(w.seconds, 2)
        XCTAssertEqual(w.clientCPUSeconds, 1)  // read at the start (1), then at the end (2)
        XCTAssertNil(w.serverCPUSeconds)
        XCTAssertNil(w.serverLoopFigures())
    }

    func testWithoutAWarmUpTheWindowOpensWithTheLoad() {
        let clock = Clock()
        var w = window(clock, warmup: 0, duration: 1)
        XCTAssertEqual(w.state, .warmingUp)
        w.openUnlessWarmingUp()
        XCTAssertEqual(w.state, .measuring)
        XCTAssertEqual(clock.seriesBegan, 1_000)
    }

    func testAnInterruptDuringTheWarmUpClosesAWindowThatNeverOpened() {
        let clock = Clock()
        var w = window(clock, warmup: 10, duration: 10)
        let now: UInt64 = 2_000_000_000
        XCTAssertEqual(w.cut(at: now), w.start)  // not before the window's start
        w.advance(to: 1_000_001_000, now: now, interrupted: true)
        XCTAssertEqual(w.state, .closed)
        XCTAssertEqual(w.seconds, 0)
        XCTAssertNil(w.clientCPUSeconds)
        XCTAssertNil(clock.seriesBegan)
    }

    func testAnInterruptCutsTheWindowWhereItCame() {
        let clock = Clock()
        var w = window(clock, warmup: 0, duration: 10)
        w.openUnlessWarmingUp()
        let now = w.start + 3_000_000_000
        XCTAssertEqual(w.cut(at: now), now)
        w.advance(to: w.start + 4_000_000_000, now: now, interrupted: true)
        XCTAssertEqual(w.state, .closed)
        XCTAssertEqual(w.seconds, 3)
        XCTAssertNil(w.cut(at: now + 1), "a window that ended already is not cut again")
    }
}
