/// The version of this package (EpollLoop, LoopSocket and the tools built with them), in one place: the
/// `--version` of `loadtest` and of every example server prints it, and a test keeps ``release`` equal to the
/// newest release in CHANGELOG.md.
///
/// A build from a commit that is not a release says so: ``current`` is ``release`` with `+dev` after it
/// (`1.0.0+dev`: the 1.0.0 release and the changes made since). The release commit sets ``isRelease`` to
/// true and the next commit sets it back, so no git is needed at run time to tell the two apart.
///
/// Semantic versioning covers the public API of `EpollLoop` and `LoopSocket` (and the `CocoaAsyncSocket`
/// module that re-exports it), `loadtest`'s flags, exit statuses and JSON report keys, and the example
/// servers' flags; see CHANGELOG.md.
///
/// ```swift
/// print("built with EpollLoop \(EpollLoopVersion.current)")   // "built with EpollLoop 1.0.0+dev"
/// ```
public enum EpollLoopVersion {
    /// The newest release this source contains, `MAJOR.MINOR.PATCH`.
    public static let release = "1.0.0"
    /// Whether this source is that release itself, not a commit after it: true only in a release commit.
    public static let isRelease = false
    /// The version to print: ``release``, followed by `+dev` unless ``isRelease`` (semantic versioning's build
    /// metadata, which does not change precedence).
    public static var current: String { isRelease ? release : release + "+dev" }
}
