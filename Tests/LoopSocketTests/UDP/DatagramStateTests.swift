@testable import LoopSocket
import XCTest

/// The UDP engine's transitions, table by table: every event in every state, with the next state and the
/// action it returns.
final class DatagramStateTests: XCTestCase {
    typealias Lifecycle = DatagramState.Lifecycle
    typealias Receiving = DatagramState.Receiving
    typealias SendWait = DatagramState.SendWait
    typealias Event = DatagramState.Event
    typealias Action = DatagramState.Action

    /// Runs `event` in every lifecycle and checks the next lifecycle and the action against `table`.
    private func check(
        _ event: Event, _ table: [Lifecycle: (Lifecycle, Action)], file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(Set(table.keys), Set(Lifecycle.samples), "\(event): the table covers every state", file: file, line: line)
        for lifecycle in Lifecycle.samples {
            var current = DatagramState(lifecycle: lifecycle)
            let action = current.handle(event)
            let expected = table[lifecycle]!
            XCTAssertEqual(current, DatagramState(lifecycle: expected.0), "\(event) in \(lifecycle): next state", file: file, line: line)
            XCTAssertEqual(action, expected.1, "\(event) in \(lifecycle): action", file: file, line: line)
        }
    }

    func testBindAsked() {
        check(.bindAsked, [
            .idle: (.idle, .proceed), .closed: (.closed, .proceed), .bound: (.bound, .refuse(.alreadyBound)),
            .connecting(fromBound: false): (.connecting(fromBound: false), .refuse(.bindAfterConnect)),
            .connecting(fromBound: true): (.connecting(fromBound: true), .refuse(.bindAfterConnect)),
            .connected: (.connected, .refuse(.bindAfterConnect)),
        ])
    }

    func testBound() {
        check(.bound, [
            .idle: (.bound, .proceed), .closed: (.bound, .proceed), .bound: (.bound, .none),
            .connecting(fromBound: false): (.connecting(fromBound: true), .proceed),
            .connecting(fromBound: true): (.connecting(fromBound: true), .none),
            .connected: (.connected, .none),
        ])
    }

    func testConnectAsked() {
        check(.connectAsked, [
            .idle: (.connecting(fromBound: false), .proceed), .closed: (.connecting(fromBound: false), .proceed),
            .bound: (.connecting(fromBound: true), .proceed),
            .connecting(fromBound: false): (.connecting(fromBound: false), .refuse(.alreadyConnected)),
            .connecting(fromBound: true): (.connecting(fromBound: true), .refuse(.alreadyConnected)),
            .connected: (.connected, .refuse(.alreadyConnected)),
        ])
    }

    /// A connect's outcome is reported only while the connect is in progress (a close before it makes it stale).
    func testConnected() {
        check(.connected, [
            .idle: (.idle, .none), .closed: (.closed, .none), .bound: (.bound, .none), .connected: (.connected, .none),
            .connecting(fromBound: false): (.connected, .reportConnected),
            .connecting(fromBound: true): (.connected, .reportConnected),
        ])
    }

    func testConnectFailed() {
        check(.connectFailed, [
            .idle: (.idle, .none), .closed: (.closed, .none), .bound: (.bound, .none), .connected: (.connected, .none),
            .connecting(fromBound: false): (.idle, .reportConnectFailed),
            .connecting(fromBound: true): (.bound, .reportConnectFailed),
        ])
    }

    func testMulticastAsked() {
        check(.multicastAsked, [
            .idle: (.idle, .refuse(.multicastUnbound)), .closed: (.closed, .refuse(.multicastUnbound)), .bound: (.bound, .proceed),
            .connecting(fromBound: false): (.connecting(fromBound: false), .refuse(.multicastConnected)),
            .connecting(fromBound: true): (.connecting(fromBound: true), .refuse(.multicastConnected)),
            .connected: (.connected, .refuse(.multicastConnected)),
        ])
    }

    /// A close is one assignment: whatever the socket was doing, everything but `closed` goes.
    func testClosedResetsEverything() {
        for state in DatagramState.samples {
            var current = state
            XCTAssertEqual(current.handle(.closed), .tearDown, "closed in \(state)")
            XCTAssertEqual(current, DatagramState(lifecycle: .closed), "closed in \(state)")
        }
    }

    func testReceiving() {
        typealias Outcome = (Receiving, Action)
        typealias Row = (from: Receiving, once: Outcome, continuous: Outcome, pause: Outcome, delivered: Outcome)
        let table: [Row] = [
            (.off, (.once, .startReceiving), (.continuous, .startReceiving), (.off, .none), (.off, .none)),
            (.once, (.once, .none), (.continuous, .startReceiving), (.paused, .stopReceiving), (.off, .proceed)),
            (.continuous, (.once, .startReceiving), (.continuous, .none), (.paused, .stopReceiving), (.continuous, .none)),
            (.paused, (.once, .startReceiving), (.continuous, .startReceiving), (.paused, .none), (.paused, .none)),
        ]
        XCTAssertEqual(table.map(\.from), Receiving.allCases)
        for row in table {
            let events: [(Event, Outcome)] = [
                (.receiveAsked(.once, hasDescriptor: true), row.once), (.receiveAsked(.continuous, hasDescriptor: true), row.continuous),
                (.pauseAsked, row.pause), (.delivered, row.delivered),
            ]
            for (event, expected) in events {
                var current = DatagramState(receiving: row.from)
                XCTAssertEqual(current.handle(event), expected.1, "\(event) from \(row.from)")
                XCTAssertEqual(current, DatagramState(receiving: expected.0), "\(event) from \(row.from)")
            }
            // Without a descriptor a new mode is refused and nothing changes; the same mode is no change.
            for (mode, receiving) in [(DatagramState.ReceiveMode.once, Receiving.once), (.continuous, .continuous)] {
                var bare = DatagramState(receiving: row.from)
                let action = bare.handle(.receiveAsked(mode, hasDescriptor: false))
                XCTAssertEqual(action, row.from == receiving ? .none : .refuse(.noDescriptor), "\(mode) from \(row.from) without descriptor")
                XCTAssertEqual(bare.receiving, row.from)
            }
        }
    }

