@testable import LoopSocket
import XCTest

/// ``ConnectionState``'s transitions, as a table: every event in every case of the state (and in the stream
/// states where an event does something of its own), the next state and the action the engine is to take.
final class ConnectionStateTests: XCTestCase {
    typealias State = ConnectionState
    typealias Stream = ConnectionState.Stream
    typealias Event = ConnectionState.Event
    typealias Action = ConnectionState.Action

    /// A fresh stream with `change` made.
    static func stream(_ change: (inout Stream) -> Void = { _ in }) -> Stream {
        var stream = Stream()
        change(&stream)
        return stream
    }

    static let fresh = stream()
    static let idle = State.idle
    static let listening = State.listening
    static let connecting = State.connecting(fresh)
    static let starting = State.starting(fresh)
    static let open = State.open(fresh)

    /// One row: from `state`, `event` leads to `next` with `action`.
    struct Row {
        let state: State
        let event: Event
        let next: State
        let action: Action
        let line: UInt
        init(_ state: State, _ event: Event, _ next: State, _ action: Action, line: UInt = #line) {
            (self.state, self.event, self.next, self.action, self.line) = (state, event, next, action, line)
        }
    }

    /// The event changes nothing in `state` and asks for nothing.
    static func ignored(_ state: State, _ event: Event, line: UInt = #line) -> Row {
        Row(state, event, state, .none, line: line)
    }

    /// The same change of stream, with the same action, in each case that has a stream.
    static func inEachStream(_ event: Event, _ change: (inout Stream) -> Void, _ action: Action, line: UInt = #line) -> [Row] {
        let changed = stream(change)
        return [Row(connecting, event, .connecting(changed), action, line: line),
                Row(starting, event, .starting(changed), action, line: line),
                Row(open, event, .open(changed), action, line: line)]
    }

