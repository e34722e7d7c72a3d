import EpollLoop
import XCTest

@testable import LoopSocket

/// `OwnedDescriptor`: the loop's two calls reach the descriptor's engine: readiness with the descriptor
/// itself, shutdown as the engine's close.
final class OwnedDescriptorTests: XCTestCase {
    final class Engine: DescriptorOwner {
        var calls: [String] = []
        func loopWillShutDown() { calls.append("shut down") }
    }

    final class Descriptor: OwnedDescriptor {
        let fd: Int32 = 7
        weak var owner: Engine?
        init(_ owner: Engine) { self.owner = owner }
        var engine: Engine? { owner }
        func ready(_ events: IOEvents, for engine: Engine) {
            engine.calls.append("ready \(events.contains(.readable)) fd \(fd)")
        }
    }

    func testTheLoopsCallsReachTheEngine() {
        let engine = Engine()
        let descriptor = Descriptor(engine)
        let handler: any LoopIOHandler = descriptor  // as the loop holds it
        handler.handleIO(.readable)
        handler.loopWillShutDown()
        XCTAssertEqual(engine.calls, ["ready true fd 7", "shut down"])
    }
}
