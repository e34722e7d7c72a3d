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
        // The socket object, with its shared state, that state's lock and the slot of its first queued read
        // inline: 344 bytes (a 352-byte chunk), the face's copy of the delegate and its queue included.
        XCTAssertLessThanOrEqual(usable(socket), 344, "GCDAsyncSocket")
        // The shared state: 33 bytes.
        XCTAssertLessThanOrEqual(MemoryLayout<GCDAsyncSocket.SharedState>.size, 33, "SharedState")
        // An AsyncSocket's handler: 67 bytes (an 80-byte chunk); listener, connect, TLS, backpressure and
        // dropped-write state is out of line.
        XCTAssertLessThanOrEqual(usable(handler), 72, "AsyncSocketHandler")
        // The connection's state: the phase byte (whose spare values are idle and listening), a pad byte and
        // the stream's 16 bits. Four bytes read with one load; stored as enums it was six, and every test of
        // the case combined them all (ConnectionState.Stream says why).
        XCTAssertLessThanOrEqual(MemoryLayout<ConnectionState>.size, 4, "ConnectionState")
        // One queued read (an idle connection has one): 88 bytes, in the socket's inline slot.
        XCTAssertLessThanOrEqual(MemoryLayout<ReadOp>.stride, 88, "ReadOp")
        XCTAssertLessThanOrEqual(MemoryLayout<ReadOp>.size, MemoryLayout<ConnectionEngine.ReadSlot>.size, "ReadSlot")
        // The loop's registration of the descriptor: 24 bytes in the fd-indexed table.
        XCTAssertLessThanOrEqual(MemoryLayout<RegistrationTable.Slot>.stride, 24, "RegistrationTable.Slot")
    }

    /// The inline read slot and the lock word are fields of the socket object itself, at the same address
    /// on every access (the read queue keeps a pointer to the slot; the C lock works on the word's address).
    func testTheInlineSlotAndTheLockWordLiveInTheSocketObject() throws {
        let socket = GCDAsyncSocket(delegate: nil, delegateQueue: nil)
        let base = UInt(bitPattern: Unmanaged.passUnretained(socket).toOpaque())
        let end = base + UInt(usable(socket))
        let slot = UInt(bitPattern: socket.inlineReadSlot)
        XCTAssertGreaterThanOrEqual(slot, base)
        XCTAssertLessThanOrEqual(slot + UInt(MemoryLayout<ReadOp>.size), end)
        XCTAssertEqual(slot, UInt(bitPattern: socket.inlineReadSlot))
        let lock = withUnsafePointer(to: socket.sharedLock) { UInt(bitPattern: $0) }
        XCTAssertGreaterThanOrEqual(lock, base)
        XCTAssertLessThanOrEqual(lock + 4, end)
        XCTAssertEqual(lock, withUnsafePointer(to: socket.sharedLock) { UInt(bitPattern: $0) })
        // A new socket's read queue stores in the slot.
        XCTAssertTrue(socket.reads.usesInlineSlot)
    }
}

/// glibc's `malloc_usable_size`, which the Glibc module does not export.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int
