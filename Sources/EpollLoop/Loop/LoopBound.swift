/// A value that may be carried across threads but only read or written on its event loop.
///
/// Lets non-`Sendable` state that lives on a loop travel inside `@Sendable` closures that end up running
/// on that same loop. Every access checks that the caller is on the loop.
///
/// ```swift
/// let counter = LoopBoundBox(0, loop: loop)
/// try loop.execute { counter.value += 1 }
/// ```
public final class LoopBoundBox<Value>: @unchecked Sendable {
    /// The loop the value belongs to.
    public let loop: EventLoop
    private var _value: Value

    /// Boxes `value` for `loop`. Any thread may create the box; only the loop may use the value.
    public init(_ value: Value, loop: EventLoop) {
        self.loop = loop
        self._value = value
    }

    /// The value; reading or writing it off the loop stops the process.
    public var value: Value {
        get {
            loop.preconditionInEventLoop()
            return _value
        }
        set {
            loop.preconditionInEventLoop()
            _value = newValue
        }
    }
}

/// An immutable value that may be carried across threads but only used on its event loop.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop the value belongs to.
    public let loop: EventLoop
    private let _value: Value

    /// Wraps `value` for `loop`; call on the loop.
    public init(_ value: Value, loop: EventLoop) {
        loop.preconditionInEventLoop()
        self.loop = loop
        self._value = value
    }

    /// The value; reading it off the loop stops the process.
    public var value: Value {
        loop.preconditionInEventLoop()
        return _value
    }
}
