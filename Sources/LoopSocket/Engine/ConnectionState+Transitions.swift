// The transitions of ``ConnectionState``: every change of the connection's state is an event handled here,
// which returns what the engine is to do (``Action``). The engine performs the actions; nothing else assigns
// the state. The table these make is what docs/architecture.md draws (StateDiagramTests compares them).

extension ConnectionState {
    /// What happens to a connection.
    enum Event: Equatable {
        /// `connect` (the socket was claimed idle).
        case connectAsked
        /// `accept` (listen).
        case listenAsked
        /// An accepted or adopted descriptor is taken over; it starts once registered.
        case adopted
        /// A connect attempt connected.
        case connected
        /// The adopted descriptor is registered with the loop.
        case registered
        /// Whatever ends the connection at once: `disconnect`, an error, a timeout, the loop shutting down.
        case closed
        /// A read is to be queued.
        case readQueued
        /// A write is to be queued.
        case writeQueued
        /// `disconnectAfterReading` / `…Writing` / `…ReadingAndWriting`.
        case finishAsked(Ending)
        /// `recv` returned 0, or TLS's close_notify came: the peer sends nothing more.
        case peerFinished
        /// The prebuffer is empty and the peer has finished; `autoDisconnect` is the setting then.
        case endOfStream(autoDisconnect: Bool)
        /// `closeWriteStream`.
        case writeShutdownAsked
        /// Every queued write is written (`shutdown(SHUT_WR)` is due if asked for).
        case writesDrained
        /// The write queue went over its high water mark; `pausesReads`: the backpressure setting.
        case overHighWater(pausesReads: Bool)
        /// The write queue drained to its low water mark.
        case underLowWater
        /// `beginReceiving`.
        case continuousStarted
        /// `stopReceiving`.
        case continuousStopped
        /// `startTLS`: its markers are to be queued behind the reads and writes already queued.
        case tlsAsked
        /// Both queues reached `startTLS`'s markers: the handshake starts.
        case tlsMarkersReached
        /// The handshake paused for the sink's trust decision (a client with manual trust evaluation).
        case trustAsked
        /// The handshake completed; `awaitsTrust`: the sink has not decided yet (a server, or a resumed
        /// session), and is asked now.
        case handshakeDone(awaitsTrust: Bool)
        /// The sink answered the trust question; `handshakeFinished`: OpenSSL's handshake is over (else the
        /// paused handshake goes on with the answer).
        case trustAnswered(trusted: Bool, handshakeFinished: Bool)
    }

    /// What the engine does after an event.
    enum Action: Equatable {
        /// Nothing: the event does not apply here (ignored, as GCDAsyncSocket ignores such calls).
        case none
        /// The state changed; nothing else to do now.
        case proceed
        /// Refuse the operation (a read dropped silently, a write failed with this reason).
        case refuse(ConnectionError.Kind)
        /// Ask for a pump.
        case pump
        /// Drop the queued reads (`disconnectAfterWriting`), then ask for a pump.
        case dropReadsAndPump
        /// Close at once if nothing is queued (a connection not yet open), dropping queued reads first if
        /// `dropReads`; otherwise the close waits for the queues.
        case closeIfNothingQueued(dropReads: Bool)
        /// Tear the connection down: timers, descriptors, queues, the sink's last callback. `wasOpen`,
        /// `wasStarting`: what the descriptor was; `readSideOpen`: the peer had not finished; `tls`: the TLS
        /// phase that ends with it (a session's layer goes, with a close_notify if it was established).
        case tearDown(wasOpen: Bool, wasStarting: Bool, readSideOpen: Bool, tls: TLSPhase)
        /// The peer finished with auto-disconnect: fail the queued reads; the close follows the writes.
        case dropReadsUntilClose
        /// The peer finished without auto-disconnect: tell the sink once (`socketDidCloseReadStream`).
        case reportEndOfStream
        /// The end was told already: the read at the front cannot complete and fails.
        case failFrontRead
        /// `shutdown(SHUT_WR)` now.
        case shutDownWriteSide
        /// Tell the sink of the new writability; `resumeReads`: reads paused for backpressure go on.
        case reportWritability(Bool, resumeReads: Bool)
        /// Queue `startTLS`'s markers; `pump`: the connection is open, and the pump takes it from there.
        case queueTLSMarkers(pump: Bool)
        /// Take the markers off the queues and make the session (its layer, the handshake timer).
        case startHandshake
        /// Ask the sink whether to trust the peer's chain.
        case askTrust
        /// The session is up: report it secured, and pump the data waiting behind it.
        case establish
        /// The sink refused the peer: close with that error.
        case rejectTrust
    }

