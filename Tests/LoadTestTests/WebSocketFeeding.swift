/// Hands `bytes` to `body` in pieces of `split` bytes (at least one), as reads from a socket would come, until
/// `body` returns false or the bytes run out.
func feedWebSocketBytes(_ bytes: [UInt8], split: Int, _ body: (inout UnsafeRawBufferPointer) -> Bool) {
    bytes.withUnsafeBytes { all in
        var start = 0
        while start < all.count {
            let end = min(all.count, start + max(1, min(split, all.count)))
            var input = UnsafeRawBufferPointer(rebasing: all[start..<end])
            start = end
            guard body(&input) else { return }
        }
    }
}
