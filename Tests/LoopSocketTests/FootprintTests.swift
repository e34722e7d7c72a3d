@testable import EpollLoop
import Glibc
@testable import LoopSocket
import XCTest

/// What an idle connection's objects take on the heap (glibc's usable chunk sizes), held to the budgets that
/// docs/benchmarks.md accounts for ("Idle memory"): a field added to one of these objects shows here as a
/// failure, not months later as a slower, fatter server. Budgets are upper bounds for this toolchain's
/// layouts; a smaller object passes.
final class FootprintTests: XCTestCase {
    /// The bytes malloc reserved for an object (its chunk less the 8-byte header).
    private func usable(_ object: AnyObject) -> Int {
        mallocUsableSize(Unmanaged.passUnretained(object).toOpaque())
    }

    func testTheObjectsOfAnIdleConnectionStayWithinTheirBudgets() throws {
        let socket = GCDAsyncSocket(delegate: nil, delegateQueue: nil)
        let handler = AsyncSocketHandler()
        // The socket object: instance 216 bytes (a 224-byte chunk).
        XCTAssertLessThanOrEqual(usable(socket), 216, "GCDAsyncSocket")
        // Its shared state (49 bytes) and 4-byte lock in one object: 72 bytes (an 80-byte chunk).
        XCTAssertLessThanOrEqual(MemoryLayout<GCDAsyncSocket.SharedState>.size, 49, "SharedState")
        XCTAssertLessThanOrEqual(usable(socket.shared.storage), 72, "Locked<SharedState>")
        // An AsyncSocket's handler: 87 bytes (a 96-byte chunk); listener, connect and TLS state is out of line.
        XCTAssertLessThanOrEqual(usable(handler), 88, "AsyncSocketHandler")
        // One queued read (an idle connection has one): 88 bytes, in a queue storage of capacity 1.
        XCTAssertLessThanOrEqual(MemoryLayout<ReadOp>.stride, 88, "ReadOp")
    }
}

/// glibc's `malloc_usable_size`, which the Glibc module does not export.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int