    /// Handles `event`: the state moves on, and the engine does what the action says.
    @inline(__always)
    mutating func handle(_ event: Event) -> Action {
        switch event {
        case .connectAsked:
            guard case .idle = self else { return .none }
            self = .connecting(Stream())
            return .proceed
        case .listenAsked:
            guard case .idle = self else { return .none }
            self = .listening
            return .proceed
        case .adopted:
            guard case .idle = self else { return .none }
            self = .starting(Stream())
            return .proceed
        case .connected:
            guard case .active(.connecting, let stream) = self else { return .none }
            self = .active(.open, stream)
            return .proceed
        case .registered:
            guard case .active(.starting, let stream) = self else { return .none }
            self = .active(.open, stream)
            return .proceed
        case .closed:
            let action: Action
            switch self {
            case .idle: return .none
            case .listening: action = .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true, tls: .plain)
            case .active(let phase, let stream):
                action = .tearDown(wasOpen: phase == .open, wasStarting: phase == .starting,
                                   readSideOpen: stream.readSide == .open, tls: stream.tls)
            }
            self = .idle
            return action
        case .readQueued:
            switch self {
            case .idle: return .refuse(.notOpen)
            case .listening: return .proceed
            case .active(_, let stream):
                return stream.ending == .none ? .proceed : .refuse(.notOpen)
            }
        case .writeQueued:
            switch self {
            case .idle: return .refuse(.writeNotConnected)
            case .listening: return .proceed
            case .active(_, let stream):
                return stream.ending == .none && stream.writeSide == .open ? .proceed : .refuse(.writeAfterFinish)
            }
        case .finishAsked(let which):
            switch self {
            case .idle: return .none
            case .listening: return .closeIfNothingQueued(dropReads: which == .afterWrites)
            case .active(let phase, var stream):
                stream.ending = stream.ending.adding(which)
                self = .active(phase, stream)
                if phase == .open { return which == .afterWrites ? .dropReadsAndPump : .pump }
                return .closeIfNothingQueued(dropReads: which == .afterWrites)
            }
        case .peerFinished:
            return modifyOpenStream { stream in
                guard stream.readSide == .open else { return .none }
                stream.readSide = .peerFinished
                return .proceed
            }
        case .endOfStream(let autoDisconnect):
            return modifyOpenStream { stream in
                guard stream.readSide != .open else { return .none }
                if autoDisconnect {
                    stream.continuous = .off
                    stream.ending = stream.ending.adding(.afterWritesAtPeerEnd)
                    return .dropReadsUntilClose
                }
                guard stream.readSide == .peerFinished else { return .failFrontRead }
                stream.readSide = .endDelivered
                return .reportEndOfStream
            }
        case .writeShutdownAsked:
            return modifyAnyStream { stream in
                guard stream.writeSide == .open else { return .none }
                stream.writeSide = .shutdownAfterWrites
                return .pump
            }
        case .writesDrained:
            return modifyOpenStream { stream in
                guard stream.writeSide == .shutdownAfterWrites else { return .none }
                stream.writeSide = .shutDown
                return .shutDownWriteSide
            }
        case .overHighWater(let pausesReads):
            return modifyAnyStream { stream in
                guard stream.writability == .writable else { return .none }
                stream.writability = pausesReads ? .notWritableReadsPaused : .notWritable
                return .reportWritability(false, resumeReads: false)
            }
        case .underLowWater:
            return modifyAnyStream { stream in
                guard stream.writability != .writable else { return .none }
                let resume = stream.writability == .notWritableReadsPaused
                stream.writability = .writable
                return .reportWritability(true, resumeReads: resume)
            }
        case .continuousStarted:
            return modifyAnyStream { stream in
                stream.continuous = .on
                return .pump
            }
        case .continuousStopped:
            return modifyAnyStream { stream in
                stream.continuous = .off
                return .pump
            }
        case .tlsAsked:
            // Once per connection, over plaintext, and not after a `disconnectAfter…` (GCDAsyncSocket's rules).
            guard case .active(let phase, var stream) = self, stream.tls == .plain, stream.ending == .none else { return .none }
            stream.tls = .queued
            self = .active(phase, stream)
            return .queueTLSMarkers(pump: phase == .open)
        case .tlsMarkersReached:
            return modifyOpenStream { stream in
                guard stream.tls == .queued else { return .none }
                stream.tls = .handshaking
                return .startHandshake
            }
        case .trustAsked:
            return modifyOpenStream { stream in
                guard stream.tls == .handshaking else { return .none }
                stream.tls = .awaitingTrust
                return .askTrust
            }
        case .handshakeDone(let awaitsTrust):
            return modifyOpenStream { stream in
                guard stream.tls == .handshaking else { return .none }
                stream.tls = awaitsTrust ? .awaitingTrust : .established
                return awaitsTrust ? .askTrust : .establish
            }
        case .trustAnswered(let trusted, let handshakeFinished):
            return modifyOpenStream { stream in
                guard stream.tls == .awaitingTrust else { return .none }
                // A client's paused handshake: its next step hands the answer to OpenSSL.
                guard handshakeFinished else {
                    stream.tls = .handshaking
                    return .pump
                }
                guard trusted else { return .rejectTrust }
                stream.tls = .established
                return .establish
            }
        }
    }

    /// Runs `body` on the stream of a connecting, starting or open connection; `.none` without one.
    @inline(__always)
    private mutating func modifyAnyStream(_ body: (inout Stream) -> Action) -> Action {
        guard case .active(let phase, var stream) = self else { return .none }
        let action = body(&stream)
        self = .active(phase, stream)
        return action
    }

    /// Runs `body` on the stream of an open connection; `.none` otherwise.
    @inline(__always)
    private mutating func modifyOpenStream(_ body: (inout Stream) -> Action) -> Action {
        guard case .active(.open, _) = self else { return .none }
        return modifyAnyStream(body)
    }
}

