import EpollLoop

/// `loadtest MODE --help` (and `loadtest help MODE`): one mode's options, the common ones that mean something
/// in it, its defaults and its example. It all comes from what the parser and the mode already hold
/// (``LoadMode/options``, ``LoadMode/example``, ``LoadConfig/init(mode:)``), so a flag added to a mode's
/// ``ModeOptions`` is in the mode's help with no further line.
extension CommandLineParser {
    /// The help text of `mode` as `loadtest` runs it.
    package static func usage(of mode: LoadMode) -> String {
        let target = mode.takes("--url") ? "--url URL" : "--port P"
        var text = "usage: loadtest \(mode.name) \(target) [OPTIONS]\n\n" + mode.summary + "\n"
        if !mode.example.isEmpty {
            text += "\nExample:\n  loadtest \(mode.name) " + mode.example.map(shellQuoted).joined(separator: " ") + "\n"
        }
        return text + optionsHelp(of: mode) + "\n\nAll modes and merge: loadtest --help\n\n" + usageTail
    }

    /// The mode's own options (under `title`), the common options that apply to it, and its defaults.
    static func optionsHelp(of mode: LoadMode, title: String? = nil) -> String {
        let own = mode.options.map(\.usage).joined(separator: "\n")
        return (own.isEmpty ? "" : "\n\(title ?? "Options of \(mode.name) mode:")\n" + own + "\n") + "\n"
            + commonOptionsHelp(for: mode) + "\n\n" + defaults(of: mode)
    }

    /// The modes in which a common option means something, for those that do not apply to every mode.
    private static let commonOptionModes: [String: @Sendable (LoadMode) -> Bool] = [
        "--size": { $0.takesSize },
        "--pipeline": { $0.pipelines },
        "--rate": { $0.supportsOpenLoop },
        "--stages": { $0.supportsOpenLoop },
        "--pacing-slack": { $0.supportsOpenLoop },
        "--warmup": { $0.warmsUp },
        "--tls": { $0.supportsTLS },
        "--tls-ca": { $0.supportsTLS },
        "--insecure": { $0.supportsTLS },
        "--alpn": { $0.supportsTLS },
        "--tls-resume": { $0.supportsTLS },
        "--tls-server-name": { $0.supportsTLS },
    ]

    /// Whether the common option `flag` means something in `mode`.
    static func commonOption(_ flag: String, appliesTo mode: LoadMode) -> Bool {
        commonOptionModes[flag].map { $0(mode) } ?? true
    }

    /// The common options' help, one entry per flag (its first line and those continuing it).
    static var commonOptionEntries: [(flag: String, text: String)] {
        var entries: [(flag: String, text: String)] = []
        for line in commonOptions.split(separator: "\n").dropFirst() {
            if line.hasPrefix("  --") {
                entries.append((String(line.dropFirst(2).prefix { $0 != " " }), String(line)))
            } else if !entries.isEmpty {
                entries[entries.count - 1].text += "\n" + line
            }
        }
        return entries
    }

    /// The common options' help without those that mean nothing in `mode`.
    static func commonOptionsHelp(for mode: LoadMode) -> String {
        "Common options:\n" + commonOptionEntries.filter { commonOption($0.flag, appliesTo: mode) }
            .map(\.text).joined(separator: "\n")
    }

    /// `Defaults in tcp mode: --connections 100, --pipeline 1, …`, read from a fresh configuration of the mode.
    static func defaults(of mode: LoadMode) -> String {
        let config = LoadConfig(mode: mode)
        func time(_ seconds: Double) -> String {
            seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(Int((seconds * 1000).rounded()))ms"
        }
        var parts = ["--connections \(config.connections)"]
        if commonOption("--size", appliesTo: mode) { parts.append("--size \(config.size)") }
        if commonOption("--pipeline", appliesTo: mode) { parts.append("--pipeline \(config.pipeline)") }
        parts.append("--duration \(time(config.duration))")
        if mode.warmsUp { parts.append("--warmup \(time(config.warmup))") }
        parts.append("--timeout \(time(config.timeout))")
        parts.append("--loops \(config.loops) (one per core\(mode.startsServer ? ", less the server's" : ""))")
        parts.append(mode.supportsOpenLoop ? "closed loop (no --rate)" : "closed loop")
        var lines = ["Defaults in \(mode.name) mode:"]
        for part in parts {
            if lines[lines.count - 1].count + part.count + 2 > 100 { lines.append(" ") }
            lines[lines.count - 1] += " " + part + (part == parts.last ? "" : ",")
        }
        return lines.joined(separator: "\n")
    }

    /// `argument` as a shell reads it back: in single quotes unless it holds only safe characters.
    static func shellQuoted(_ argument: String) -> String {
        let safe = argument.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || "-_./:=,@%+".utf8.contains(c)
        }
        return safe && !argument.isEmpty ? argument : "'" + argument.replacing("'", with: "'\\''") + "'"
    }
}
