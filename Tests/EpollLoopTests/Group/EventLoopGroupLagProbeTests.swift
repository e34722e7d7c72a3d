import XCTest

@testable import EpollLoop

/// `EventLoopGroup.startLagProbe`: one probe timer on every loop, and none after `stopLagProbe`.
final class EventLoopGroupLagProbeTests: XCTestCase {
    func testTheGroupStartsAndStopsAProbeOnEveryLoop() throws {
        let group = try EventLoopGroup(numberOfLoops: 2, name: "probe-group")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        try group.startLagProbe()
        for loop in group.loops {
            let probe = try onLoop(loop) { (loop.pendingTimerCount, loop.lagProbe?.period) }
            XCTAssertEqual(probe.0, 1, loop.name)
            XCTAssertEqual(probe.1, 10_000_000, "the default resolution, \(loop.name)")
        }
        try group.stopLagProbe()
        for loop in group.loops {
            XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 0, loop.name)
        }
        try group.shutdownGracefully(timeout: .seconds(10))
        XCTAssertThrowsError(try group.startLagProbe()) { XCTAssertEqual($0 as? EventLoopError, .shutDown) }
    }
}
