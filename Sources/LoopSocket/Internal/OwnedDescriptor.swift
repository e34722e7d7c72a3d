import EpollLoop

/// A descriptor an engine registers with its loop through an object of its own rather than as itself: a
/// listening descriptor (``ListenHandler``), a connect attempt (``ConnectAttempt``), a UDP socket's
/// descriptor of one family (``DatagramChannel``). The loop's two calls go on to the engine that owns it,
/// as written here once: readiness with the descriptor's object, so that the engine knows which of its
/// descriptors is ready, and the loop's shutdown, which closes the engine. A conforming class holds the
/// descriptor and its own state, and names the engine method that takes its readiness.
protocol OwnedDescriptor: LoopIOHandler {
    associatedtype Owner: DescriptorOwner
    /// The descriptor registered with this object as its handler.
    var fd: Int32 { get }
    /// The engine the loop's calls go to; nil once an engine held weakly (a listener's) is gone, and then
    /// they do nothing.
    var engine: Owner? { get }
    /// Hands the descriptor's readiness to `engine`. Loop only.
    func ready(_ events: IOEvents, for engine: Owner)
}

/// An engine with ``OwnedDescriptor``s.
protocol DescriptorOwner: AnyObject {
    /// The loop is shutting down: the engine closes, with the error that says so. Loop only.
    func loopWillShutDown()
}

extension OwnedDescriptor {
    @inline(__always)
    func handleIO(_ events: IOEvents) {
        if let engine { ready(events, for: engine) }
    }

    func loopWillShutDown() {
        engine?.loopWillShutDown()
    }
}
