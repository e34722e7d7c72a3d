// The events of ``DatagramState`` and the actions they lead to: every change of a UDP socket's state is an
// event handled by `handle(_:)` (in DatagramState.swift, beside the fields only it assigns), which returns what
// the engine is to do. The table these make is what docs/architecture.md draws (StateDiagramTests compares
// them).

extension DatagramState {
    /// What happens to a UDP socket.
    enum Event: Equatable {
        /// An explicit bind is asked (before the descriptors are bound).
        case bindAsked
        /// A bind succeeded, or a send or a connect bound the socket implicitly.
        case bound
        /// A connect is asked (its host is resolved next).
        case connectAsked
        /// The connect's descriptor is connected.
        case connected
        /// The connect failed (its host did not resolve, or `connect` failed).
        case connectFailed
        /// A multicast join or leave is asked.
        case multicastAsked
        /// `receiveOnce()` or `beginReceiving()`; `hasDescriptor`: the socket has one to read (bound,
        /// connected, or created by a send or an option).
        case receiveAsked(ReceiveMode, hasDescriptor: Bool)
        /// `pauseReceiving()`.
        case pauseAsked
        /// A datagram was delivered.
        case delivered
        /// The front send hit `EAGAIN` (`.writable`), `ENOBUFS` (`.noBuffers`) or went to the filter's queue
        /// (`.filter`).
        case sendWaits(SendWait)
        /// What the front send waited for came (EPOLLOUT, the retry timer, the filter's answer).
        case sendWaitEnded(SendWait)
        /// The route refused a `UDP_SEGMENT` send.
        case segmentationRefused
        /// `closeAfterSending()`; `sendsQueued`, `pumping`: what the close waits for.
        case closeAfterSendsAsked(sendsQueued: Bool, pumping: Bool)
        /// The pump ended; `sendsQueued`: sends are left for the next one.
        case pumpEnded(sendsQueued: Bool)
        /// The socket closes, asked to or on an error: everything of it goes at once.
        case closed
    }

    /// The two ways of asking to receive.
    enum ReceiveMode: CaseIterable {
        /// `receiveOnce()`: the next datagram that passes the filter.
        case once
        /// `beginReceiving()`: every datagram.
        case continuous
    }

    /// What the engine does after an event.
    enum Action: Equatable {
        /// Nothing: the event does not apply here (a stale or a repeated one).
        case none
        /// The call goes ahead, or the state changed with nothing else to do now.
        case proceed
        /// Refuse the call, for this reason.
        case refuse(Refusal)
        /// Set the descriptors' interest again, and deliver any datagrams a pause held back.
        case startReceiving
        /// Set the descriptors' interest again: receiving stopped.
        case stopReceiving
        /// Report the connect, and pump the sends that waited for it.
        case reportConnected
        /// Report the connect's failure, and pump the sends that waited for it (they then fail or leave
        /// unconnected).
        case reportConnectFailed
        /// Pump the send queue: what the front send waited for came.
        case pump
        /// Close now: `closeAfterSending()`'s queue is empty.
        case close
        /// Tear the socket down: timers, queued sends (each reported), descriptors, the close report.
        case tearDown
    }

}

// MARK: The transition table, as the code makes it

extension DatagramState.Event {
    /// The events by kind, without their parameters: a new event is a compile error in ``kind`` until it has
    /// one, and a new kind in ``samples(of:)`` until it has samples, so ``samples`` holds every event.
    enum Kind: CaseIterable {
        case bindAsked, bound, connectAsked, connected, connectFailed, multicastAsked, receiveAsked, pauseAsked
        case delivered, sendWaits, sendWaitEnded, segmentationRefused, closeAfterSendsAsked, pumpEnded, closed
    }

    var kind: Kind {
        switch self {
        case .bindAsked: .bindAsked
        case .bound: .bound
        case .connectAsked: .connectAsked
        case .connected: .connected
        case .connectFailed: .connectFailed
        case .multicastAsked: .multicastAsked
        case .receiveAsked: .receiveAsked
        case .pauseAsked: .pauseAsked
        case .delivered: .delivered
        case .sendWaits: .sendWaits
        case .sendWaitEnded: .sendWaitEnded
        case .segmentationRefused: .segmentationRefused
        case .closeAfterSendsAsked: .closeAfterSendsAsked
        case .pumpEnded: .pumpEnded
        case .closed: .closed
        }
    }

