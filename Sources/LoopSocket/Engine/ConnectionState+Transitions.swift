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
        /// `wasStarting`: what the descriptor was; `readSideOpen`: the peer had not finished.
        case tearDown(wasOpen: Bool, wasStarting: Bool, readSideOpen: Bool)
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
            case .listening: action = .tearDown(wasOpen: false, wasStarting: false, readSideOpen: true)
            case .active(let phase, let stream):
                action = .tearDown(wasOpen: phase == .open, wasStarting: phase == .starting, readSideOpen: stream.readSide == .open)
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
}

// MARK: The transition table, as the code makes it

extension ConnectionState.Event {
    /// The event's name, as the diagram writes it.
    var name: String {
        switch self {
        case .connectAsked: "connectAsked"
        case .listenAsked: "listenAsked"
        case .adopted: "adopted"
        case .connected: "connected"
        case .registered: "registered"
        case .closed: "closed"
        case .readQueued: "readQueued"
        case .writeQueued: "writeQueued"
        case .finishAsked: "finishAsked"
        case .peerFinished: "peerFinished"
        case .endOfStream: "endOfStream"
        case .writeShutdownAsked: "writeShutdownAsked"
        case .writesDrained: "writesDrained"
        case .overHighWater: "overHighWater"
        case .underLowWater: "underLowWater"
        case .continuousStarted: "continuousStarted"
        case .continuousStopped: "continuousStopped"
        }
    }

    /// Every event, with each value of its parameters.
    static var samples: [ConnectionState.Event] {
        [.connectAsked, .listenAsked, .adopted, .connected, .registered, .closed, .readQueued, .writeQueued]
            + ConnectionEngine.Ending.allCases.filter { $0 != .none }.map { .finishAsked($0) }
            + [.peerFinished, .endOfStream(autoDisconnect: true), .endOfStream(autoDisconnect: false),
               .writeShutdownAsked, .writesDrained, .overHighWater(pausesReads: true),
               .overHighWater(pausesReads: false), .underLowWater, .continuousStarted, .continuousStopped]
    }
}

extension ConnectionState {
    /// One state of each case, with a fresh stream where there is one.
    static var samples: [ConnectionState] {
        [.idle, .connecting(Stream()), .listening, .starting(Stream()), .open(Stream())]
    }

    /// Each change of case an event makes from a state of ``samples``: the edges docs/architecture.md draws
    /// (the changes within a case, of the stream's fields, are the transition tests' to check).
    static var lifecycleTransitions: [(from: Lifecycle, event: String, to: Lifecycle)] {
        var edges: [(from: Lifecycle, event: String, to: Lifecycle)] = []
        for state in samples {
            for event in Event.samples {
                var next = state
                _ = next.handle(event)
                guard next.lifecycle != state.lifecycle,
                      !edges.contains(where: { $0.from == state.lifecycle && $0.event == event.name }) else { continue }
                edges.append((state.lifecycle, event.name, next.lifecycle))
            }
        }
        return edges
    }
}
