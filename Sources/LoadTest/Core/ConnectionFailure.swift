/// Why a connection ended, as the report counts it: the ``ErrorKind`` and the words for the first error.
struct ConnectionFailure: Error {
    let kind: ErrorKind
    let message: String

    init(_ kind: ErrorKind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A socket error, sorted by ``ErrorKind/classify(_:)``.
    init(_ error: any Error) {
        self.init(ErrorKind.classify(error), "\(error)")
    }
}
