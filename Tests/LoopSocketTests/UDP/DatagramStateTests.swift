@testable import LoopSocket
import XCTest

/// The UDP engine's transitions, table by table: every event in every state, with the next state and
/// the action (or refusal) it returns.
final class DatagramStateTests: XCTestCase {
    typealias Lifecycle = DatagramState.Lifecycle
    typealias Receiving = DatagramState.Receiving
    typealias SendWait = DatagramState.SendWait

    static let lifecycles: [Lifecycle] = [.idle, .bound, .connecting(fromBound: false), .connecting(fromBound: true), .connected, .closed]

    private func state(_ lifecycle: Lifecycle) -> DatagramState {
        var state = DatagramState()
        state.lifecycle = lifecycle
        return state
    }

    /// Runs `event` in every lifecycle and checks the next lifecycle and the result against `table`.
    private func check<Result: Equatable>(
        _ name: String, _ table: [Lifecycle: (Lifecycle, Result)], _ event: (inout DatagramState) -> Result,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(Set(table.keys), Set(Self.lifecycles), "\(name): the table covers every state", file: file, line: line)
        for lifecycle in Self.lifecycles {
            var current = state(lifecycle)
            let result = event(&current)
            let expected = table[lifecycle]!
            XCTAssertEqual(current.lifecycle, expected.0, "\(name) in \(lifecycle): next state", file: file, line: line)
            XCTAssertEqual(result, expected.1, "\(name) in \(lifecycle): action", file: file, line: line)
        }
    }

    func testBindAsked() {
        check("bindAsked", [
            .idle: (.idle, nil), .closed: (.closed, nil), .bound: (.bound, .alreadyBound),
            .connecting(fromBound: false): (.connecting(fromBound: false), .bindAfterConnect),
            .connecting(fromBound: true): (.connecting(fromBound: true), .bindAfterConnect),
            .connected: (.connected, .bindAfterConnect),
        ]) { $0.bindAsked() }
    }

    func testBound() {
        check("bound", [
            .idle: (.bound, true), .closed: (.bound, true), .bound: (.bound, true),
            .connecting(fromBound: false): (.connecting(fromBound: true), true),
            .connecting(fromBound: true): (.connecting(fromBound: true), true),
            .connected: (.connected, true),
        ]) { $0.bound(); return true }
    }

    func testConnectAsked() {
        check("connectAsked", [
            .idle: (.connecting(fromBound: false), nil), .closed: (.connecting(fromBound: false), nil),
            .bound: (.connecting(fromBound: true), nil),
            .connecting(fromBound: false): (.connecting(fromBound: false), .alreadyConnected),
            .connecting(fromBound: true): (.connecting(fromBound: true), .alreadyConnected),
            .connected: (.connected, .alreadyConnected),
        ]) { $0.connectAsked() }
    }

    func testConnectSucceeded() {
        check("connectFinished(true)", [
            .idle: (.idle, .stale), .closed: (.closed, .stale), .bound: (.bound, .stale), .connected: (.connected, .stale),
            .connecting(fromBound: false): (.connected, .connected),
            .connecting(fromBound: true): (.connected, .connected),
        ]) { $0.connectFinished(true) }
    }

    func testConnectFailed() {
        check("connectFinished(false)", [
            .idle: (.idle, .stale), .closed: (.closed, .stale), .bound: (.bound, .stale), .connected: (.connected, .stale),
            .connecting(fromBound: false): (.idle, .failed),
            .connecting(fromBound: true): (.bound, .failed),
        ]) { $0.connectFinished(false) }
    }

    func testMulticastAsked() {
        check("multicastAsked", [
            .idle: (.idle, .multicastUnbound), .closed: (.closed, .multicastUnbound), .bound: (.bound, nil),
            .connecting(fromBound: false): (.connecting(fromBound: false), .multicastConnected),
            .connecting(fromBound: true): (.connecting(fromBound: true), .multicastConnected),
            .connected: (.connected, .multicastConnected),
        ]) { $0.multicastAsked() }
    }

