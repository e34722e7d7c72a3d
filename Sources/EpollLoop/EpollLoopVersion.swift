/// The version of this package (EpollLoop, LoopSocket and the tools built with them), in one place: the
/// `--version` of `loadtest` and of every example server prints it, and a test keeps it equal to the newest
/// release in CHANGELOG.md.
///
/// Semantic versioning covers the public API of `EpollLoop` and `LoopSocket` (and the `CocoaAsyncSocket`
/// module that re-exports it), `loadtest`'s flags, exit statuses and JSON report keys, and the example
/// servers' flags; see CHANGELOG.md.
///
/// ```swift
/// print("built with EpollLoop \(EpollLoopVersion.current)")
/// ```
public enum EpollLoopVersion {
    /// The version, `MAJOR.MINOR.PATCH`.
    public static let current = "1.0.0"
}
