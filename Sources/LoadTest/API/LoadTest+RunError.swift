extension LoadTest {
    /// A run that could not start (descriptor limit, unknown host, no loops) or stopped early because it
    /// could only have counted errors (not one connection made; every connection closed before a reply).
    /// ``message`` is what `loadtest` prints before exiting with status 2.
    public struct RunError: Error, Equatable, CustomStringConvertible, Sendable {
        /// What happened, with the errors by kind and a hint at the cause.
        public let message: String

        /// The message.
        public var description: String { message }
    }
}
