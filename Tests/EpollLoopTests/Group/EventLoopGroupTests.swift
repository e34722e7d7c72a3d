import CEpollShim
import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// `EventLoopGroup`: round-robin, named and pinned threads, shutdown that joins.
final class EventLoopGroupTests: XCTestCase {
    func testNextIsRoundRobin() throws {
        let group = try EventLoopGroup(numberOfLoops: 3, name: "rr")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        XCTAssertEqual(group.loops.count, 3)
        let picks = (0..<9).map { _ in group.next() }
        for (i, loop) in picks.enumerated() {
            XCTAssertTrue(loop === group.loops[i % 3], "pick \(i)")
        }
        XCTAssertEqual(group.loops.map(\.name), ["rr-0", "rr-1", "rr-2"])
        XCTAssertEqual(Set(group.loops.map { ObjectIdentifier($0) }).count, 3)
    }

    func testAtLeastOneLoop() throws {
        let group = try EventLoopGroup(numberOfLoops: 0, name: "min")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        XCTAssertEqual(group.loops.count, 1)
        XCTAssertTrue(group.next() === group.next())
        XCTAssertGreaterThanOrEqual(EventLoopGroup.coreCount, 1)
    }

    func testEachLoopRunsOnItsOwnNamedThread() throws {
        let group = try EventLoopGroup(numberOfLoops: 2, name: "named")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        var tids: [Int32] = []
        for (i, loop) in group.loops.enumerated() {
            let (tid, comm, current) = try onLoop(loop) { () -> (Int32, String?, Bool) in
                let tid = cepoll_gettid()
                let comm = readSmallFile("/proc/self/task/\(tid)/comm")
                return (tid, comm, group.currentLoop === loop)
            }
            XCTAssertEqual(comm, "named-\(i)\n")
            XCTAssertTrue(current, "currentLoop on loop \(i)")
            tids.append(tid)
        }
        XCTAssertNotEqual(tids[0], tids[1])
        XCTAssertFalse(tids.contains(cepoll_gettid()))
        XCTAssertNil(group.currentLoop, "not on a loop here")
    }

    func testLongAndMultibyteNamesAreCutToFitTheKernelsLimit() throws {
        // The kernel keeps 15 bytes of a thread name; the cut must not split a character (nor crash).
        let group = try EventLoopGroup(numberOfLoops: 1, name: "xложка-петля-очень-длинное")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        let comm = try onLoop(group.loops[0]) { currentThreadInfo()?.name }
        // The longest prefix of whole characters within 15 bytes: 1 + 5 * 2 + 1 + 2 = 14 bytes.
        let expected = longestPrefix(of: group.loops[0].name, fittingIn: 15)
        XCTAssertEqual(expected, "xложка-п")
        XCTAssertEqual(comm, expected)

        let ascii = try EventLoopGroup(numberOfLoops: 1, name: "a-rather-long-loop-name")
        defer { XCTAssertNoThrow(try ascii.shutdownGracefully(timeout: .seconds(10))) }
        XCTAssertEqual(try onLoop(ascii.loops[0]) { currentThreadInfo()?.name }, "a-rather-long-l")
    }

    private func longestPrefix(of name: String, fittingIn bytes: Int) -> String {
        var result = ""
        for character in name {
            if result.utf8.count + String(character).utf8.count > bytes { break }
            result.append(character)
        }
        return result
    }

