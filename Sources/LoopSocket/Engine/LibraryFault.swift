import EpollLoop
import Glibc
import Synchronization

/// A failure on a descriptor the library owns: `EBADF`, a registration that is not there, a close the
/// kernel refused. No peer and no caller can cause one; it means the library lost track of a descriptor.
///
/// Debug builds stop at it (`assertionFailure`), so a test that provokes one fails where it happened.
/// Release builds write one line to standard error and go on; where a connection is involved the caller
/// also ends it with the typed error. Never swallowed silently (no `try?` on an owned descriptor).
enum LibraryFault {
    /// Replaces the debug stop, for the tests that provoke a fault on purpose (debug and test builds only).
    nonisolated(unsafe) static var testHook: (@Sendable (String) -> Void)?

    /// Reports `what` went wrong with `error`.
    static func report(_ what: StaticString, _ error: any Error, file: StaticString = #fileID, line: UInt = #line) {
        let message = "LoopSocket: \(what): \(error) (\(file):\(line))"
        #if DEBUG
        if let testHook {
            testHook(message)
            return
        }
        assertionFailure(message)
        #endif
        let line = message + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    /// Closes a descriptor the library owns and has not registered with a loop, reporting a failure.
    static func close(_ fd: Int32, _ what: StaticString = "closing an owned descriptor", file: StaticString = #fileID, line: UInt = #line) {
        do {
            try Syscall.close(fd)
        } catch {
            report(what, error, file: file, line: line)
        }
    }

    /// Closes a descriptor registered with `loop` (deregistering it), reporting a failure.
    /// `soleReference`: no other descriptor refers to its file (``EventLoop/close(fd:soleReference:)``).
    static func close(_ fd: Int32, on loop: EventLoop, soleReference: Bool = false, _ what: StaticString = "closing a registered descriptor", file: StaticString = #fileID, line: UInt = #line) {
        do {
            try loop.close(fd: fd, soleReference: soleReference)
        } catch {
            report(what, error, file: file, line: line)
        }
    }
}
