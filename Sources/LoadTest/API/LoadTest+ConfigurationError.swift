extension LoadTest {
    /// A configuration the `loadtest` command line would refuse: ``message`` is the command line's own, word
    /// for word (it names the flag, as in `--connections takes a whole number from 1 to 1000000, not '0'`).
    public struct ConfigurationError: Error, Equatable, CustomStringConvertible, Sendable {
        /// What is wrong and what to give instead.
        public let message: String

        /// The message.
        public var description: String { message }
    }
}
