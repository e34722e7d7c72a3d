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
            Row(listening, .closed, .idle, .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true, tls: .plain)),
            Row(connecting, .closed, .idle, .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true, tls: .plain)),
            Row(starting, .closed, .idle, .tearDown(wasOpen: false, wasStarting: true, readSideOpen: true, tls: .plain)),
            Row(open, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: true, tls: .plain)),
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
        // TLS: `startTLS` is taken once a connection is being made; the rest needs it queued or running.
        rows += [ignored(idle, .tlsAsked), ignored(listening, .tlsAsked),
                 Row(connecting, .tlsAsked, .connecting(stream { $0.tls = .queued }), .queueTLSMarkers(pump: false)),
                 Row(starting, .tlsAsked, .starting(stream { $0.tls = .queued }), .queueTLSMarkers(pump: false)),
                 Row(open, .tlsAsked, .open(stream { $0.tls = .queued }), .queueTLSMarkers(pump: true))]
        let tlsEvents: [Event] = [.tlsMarkersReached, .trustAsked]
            + [false, true].map { .handshakeDone(awaitsTrust: $0) }
            + [false, true].flatMap { trusted in [false, true].map { .trustAnswered(trusted: trusted, handshakeFinished: $0) } }
        for event in tlsEvents {
            rows += [idle, listening, connecting, starting, open].map { ignored($0, event) }
        }
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
            Row(finished, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: false, tls: .plain)),
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
        ] + tlsTable
    }

    /// The TLS phase's transitions: `startTLS` once, the markers, the handshake, trust, and the close that
    /// ends the session.
    static var tlsTable: [Row] {
        func tls(_ phase: ConnectionEngine.TLSPhase, _ change: (inout Stream) -> Void = { _ in }) -> Stream {
            stream { $0.tls = phase; change(&$0) }
        }
        let queued = State.open(tls(.queued))
        let handshaking = State.open(tls(.handshaking))
        let awaiting = State.open(tls(.awaitingTrust))
        let established = State.open(tls(.established))
        return [
            // Once per connection, and not after a disconnectAfter….
            ignored(queued, .tlsAsked),
            ignored(established, .tlsAsked),
            ignored(.open(stream { $0.ending = .afterWrites }), .tlsAsked),
            // The markers start the handshake only once the connection is open.
            Row(queued, .tlsMarkersReached, handshaking, .startHandshake),
            ignored(.connecting(tls(.queued)), .tlsMarkersReached),
            ignored(handshaking, .tlsMarkersReached),
            // The handshake, with trust asked during it or after it.
            Row(handshaking, .trustAsked, awaiting, .askTrust),
            Row(handshaking, .handshakeDone(awaitsTrust: false), established, .establish),
            Row(handshaking, .handshakeDone(awaitsTrust: true), awaiting, .askTrust),
            ignored(established, .handshakeDone(awaitsTrust: false)),
            ignored(queued, .trustAsked),
            // The answer: a paused handshake goes on with it; a finished one is established or refused.
            Row(awaiting, .trustAnswered(trusted: true, handshakeFinished: false), handshaking, .pump),
            Row(awaiting, .trustAnswered(trusted: false, handshakeFinished: false), handshaking, .pump),
            Row(awaiting, .trustAnswered(trusted: true, handshakeFinished: true), established, .establish),
            Row(awaiting, .trustAnswered(trusted: false, handshakeFinished: true), awaiting, .rejectTrust),
            ignored(handshaking, .trustAnswered(trusted: true, handshakeFinished: true)),
            // The close ends whatever phase it was in, and says which.
            Row(handshaking, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: true, tls: .handshaking)),
            Row(established, .closed, .idle, .tearDown(wasOpen: true, wasStarting: false, readSideOpen: true, tls: .established)),
            Row(.connecting(tls(.queued)), .closed, .idle,
                .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true, tls: .queued)),
        ]
    }

    /// The status the getters report follows the state, and a claim publishes the status of the state its
    /// start makes.
    func testStatusIsDerivedFromTheState() {
        XCTAssertEqual(State.idle.status, .idle)
        XCTAssertEqual(State.listening.status, .accepting)
        XCTAssertEqual(State.connecting(Self.fresh).status, .connecting)
        XCTAssertEqual(State.starting(Self.fresh).status, .connected)
        XCTAssertEqual(State.open(Self.fresh).status, .connected)
        XCTAssertEqual(State.claimed(by: .connectAsked).status, .connecting)
        XCTAssertEqual(State.claimed(by: .listenAsked).status, .accepting)
        XCTAssertEqual(State.claimed(by: .adopted).status, .connected)
        XCTAssertEqual(State.claimed(by: .readQueued), .idle)
    }

    /// The samples the diagram's tables are made from leave out no event and no state: every named event has
    /// samples of its name, and every stream field's every value appears.
    func testTheSamplesAreExhaustive() {
        for name in Event.Name.allCases {
            let samples = Event.samples(of: name)
            XCTAssertFalse(samples.isEmpty, "no sample of \(name)")
            for event in samples { XCTAssertEqual(event.name, name) }
        }
        let streams = Stream.allValues
        XCTAssertEqual(Set(streams.map(\.tls)), Set(ConnectionEngine.TLSPhase.allCases))
        XCTAssertEqual(Set(streams.map(\.ending)), Set(ConnectionEngine.Ending.allCases))
        XCTAssertEqual(streams.count, ConnectionEngine.ReadSide.allCases.count * ConnectionEngine.WriteSide.allCases.count
            * ConnectionEngine.Ending.allCases.count * ConnectionEngine.Writability.allCases.count
            * ConnectionEngine.Continuous.allCases.count * ConnectionEngine.TLSPhase.allCases.count)
        XCTAssertEqual(Set(State.allStates.map(\.lifecycle)), Set(ConnectionEngine.Lifecycle.allCases))
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
            XCTAssertEqual(state.tls, .plain)
        }
    }

    /// The state takes no more room than the six one-byte fields it replaced.
    func testTheStateIsSmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<ConnectionState>.size, 6)
    }
}