    func testPinnedThreadsRunOnTheirCPU() throws {
        let allowed = allowedCPUs(readSmallFile("/proc/self/status")?
            .split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
            .map { String($0.dropFirst("Cpus_allowed_list:".count)).trimmingCharacters(in: .whitespaces) } ?? "")
        XCTAssertEqual(allowed.count, EventLoopGroup.coreCount)
        let count = max(2, allowed.count)
        let group = try EventLoopGroup(numberOfLoops: count, name: "pinned", pinThreads: true)
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        for (i, loop) in group.loops.enumerated() {
            let info = try XCTUnwrap(try onLoop(loop) { currentThreadInfo() })
            // Loop i is pinned to the i-th CPU this process may use.
            let expected = allowed[i % allowed.count]
            XCTAssertEqual(info.allowedCPUs, "\(expected)", "affinity of loop \(i)")
            XCTAssertEqual(info.cpu, expected, "CPU that loop \(i) runs on")
        }
        // Unpinned loops keep the process's whole mask.
        let free = try EventLoopGroup(numberOfLoops: 1, name: "free")
        defer { XCTAssertNoThrow(try free.shutdownGracefully(timeout: .seconds(10))) }
        let info = try XCTUnwrap(try onLoop(free.loops[0]) { currentThreadInfo() })
        XCTAssertEqual(allowedCPUs(info.allowedCPUs), allowed)
    }

    /// Pinning follows the affinity mask the group is created under, not CPU numbers from 0: a group
    /// started by a thread allowed only the last CPU (as in a container whose cpuset is 4-7) pins every loop
    /// to that CPU. (On a machine whose only CPU is 0 the two readings agree and this cannot tell them
    /// apart; the project's machines have at least two.)
    func testPinningFollowsTheAffinityMask() throws {
        let allowed = allowedCPUs(try XCTUnwrap(currentThreadInfo()).allowedCPUs)
        let last = try XCTUnwrap(allowed.last, "an empty affinity mask")
        let host = try EventLoop(name: "host")
        let hostThread = try LoopThread(loop: host, cpu: last)
        defer {
            host.initiateShutdown()
            hostThread.join()
        }
        let pinned = try onLoop(host) { () throws -> [String] in
            XCTAssertEqual(EventLoopGroup.coreCount, 1)
            let group = try EventLoopGroup(numberOfLoops: 2, name: "masked", pinThreads: true)
            defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
            return try group.loops.map { loop in try onLoop(loop) { currentThreadInfo()?.allowedCPUs ?? "?" } }
        }
        XCTAssertEqual(pinned, ["\(last)", "\(last)"])
    }

    func testShutdownJoinsTheThreads() throws {
        var group: EventLoopGroup? = try EventLoopGroup(numberOfLoops: 2, name: "join")
        weak let first = group?.loops[0]
        weak let second = group?.loops[1]
        for loop in group!.loops {
            XCTAssertNotEqual(try onLoop(loop) { cepoll_gettid() }, cepoll_gettid())
        }
        try group!.shutdownGracefully(timeout: .seconds(10))
        for loop in group!.loops {
            XCTAssertTrue(loop.isShutDown)
            XCTAssertThrowsError(try loop.execute {})
        }
        // Joined: the threads have returned and let go of their loops, so the group held the last references.
        group = nil
        XCTAssertNil(first, "loop 0 still referenced: its thread was not joined")
        XCTAssertNil(second, "loop 1 still referenced: its thread was not joined")
    }

    func testConcurrentShutdownsAreHarmless() throws {
        let group = try EventLoopGroup(numberOfLoops: 2, name: "again")
        let callers = DispatchGroup()
        let errors = Locked<[String]>([])
        for _ in 0..<3 {
            callers.enter()
            DispatchQueue.global().async {
                do { try group.shutdownGracefully(timeout: .seconds(10)) } catch { errors.withLock { $0.append("\(error)") } }
                callers.leave()
            }
        }
        XCTAssertEqual(callers.wait(timeout: .now() + testTimeout), .success)
        XCTAssertEqual(errors.value, [])
        XCTAssertTrue(group.loops.allSatisfy(\.isShutDown))
        try group.shutdownGracefully(timeout: .seconds(10))
    }

    func testShutdownFromALoopOfTheGroupThrows() throws {
        let group = try EventLoopGroup(numberOfLoops: 2, name: "self")
        let error = try onLoop(group.loops[1]) { () -> EventLoopError? in
            do throws(EventLoopError) {
                try group.shutdownGracefully(timeout: .seconds(1))
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(error, .calledOnLoop)
        XCTAssertFalse(group.loops.contains { $0.isShutDown })
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}