    /// A close is one assignment: whatever the socket was doing, everything but `closed` goes.
    func testCloseResetsEverything() {
        for lifecycle in Self.lifecycles {
            for receiving in Receiving.allCases {
                for wait in SendWait.allCases {
                    var current = state(lifecycle)
                    current.receiving = receiving
                    current.sendWait = wait
                    current.ending = .afterSends
                    current.segmentationRefused = true
                    current.close()
                    var expected = DatagramState()
                    expected.lifecycle = .closed
                    XCTAssertEqual(current, expected, "close in \(lifecycle), \(receiving), \(wait)")
                }
            }
        }
    }

    func testReceiving() {
        typealias Row = (from: Receiving, once: (Receiving, DatagramState.ReceiveAction), continuous: (Receiving, DatagramState.ReceiveAction),
                         pause: (Receiving, Bool), delivered: Receiving)
        let table: [Row] = [
            (.off, (.once, .start), (.continuous, .start), (.off, false), .off),
            (.once, (.once, .unchanged), (.continuous, .start), (.paused, true), .off),
            (.continuous, (.once, .start), (.continuous, .unchanged), (.paused, true), .continuous),
            (.paused, (.once, .start), (.continuous, .start), (.paused, false), .paused),
        ]
        XCTAssertEqual(table.map(\.from), Receiving.allCases)
        for row in table {
            var current = DatagramState()
            current.receiving = row.from
            var once = current, continuous = current, pause = current, delivered = current
            XCTAssertEqual(once.receiveAsked(.once, hasDescriptor: true), row.once.1, "once from \(row.from)")
            XCTAssertEqual(once.receiving, row.once.0, "once from \(row.from)")
            XCTAssertEqual(continuous.receiveAsked(.continuous, hasDescriptor: true), row.continuous.1, "continuous from \(row.from)")
            XCTAssertEqual(continuous.receiving, row.continuous.0, "continuous from \(row.from)")
            XCTAssertEqual(pause.pauseAsked(), row.pause.1, "pause from \(row.from)")
            XCTAssertEqual(pause.receiving, row.pause.0, "pause from \(row.from)")
            delivered.delivered()
            XCTAssertEqual(delivered.receiving, row.delivered, "delivered in \(row.from)")
            // Without a descriptor a new mode is refused and nothing changes; the same mode is no change.
            for mode in [Receiving.once, .continuous] {
                var bare = current
                let action = bare.receiveAsked(mode, hasDescriptor: false)
                XCTAssertEqual(action, row.from == mode ? .unchanged : .refuse(.noDescriptor), "\(mode) from \(row.from) without descriptor")
                XCTAssertEqual(bare.receiving, row.from)
            }
        }
    }

    func testSendWaits() {
        for from in SendWait.allCases {
            for event in SendWait.allCases where event != .none {
                var current = DatagramState()
                current.sendWait = from
                let ended = current.sendWaitEnded(event)
                XCTAssertEqual(ended, from == event, "\(event) ends the wait for \(from)")
                XCTAssertEqual(current.sendWait, from == event ? .none : from, "after \(event) in \(from)")
            }
        }
        var current = DatagramState()
        XCTAssertTrue(current.canSend)
        current.sendWaits(for: .writable)
        XCTAssertTrue(current.sendWaitsForKernel)
        XCTAssertFalse(current.canSend)
        _ = current.sendWaitEnded(.writable)
        current.sendWaits(for: .filter)
        XCTAssertFalse(current.sendWaitsForKernel)
        XCTAssertFalse(current.canSend)
        _ = current.sendWaitEnded(.filter)
        current.lifecycle = .connecting(fromBound: false)
        XCTAssertFalse(current.canSend, "sends wait for a connect")
    }

    func testEnding() {
        for (queued, pumping, closesNow) in [(false, false, true), (true, false, false), (false, true, false), (true, true, false)] {
            var current = DatagramState()
            XCTAssertFalse(current.pumpEnded(sendsQueued: false), "no ending asked")
            XCTAssertEqual(current.closeAfterSendsAsked(sendsQueued: queued, pumping: pumping), closesNow)
            XCTAssertEqual(current.ending, .afterSends)
            XCTAssertEqual(current.pumpEnded(sendsQueued: queued), !queued)
        }
    }
}
