/// The id of an operation queued from another thread (a read, a writability wait), and whether its
/// cancellation reached the loop first; loop-confined, so the queueing and the cancellation handler see one
/// order whichever threads they started on.
final class PendingCancellation<ID>: @unchecked Sendable {
    var id: ID?
    var cancelled = false
}
