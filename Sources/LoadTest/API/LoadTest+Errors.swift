extension LoadTest {
    /// The errors of a run's window: how many, of which kind, and the first one's text.
    public struct Errors: Sendable, Equatable {
        /// All errors.
        public let total: UInt64
        /// The non-zero counts by kind (`refused`, `reset`, `timeout`, `mismatch`, `bad_response`, …: the JSON's
        /// `errors.by_kind`).
        public let byKind: [String: UInt64]
        /// The first error's text, a hint at what went wrong.
        public let first: String?

        init(_ errors: RunResult.Errors) {
            total = errors.total
            byKind = errors.byKind
            first = errors.first
        }
    }
}
