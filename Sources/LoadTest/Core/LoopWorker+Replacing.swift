/// Connections whose slot opens a new connection when the server ends one on purpose and says so (http mode
/// after `Connection: close`, ws mode after a normal close frame): the bookkeeping both share. A replacement
/// is not a new connection for the run's counts: it settles nothing, and only `open` follows it.
extension LoopWorker {
    /// A connection (or its replacement, when `replacing`) is up.
    func replaceableConnectionOpened(replacing: inout Bool) {
        if replacing {
            replacing = false
            open += 1
        } else {
            connectionSettled(ok: true)
        }
    }

    /// A connection ended in `previous` state: true when its slot is to connect again now (it was open and
    /// is being replaced); otherwise the connection's end is counted (a failed connect settled, unless it was
    /// a replacement's) along with its `error`, if any.
    func replaceableConnectionEnded(
        from previous: LoadConnectionState, replacing: inout Bool, error: (any Error)?
    ) -> Bool {
        if previous == .open { connectionClosed() }
        if previous == .open && replacing && !stopping { return true }
        if previous == .connecting {
            if replacing { replacing = false } else { connectionSettled(ok: false) }
        }
        if let error { recordError(ErrorKind.classify(error), "\(error)") }
        return false
    }
}
