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
        // The socket object: instance 232 bytes (a 240-byte chunk), the face's copy of the delegate and its
        // queue for the getters included.
        XCTAssertLessThanOrEqual(usable(socket), 232, "GCDAsyncSocket")
        // Its shared state (33 bytes) and 4-byte lock in one object: 56 bytes (a 64-byte chunk).
        XCTAssertLessThanOrEqual(MemoryLayout<GCDAsyncSocket.SharedState>.size, 33, "SharedState")
        XCTAssertLessThanOrEqual(usable(socket.shared.storage), 56, "Locked<SharedState>")
        // The two together, which is what a field moved from one to the other must not grow: 288 bytes.
        XCTAssertLessThanOrEqual(usable(socket) + usable(socket.shared.storage), 288, "socket and shared state")
        // An AsyncSocket's handler: 87 bytes (a 96-byte chunk); listener, connect and TLS state is out of line.
        XCTAssertLessThanOrEqual(usable(handler), 88, "AsyncSocketHandler")
        // The connection's state: the phase byte (whose spare values are idle and listening), a pad byte and
        // the stream's 16 bits. Four bytes read with one load; stored as enums it was six, and every test of
        // the case combined them all (ConnectionState.Stream says why).
        XCTAssertLessThanOrEqual(MemoryLayout<ConnectionState>.size, 4, "ConnectionState")
        // One queued read (an idle connection has one): 88 bytes, in a queue storage of capacity 1.
        XCTAssertLessThanOrEqual(MemoryLayout<ReadOp>.stride, 88, "ReadOp")
    }
}

/// glibc's `malloc_usable_size`, which the Glibc module does not export.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int
