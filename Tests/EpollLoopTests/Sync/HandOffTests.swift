import Dispatch
import XCTest

@testable import EpollLoop

/// `swift_task_getCurrent`, as LoopSocket's task runtime declares it: the running task, unretained.
@_silgen_name("cepoll_task_current")
private func currentTaskAddress() -> UnsafeRawPointer?

/// `HandOff`: the ThreadSanitizer annotations around the library's continuations.
///
/// The release is keyed by the continuation's task and the acquire by the running task, so the two must be
/// the same address, or a sanitizer build would report the races the annotations exist to explain. The
/// sanitizer run of .ci/run shows the annotations at work; this shows their premise, in every build.
final class HandOffTests: XCTestCase {
    /// A continuation resumed from another thread: its task address is the one the resumed task sees as
    /// its own, and the value written before the hand-off is the one read after it.
    func testContinuationAddressIsTheResumedTask() async {
        let (released, value): (UInt, Int) = await withUnsafeContinuation { continuation in
            let address = UInt(bitPattern: continuation.taskAddress)
            DispatchQueue.global().async { continuation.handOff(returning: (address, 42)) }
        }
        HandOff.received()
        XCTAssertEqual(UInt(bitPattern: currentTaskAddress()), released)
        XCTAssertEqual(value, 42)
    }

    /// Outside a task there is nothing to acquire, and `received()` must not fault.
    func testReceivedOutsideATaskIsHarmless() {
        XCTAssertNil(currentTaskAddress())
        HandOff.received()
    }
}