    /// The events of `kind`, with every value of their parameters.
    static func samples(of kind: Kind) -> [DatagramState.Event] {
        let bools = [false, true]
        switch kind {
        case .bindAsked: return [.bindAsked]
        case .bound: return [.bound]
        case .connectAsked: return [.connectAsked]
        case .connected: return [.connected]
        case .connectFailed: return [.connectFailed]
        case .multicastAsked: return [.multicastAsked]
        case .receiveAsked:
            return DatagramState.ReceiveMode.allCases.flatMap { mode in bools.map { .receiveAsked(mode, hasDescriptor: $0) } }
        case .pauseAsked: return [.pauseAsked]
        case .delivered: return [.delivered]
        case .sendWaits: return DatagramState.SendWait.allCases.map { .sendWaits($0) }
        case .sendWaitEnded: return DatagramState.SendWait.allCases.map { .sendWaitEnded($0) }
        case .segmentationRefused: return [.segmentationRefused]
        case .closeAfterSendsAsked:
            return bools.flatMap { queued in bools.map { .closeAfterSendsAsked(sendsQueued: queued, pumping: $0) } }
        case .pumpEnded: return bools.map { .pumpEnded(sendsQueued: $0) }
        case .closed: return [.closed]
        }
    }

    /// Every event, with every value of its parameters.
    static var samples: [DatagramState.Event] { Kind.allCases.flatMap(samples(of:)) }

    /// The event's name, as the diagrams write it: the kind, with the mode or the wait it is about.
    var name: String {
        switch self {
        case .receiveAsked(let mode, _): "receiveAsked(\(mode))"
        case .sendWaits(let wait): "sendWaits(\(wait))"
        case .sendWaitEnded(let wait): "sendWaitEnded(\(wait))"
        default: "\(kind)"
        }
    }
}

extension DatagramState.Lifecycle {
    /// Every lifecycle, with each value of what it carries.
    static var samples: [DatagramState.Lifecycle] {
        [.idle, .bound, .connecting(fromBound: false), .connecting(fromBound: true), .connected, .closed]
    }

    /// The case's name, without what it carries (the diagram's state).
    var name: String {
        switch self {
        case .idle: "idle"
        case .bound: "bound"
        case .connecting: "connecting"
        case .connected: "connected"
        case .closed: "closed"
        }
    }
}

extension DatagramState {
    /// One of the parts of the state a diagram draws, by the name of its type.
    enum Part: String, CaseIterable {
        case lifecycle = "DatagramState.Lifecycle"
        case receiving = "DatagramState.Receiving"
        case ending = "DatagramState.Ending"
        case sendWait = "DatagramState.SendWait"

        /// The part's case in `state`, by name.
        func name(in state: DatagramState) -> String {
            switch self {
            case .lifecycle: state.lifecycle.name
            case .receiving: "\(state.receiving)"
            case .ending: "\(state.ending)"
            case .sendWait: "\(state.sendWait)"
            }
        }
    }

    /// Every state: each combination of the parts' values.
    static var samples: [DatagramState] {
        Lifecycle.samples.flatMap { lifecycle in
            Receiving.allCases.flatMap { receiving in
                Ending.allCases.flatMap { ending in
                    SendWait.allCases.flatMap { wait in
                        [false, true].map {
                            DatagramState(lifecycle: lifecycle, receiving: receiving, ending: ending, sendWait: wait, segmentationRefused: $0)
                        }
                    }
                }
            }
        }
    }

    /// Every event in every state of ``samples``: the next state and the action.
    static var transitionTable: [(from: DatagramState, event: Event, to: DatagramState, action: Action)] {
        samples.flatMap { state in
            Event.samples.map { event in
                var next = state
                let action = next.handle(event)
                return (state, event, next, action)
            }
        }
    }

    /// Each change of `part`'s case an event makes, once: the edges docs/architecture.md draws for it (the
    /// changes within a case, of what it carries, are the transition tests' to check).
    static func transitions(of part: Part) -> [(from: String, event: String, to: String)] {
        var edges: [(from: String, event: String, to: String)] = []
        for row in transitionTable {
            let from = part.name(in: row.from), to = part.name(in: row.to), event = row.event.name
            guard from != to, !edges.contains(where: { $0 == (from, event, to) }) else { continue }
            edges.append((from, event, to))
        }
        return edges
    }
}
