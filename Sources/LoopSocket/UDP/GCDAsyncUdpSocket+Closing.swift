import EpollLoop
import FoundationEssentials

/// Closing: the public calls; the engine's side is `DatagramEngine+Close.swift`.
extension GCDAsyncUdpSocket {
    /// Closes the socket now. Queued sends are reported with `closedError` (GCDAsyncUdpSocket dropped them
    /// silently); `udpSocketDidClose(_:withError:)` follows with a nil error if the socket had a descriptor.
    /// The socket may be bound again afterwards.
    ///
    /// It returns once the socket is closed (GCDAsyncUdpSocket's `dispatch_sync`), from any thread, another
    /// event loop's included, except when that wait could deadlock: called on loop A's thread while this
    /// socket's loop waits, itself or through other loops, for A, it starts the close on the socket's loop
    /// and returns at once, before the socket is closed (``isClosed()`` may still say false;
    /// `udpSocketDidClose` tells when it is).
    public func close() {
        switch waitForLoop({ closeWithError(nil) }) {
        case .ran, .loopShutDown: break
        case .wouldDeadlock: onLoop { [self] in closeWithError(nil) }
        }
    }

    /// Closes the socket once every queued send has been sent or has failed.
    public func closeAfterSending() {
        onLoop { [self] in closeAfterSends() }
    }
}