    func testSendWaits() {
        for from in SendWait.allCases {
            for wait in SendWait.allCases {
                var waits = DatagramState(sendWait: from)
                let starts = from == .none && wait != .none
                XCTAssertEqual(waits.handle(.sendWaits(wait)), starts ? .proceed : .none, "\(wait) asked in \(from)")
                XCTAssertEqual(waits.sendWait, starts ? wait : from, "after \(wait) asked in \(from)")
                var ends = DatagramState(sendWait: from)
                let ended = from == wait && wait != .none
                XCTAssertEqual(ends.handle(.sendWaitEnded(wait)), ended ? .pump : .none, "\(wait) ends the wait for \(from)")
                XCTAssertEqual(ends.sendWait, ended ? .none : from, "after \(wait) in \(from)")
            }
        }
        XCTAssertTrue(DatagramState().canSend)
        XCTAssertTrue(DatagramState(sendWait: .writable).sendWaitsForKernel)
        XCTAssertTrue(DatagramState(sendWait: .noBuffers).sendWaitsForKernel)
        XCTAssertFalse(DatagramState(sendWait: .filter).sendWaitsForKernel)
        XCTAssertFalse(DatagramState(sendWait: .filter).canSend)
        XCTAssertFalse(DatagramState(lifecycle: .connecting(fromBound: false)).canSend, "sends wait for a connect")
    }

    func testSegmentationRefused() {
        var current = DatagramState()
        XCTAssertEqual(current.handle(.segmentationRefused), .proceed)
        XCTAssertEqual(current, DatagramState(segmentationRefused: true))
        XCTAssertEqual(current.handle(.segmentationRefused), .none)
    }

    func testEnding() {
        for (queued, pumping, closesNow) in [(false, false, true), (true, false, false), (false, true, false), (true, true, false)] {
            var current = DatagramState()
            XCTAssertEqual(current.handle(.pumpEnded(sendsQueued: false)), .none, "no ending asked")
            XCTAssertEqual(current.handle(.closeAfterSendsAsked(sendsQueued: queued, pumping: pumping)), closesNow ? .close : .proceed)
            XCTAssertEqual(current, DatagramState(ending: .afterSends))
            XCTAssertEqual(current.handle(.pumpEnded(sendsQueued: queued)), queued ? .none : .close)
            XCTAssertEqual(current, DatagramState(ending: .afterSends), "the pump's end changes nothing")
        }
    }

    /// Each event changes its own part of the state and no other (a close changes every part).
    func testAnEventChangesOnlyItsPart() {
        typealias Part = DatagramState.Part
        func part(_ kind: Event.Kind) -> Part? {
            switch kind {
            case .bindAsked, .bound, .connectAsked, .connected, .connectFailed, .multicastAsked: .lifecycle
            case .receiveAsked, .pauseAsked, .delivered: .receiving
            case .sendWaits, .sendWaitEnded: .sendWait
            case .closeAfterSendsAsked, .pumpEnded: .ending
            case .segmentationRefused, .closed: nil
            }
        }
        for row in DatagramState.transitionTable where row.event.kind != .closed {
            for other in Part.allCases where other != part(row.event.kind) {
                XCTAssertEqual(other.name(in: row.to), other.name(in: row.from), "\(row.event) in \(row.from) changed \(other)")
            }
            if row.event.kind != .segmentationRefused {
                XCTAssertEqual(row.to.segmentationRefused, row.from.segmentationRefused, "\(row.event) in \(row.from)")
            }
            if row.event.kind != .bound && row.event.kind != .connectAsked && row.event.kind != .connected
                && row.event.kind != .connectFailed {
                XCTAssertEqual(row.to.lifecycle, row.from.lifecycle, "\(row.event) in \(row.from)")
            }
        }
    }

    /// The samples the diagrams are drawn from hold every event with every value of its parameters, and the
    /// machine returns every action somewhere.
    func testSamplesAreExhaustive() {
        for kind in Event.Kind.allCases {
            let samples = Event.samples(of: kind)
            XCTAssertFalse(samples.isEmpty, "\(kind) has samples")
            XCTAssertTrue(samples.allSatisfy { $0.kind == kind }, "\(kind)'s samples are of their kind")
        }
        XCTAssertEqual(Event.samples(of: .receiveAsked).count, 4)
        XCTAssertEqual(Event.samples(of: .sendWaits).count, SendWait.allCases.count)
        XCTAssertEqual(Event.samples(of: .closeAfterSendsAsked).count, 4)
        XCTAssertEqual(DatagramState.samples.count, 6 * 4 * 2 * 4 * 2)
        var actions: [Action] = []
        for row in DatagramState.transitionTable where !actions.contains(row.action) { actions.append(row.action) }
        let expected: [Action] = [.none, .proceed, .startReceiving, .stopReceiving, .reportConnected, .reportConnectFailed,
                                  .pump, .close, .tearDown] + DatagramState.Refusal.allCases.map { .refuse($0) }
        XCTAssertEqual(actions.count, expected.count, "\(actions)")
        for action in expected { XCTAssertTrue(actions.contains(action), "\(action) is returned somewhere") }
    }
}