// MARK: What the engine reads of the state

extension ConnectionState {
    /// The stream's fields, as the engine reads them (the defaults of a fresh stream when there is none).
    @inline(__always) var readSide: ReadSide { stream?.readSide ?? .open }
    @inline(__always) var writeSide: WriteSide { stream?.writeSide ?? .open }
    @inline(__always) var ending: Ending { stream?.ending ?? .none }
    @inline(__always) var writability: Writability { stream?.writability ?? .writable }
    @inline(__always) var continuous: Continuous { stream?.continuous ?? .off }
    @inline(__always) var tls: TLSPhase { stream?.tls ?? .plain }

    /// Whether the TLS phase is `phase` (``Stream/tlsIs(_:)``; a state without a stream is `plain`).
    @inline(__always) func tlsIs(_ phase: TLSPhase) -> Bool {
        guard case .active(_, let stream) = self else { return phase == .plain }
        return stream.tlsIs(phase)
    }

    // Through `lifecycle`, not a pattern on the payload case: the optimizer folds the switch and the compare
    // into one compare of the phase byte, where `if case .active(.open, _)` tests the case and then the phase
    // (11 instructions per echo round trip, 3,461 to 3,450: `Benchmarks/profile/instructions-per-roundtrip.sh`).
    /// Bytes move (the pump runs, timers count): the connection is open.
    @inline(__always) var isOpen: Bool { lifecycle == .open }
    /// A connect is under way.
    @inline(__always) var isConnecting: Bool { lifecycle == .connecting }
    /// Listening descriptors accept.
    @inline(__always) var isListening: Bool { lifecycle == .listening }
    /// The handshake (or the trust decision) holds the queued reads and writes back.
    @inline(__always) var tlsHoldsData: Bool { tls == .handshaking || tls == .awaitingTrust }
}

