/// Walks a command line for a hand-written parser (the package depends on no argument parser): each flag in
/// its long name whatever the spelling (`-p` is `--port` when the program says so), its value given as the
/// next argument or after `=` (`--port=9000`, `-p=9000`). The example servers and `loadtest` both parse
/// through it, so the two accept the same forms.
///
/// ```swift
/// var scanner = ArgumentScanner(["-p", "9000", "--host=::1"], aliases: ["-p": "--port"])
/// while let flag = scanner.next() {
///     switch flag {
///     case "--port": port = scanner.value()   // "9000"
///     case "--host": host = scanner.value()   // "::1"
///     default: break
///     }
/// }
/// ```
public struct ArgumentScanner: Sendable {
    private var rest: ArraySlice<String>
    private let aliases: [String: String]
    /// The value given with `=` to the flag just returned, until ``value()`` takes it.
    private var attached: String?
    /// Every flag returned so far, in its long name.
    public private(set) var given: Set<String> = []

    /// A scanner over `arguments` (without the program's name), reading each key of `aliases` as its value.
    public init(_ arguments: some Sequence<String>, aliases: [String: String] = [:]) {
        rest = ArraySlice(arguments)
        self.aliases = aliases
    }

    /// The next flag (its long name) or plain argument; nil at the end. A value attached with `=` to a flag
    /// that takes none comes back as a plain argument, for the parser to refuse.
    public mutating func next() -> String? {
        if let stray = attached {
            attached = nil
            return stray
        }
        guard var argument = rest.popFirst() else { return nil }
        if argument.hasPrefix("-"), let equals = argument.firstIndex(of: "="),
           argument.hasPrefix("--") || aliases[String(argument[..<equals])] != nil {
            attached = String(argument[argument.index(after: equals)...])
            argument = String(argument[..<equals])
        }
        let flag = aliases[argument] ?? argument
        if flag.hasPrefix("-") { given.insert(flag) }
        return flag
    }

    /// The value of the flag just returned by ``next()``: what followed its `=`, or the next argument; nil
    /// when there is none.
    public mutating func value() -> String? {
        if let value = attached {
            attached = nil
            return value
        }
        return rest.popFirst()
    }

    /// The arguments not read yet.
    public var remaining: ArraySlice<String> { rest }

    /// `HOST:PORT`, `[v6]:PORT` or `:PORT` (127.0.0.1), as `--metrics` takes it; nil if malformed.
    public static func hostPort(_ text: String) -> (host: String, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "127.0.0.1" }
        return host.contains("[") || host.contains("]") ? nil : (host, port)
    }
}