    /// Every event in each of the five cases (a fresh stream where there is one).
    static var lifecycleTable: [Row] {
        var rows: [Row] = []
        // Starting a connection: only from idle.
        rows += [Row(idle, .connectAsked, connecting, .proceed)]
            + [listening, connecting, starting, open].map { ignored($0, .connectAsked) }
        rows += [Row(idle, .listenAsked, listening, .proceed)]
            + [listening, connecting, starting, open].map { ignored($0, .listenAsked) }
        rows += [Row(idle, .adopted, starting, .proceed)]
            + [listening, connecting, starting, open].map { ignored($0, .adopted) }
        rows += [Row(connecting, .connected, open, .proceed)]
            + [idle, listening, starting, open].map { ignored($0, .connected) }
        rows += [Row(starting, .registered, open, .proceed)]
            + [idle, listening, connecting, open].map { ignored($0, .registered) }
        // A close is one transition, from anywhere but idle.
        rows += [
            ignored(idle, .closed),
            Row(listening, .closed, .idle, .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true)),
            Row(connecting, .closed, .idle, .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true)),
            Row(starting, .closed, .idle, .tearDown(wasOpen: false, wasStarting: true, readSideOpen: true)),
            Row(open, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: true)),
        ]
        // Queueing: refused only when idle.
        rows += [Row(idle, .readQueued, idle, .refuse(.notOpen))]
            + [listening, connecting, starting, open].map { Row($0, .readQueued, $0, .proceed) }
        rows += [Row(idle, .writeQueued, idle, .refuse(.writeNotConnected))]
            + [listening, connecting, starting, open].map { Row($0, .writeQueued, $0, .proceed) }
        // disconnectAfter…: at once where nothing can be queued, after the queues once open.
        for which in ConnectionEngine.Ending.allCases where which != .none {
            let dropsReads = which == .afterWrites
            let ended = stream { $0.ending = which }
            rows += [
                ignored(idle, .finishAsked(which)),
                Row(listening, .finishAsked(which), listening, .closeIfNothingQueued(dropReads: dropsReads)),
                Row(connecting, .finishAsked(which), .connecting(ended), .closeIfNothingQueued(dropReads: dropsReads)),
                Row(starting, .finishAsked(which), .starting(ended), .closeIfNothingQueued(dropReads: dropsReads)),
                Row(open, .finishAsked(which), .open(ended), dropsReads ? .dropReadsAndPump : .pump),
            ]
        }
        // The read side: only an open connection hears from its peer.
        rows += [Row(open, .peerFinished, .open(stream { $0.readSide = .peerFinished }), .proceed)]
            + [idle, listening, connecting, starting].map { ignored($0, .peerFinished) }
        for auto in [true, false] {
            rows += [idle, listening, connecting, starting, open].map { ignored($0, .endOfStream(autoDisconnect: auto)) }
        }
        // The write side.
        rows += [ignored(idle, .writeShutdownAsked), ignored(listening, .writeShutdownAsked)]
            + inEachStream(.writeShutdownAsked, { $0.writeSide = .shutdownAfterWrites }, .pump)
        rows += [idle, listening, connecting, starting, open].map { ignored($0, .writesDrained) }
        for pauses in [true, false] {
            rows += [ignored(idle, .overHighWater(pausesReads: pauses)), ignored(listening, .overHighWater(pausesReads: pauses))]
                + inEachStream(.overHighWater(pausesReads: pauses),
                               { $0.writability = pauses ? .notWritableReadsPaused : .notWritable },
                               .reportWritability(false, resumeReads: false))
        }
        rows += [idle, listening, connecting, starting, open].map { ignored($0, .underLowWater) }
        // Continuous reads.
        rows += [ignored(idle, .continuousStarted), ignored(listening, .continuousStarted)]
            + inEachStream(.continuousStarted, { $0.continuous = .on }, .pump)
        rows += [ignored(idle, .continuousStopped), ignored(listening, .continuousStopped)]
            + inEachStream(.continuousStopped, { _ in }, .pump)
        return rows
    }

    /// The events that do something of their own in a stream other than a fresh one.
    static var streamTable: [Row] {
        let finished = State.open(stream { $0.readSide = .peerFinished })
        let finishedContinuous = State.open(stream { $0.readSide = .peerFinished; $0.continuous = .on })
        let delivered = State.open(stream { $0.readSide = .endDelivered })
        let shuttingDown = State.open(stream { $0.writeSide = .shutdownAfterWrites })
        let endingAfterReads = State.open(stream { $0.ending = .afterReads })
        let paused = State.open(stream { $0.writability = .notWritableReadsPaused })
        let notWritable = State.connecting(stream { $0.writability = .notWritable })
        return [
            // The peer's end: with auto-disconnect, the close waits for the writes; without, told once.
            Row(finishedContinuous, .endOfStream(autoDisconnect: true),
                .open(stream { $0.readSide = .peerFinished; $0.ending = .afterWritesAtPeerEnd }), .dropReadsUntilClose),
            Row(finished, .endOfStream(autoDisconnect: false), delivered, .reportEndOfStream),
            Row(delivered, .endOfStream(autoDisconnect: false), delivered, .failFrontRead),
            ignored(finished, .peerFinished),
            Row(finished, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: false)),
            // The write side's shutdown, once the writes are written.
            Row(shuttingDown, .writesDrained, .open(stream { $0.writeSide = .shutDown }), .shutDownWriteSide),
            Row(shuttingDown, .writeQueued, shuttingDown, .refuse(.writeAfterFinish)),
            ignored(shuttingDown, .writeShutdownAsked),
            // After a disconnectAfter…, nothing new is queued; endings add up.
            Row(endingAfterReads, .readQueued, endingAfterReads, .refuse(.notOpen)),
            Row(endingAfterReads, .writeQueued, endingAfterReads, .refuse(.writeAfterFinish)),
            Row(endingAfterReads, .finishAsked(.afterWrites), .open(stream { $0.ending = .afterReadsAndWrites }), .dropReadsAndPump),
            // Water marks: reported once each way; reads paused for backpressure resume.
            Row(paused, .underLowWater, open, .reportWritability(true, resumeReads: true)),
            ignored(paused, .overHighWater(pausesReads: true)),
            Row(notWritable, .underLowWater, connecting, .reportWritability(true, resumeReads: false)),
        ]
    }

    func check(_ rows: [Row]) {
        for row in rows {
            var state = row.state
            let action = state.handle(row.event)
            XCTAssertEqual(action, row.action, "\(row.event) in \(row.state): the action", line: row.line)
            XCTAssertEqual(state, row.next, "\(row.event) in \(row.state): the next state", line: row.line)
        }
    }

    func testEveryEventInEveryCase() {
        let rows = Self.lifecycleTable
        check(rows)
        // The table leaves no event out of any case.
        for state in ConnectionState.samples {
            for event in Event.samples {
                XCTAssertTrue(rows.contains { $0.state == state && $0.event == event }, "no row for \(event) in \(state)")
            }
        }
    }

    func testStreamTransitions() {
        check(Self.streamTable)
    }

    /// What the engine reads of a state without a stream is a fresh stream's.
    func testStatesWithoutAStreamReadAsFresh() {
        for state in [State.idle, .listening] {
            XCTAssertNil(state.stream)
            XCTAssertEqual(state.readSide, .open)
            XCTAssertEqual(state.writeSide, .open)
            XCTAssertEqual(state.ending, .none)
            XCTAssertEqual(state.writability, .writable)
            XCTAssertEqual(state.continuous, .off)
        }
    }

    /// The state takes no more room than the six one-byte fields it replaced.
    func testTheStateIsSmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<ConnectionState>.size, 6)
    }
}