extension ConnectionEngine {
    // What the engine reads of its state, by name (read only: the state changes through its transitions).
    // In an extension, not the class body, so that they are not overridable (no dynamic dispatch).
    @inline(__always) var lifecycle: Lifecycle { connectionState.lifecycle }
    @inline(__always) var readSide: ReadSide { connectionState.readSide }
    @inline(__always) var writeSide: WriteSide { connectionState.writeSide }
    @inline(__always) var ending: Ending { connectionState.ending }
    @inline(__always) var writability: Writability { connectionState.writability }
    @inline(__always) var continuous: Continuous { connectionState.continuous }
    @inline(__always) var tlsPhase: TLSPhase { connectionState.tls }
    /// `startTLS`'s markers are queued (a bit test: the plaintext loops ask it on every pass).
    @inline(__always) var tlsQueued: Bool { connectionState.tlsIs(.queued) }
    @inline(__always) var isOpen: Bool { connectionState.isOpen }
    @inline(__always) var isConnecting: Bool { connectionState.isConnecting }
    @inline(__always) var isListening: Bool { connectionState.isListening }
}

// MARK: The transition table, as the code makes it

extension ConnectionState.Event {
    /// The events by name, as the diagram writes them. ``name`` and ``samples(of:)`` switch over every case,
    /// so a new event cannot be left out of the tables.
    enum Name: String, CaseIterable {
        case connectAsked, listenAsked, adopted, connected, registered, closed, readQueued, writeQueued
        case finishAsked, peerFinished, endOfStream, writeShutdownAsked, writesDrained, overHighWater
        case underLowWater, continuousStarted, continuousStopped
        case tlsAsked, tlsMarkersReached, trustAsked, handshakeDone, trustAnswered
    }

    /// The event's name, as the diagram writes it.
    var name: Name {
        switch self {
        case .connectAsked: .connectAsked
        case .listenAsked: .listenAsked
        case .adopted: .adopted
        case .connected: .connected
        case .registered: .registered
        case .closed: .closed
        case .readQueued: .readQueued
        case .writeQueued: .writeQueued
        case .finishAsked: .finishAsked
        case .peerFinished: .peerFinished
        case .endOfStream: .endOfStream
        case .writeShutdownAsked: .writeShutdownAsked
        case .writesDrained: .writesDrained
        case .overHighWater: .overHighWater
        case .underLowWater: .underLowWater
        case .continuousStarted: .continuousStarted
        case .continuousStopped: .continuousStopped
        case .tlsAsked: .tlsAsked
        case .tlsMarkersReached: .tlsMarkersReached
        case .trustAsked: .trustAsked
        case .handshakeDone: .handshakeDone
        case .trustAnswered: .trustAnswered
        }
    }

    /// The events named `name`, with each value of their parameters.
    static func samples(of name: Name) -> [ConnectionState.Event] {
        let bools = [false, true]
        switch name {
        case .connectAsked: return [.connectAsked]
        case .listenAsked: return [.listenAsked]
        case .adopted: return [.adopted]
        case .connected: return [.connected]
        case .registered: return [.registered]
        case .closed: return [.closed]
        case .readQueued: return [.readQueued]
        case .writeQueued: return [.writeQueued]
        case .finishAsked: return ConnectionEngine.Ending.allCases.filter { $0 != .none }.map { .finishAsked($0) }
        case .peerFinished: return [.peerFinished]
        case .endOfStream: return bools.map { .endOfStream(autoDisconnect: $0) }
        case .writeShutdownAsked: return [.writeShutdownAsked]
        case .writesDrained: return [.writesDrained]
        case .overHighWater: return bools.map { .overHighWater(pausesReads: $0) }
        case .underLowWater: return [.underLowWater]
        case .continuousStarted: return [.continuousStarted]
        case .continuousStopped: return [.continuousStopped]
        case .tlsAsked: return [.tlsAsked]
        case .tlsMarkersReached: return [.tlsMarkersReached]
        case .trustAsked: return [.trustAsked]
        case .handshakeDone: return bools.map { .handshakeDone(awaitsTrust: $0) }
        case .trustAnswered:
            return bools.flatMap { trusted in bools.map { .trustAnswered(trusted: trusted, handshakeFinished: $0) } }
        }
    }

