extension ModeOptions {
    /// How much of a response http mode reads (``HTTPResponseLimits``).
    static let httpLimits = ModeOptions(
        flags: ["--max-head", "--max-body"],
        usage: """
              --max-head B        the longest response head, and trailers (suffix k = KiB; default 8k); a
                                  longer one is a 'head_too_large' error
              --max-body B        the longest response body (suffix k = KiB, m = MiB; default 1m); a longer
                                  one is a 'body_too_large' error (bodies are read in pieces, never held)
            """
    ) { flag, config, value throws(ArgumentError) in
        switch flag {
        case "--max-head":
            config.httpLimits.maxHead = try CommandLineParser.bytes(flag, try value(), range: 64...(16 << 20))
        case "--max-body":
            config.httpLimits.maxBody = try CommandLineParser.bytes(flag, try value(), range: 0...(1 << 50))
        default:
            return false
        }
        return true
    }
}
