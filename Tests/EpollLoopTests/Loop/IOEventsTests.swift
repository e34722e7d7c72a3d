import CEpollShim
import EpollLoop
import XCTest

/// IOEvents spells epoll's bits as inlinable literals (so other modules fold them): they must stay epoll's.
final class IOEventsTests: XCTestCase {
    func testTheConditionsAreEpollsBits() {
        XCTAssertEqual(IOEvents.readable.rawValue, CEPOLL_IN)
        XCTAssertEqual(IOEvents.writable.rawValue, CEPOLL_OUT)
        XCTAssertEqual(IOEvents.readHangup.rawValue, CEPOLL_RDHUP)
        XCTAssertEqual(IOEvents.hangup.rawValue, CEPOLL_HUP)
        XCTAssertEqual(IOEvents.error.rawValue, CEPOLL_ERR)
        XCTAssertEqual(IOEvents.oneShot.rawValue, CEPOLL_ONESHOT)
    }
}