    /// Every event, with each value of its parameters.
    static var samples: [ConnectionState.Event] { Name.allCases.flatMap(samples(of:)) }
}

extension ConnectionState.Stream {
    /// Every stream: each value of each field (built from the fields' `allCases`, so a new case is in).
    static var allValues: [ConnectionState.Stream] {
        var all: [ConnectionState.Stream] = []
        for readSide in ConnectionEngine.ReadSide.allCases {
            for writeSide in ConnectionEngine.WriteSide.allCases {
                for ending in ConnectionEngine.Ending.allCases {
                    for writability in ConnectionEngine.Writability.allCases {
                        for continuous in ConnectionEngine.Continuous.allCases {
                            for tls in ConnectionEngine.TLSPhase.allCases {
                                var stream = ConnectionState.Stream()
                                stream.readSide = readSide
                                stream.writeSide = writeSide
                                stream.ending = ending
                                stream.writability = writability
                                stream.continuous = continuous
                                stream.tls = tls
                                all.append(stream)
                            }
                        }
                    }
                }
            }
        }
        return all
    }
}

extension ConnectionState {
    /// The states of each case of ``Lifecycle`` with `streams` where there is a stream (a switch over the
    /// cases, so a new one cannot be left out).
    private static func states(with streams: [Stream]) -> [ConnectionState] {
        ConnectionEngine.Lifecycle.allCases.flatMap { lifecycle -> [ConnectionState] in
            switch lifecycle {
            case .idle: [.idle]
            case .listening: [.listening]
            case .connecting: streams.map(ConnectionState.connecting)
            case .starting: streams.map(ConnectionState.starting)
            case .open: streams.map(ConnectionState.open)
            }
        }
    }

    /// One state of each case, with a fresh stream where there is one.
    static var samples: [ConnectionState] { states(with: [Stream()]) }

    /// Every state: each case, with every stream (``Stream/allValues``) where there is one.
    static var allStates: [ConnectionState] { states(with: Stream.allValues) }

    /// Each change of case an event makes from a state of ``allStates``: the edges docs/architecture.md draws
    /// (the changes within a case, of the stream's fields, are the transition tests' to check).
    static var lifecycleTransitions: [(from: Lifecycle, event: String, to: Lifecycle)] {
        edges(of: \.lifecycle)
    }

    /// Each change of the TLS phase an event makes from a state of ``allStates`` (a state without a stream
    /// counts as `plain`): the TLS edges docs/architecture.md draws.
    static var tlsTransitions: [(from: TLSPhase, event: String, to: TLSPhase)] {
        edges(of: \.tls)
    }

    /// The distinct changes of `field` that the events of ``Event/samples`` make from ``allStates``.
    private static func edges<Field: Equatable>(of field: KeyPath<ConnectionState, Field>) -> [(from: Field, event: String, to: Field)] {
        var edges: [(from: Field, event: String, to: Field)] = []
        for state in allStates {
            for event in Event.samples {
                var next = state
                _ = next.handle(event)
                let from = state[keyPath: field], to = next[keyPath: field]
                guard from != to, !edges.contains(where: { $0.from == from && $0.event == event.name.rawValue && $0.to == to })
                else { continue }
                edges.append((from, event.name.rawValue, to))
            }
        }
        return edges
    }
}
