import FoundationEssentials

/// HdrHistogram's V2 histogram encoding, as its `encodeIntoCompressedByteBuffer` writes it and its log
/// readers (HistogramLogProcessor, the plotters, the C, Go and Python ports) read it:
///
/// - payload: the counts array up to the last non-zero count, each count a ZigZag LEB128 varint (at most
///   9 bytes, the ninth carrying 8 bits), a run of two or more zero counts written as its negated length;
/// - header (40 bytes, big-endian): cookie `0x1c849313`, payload length, normalizing index offset (0),
///   significant value digits, lowest discernible value, highest trackable value, integer-to-double ratio;
/// - compressed: cookie `0x1c849314`, the zlib stream's length, a zlib stream of header and payload.
///
/// ``Histogram`` has exactly HdrHistogram's layout for 2 significant digits and a lowest discernible value of
/// 1 (values below 256 exact, then 128 sub-buckets per power of two, the same counts index for every value),
/// so its counts are encoded as they are. The zlib stream uses stored (uncompressed) deflate blocks: valid for
/// every inflater, and no dependency; the counts payload is a few hundred bytes per interval.
package enum HdrHistogramEncoding {
    /// The V2 cookie, with the word-size nibble that marks the ZigZag LEB128 payload.
    package static let cookie: UInt32 = 0x1c84_9303 | 0x10
    /// The V2 compressed cookie.
    static let compressedCookie: UInt32 = 0x1c84_9304 | 0x10
    /// The highest trackable value written in the header: HdrHistogram's auto-resize ceiling
    /// (`Long.MAX_VALUE / 2`), so a reader's counts array covers every value ``Histogram`` can hold in practice.
    package static let highestTrackableValue: UInt64 = UInt64(Int64.max / 2)

    /// The uncompressed encoding (header and payload) of `counts` as HdrHistogram writes it.
    package static func encode(counts: [UInt64], significantDigits: Int32 = 2, lowestDiscernibleValue: UInt64 = 1,
                              highestTrackableValue: UInt64 = highestTrackableValue,
                              conversionRatio: Double = 1) -> [UInt8] {
        var payload: [UInt8] = []
        let limit = (counts.lastIndex { $0 != 0 } ?? -1) + 1
        var i = 0
        while i < limit {
            let count = counts[i]
            i += 1
            if count == 0 {
                var zeros: Int64 = 1
                while i < limit && counts[i] == 0 {
                    zeros += 1
                    i += 1
                }
                putZigZag(zeros > 1 ? -zeros : 0, into: &payload)
            } else {
                putZigZag(Int64(clamping: count), into: &payload)
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(40 + payload.count)
        put32(cookie, &out)
        put32(UInt32(payload.count), &out)
        put32(0, &out)  // normalizing index offset
        put32(UInt32(bitPattern: significantDigits), &out)
        put64(lowestDiscernibleValue, &out)
        put64(highestTrackableValue, &out)
        put64(conversionRatio.bitPattern, &out)
        out += payload
        return out
    }

    /// The compressed encoding of `histogram`: the bytes a log line carries in base64.
    package static func compressed(_ histogram: Histogram) -> [UInt8] {
        let zlib = Zlib.storedStream(encode(counts: histogram.counts))
        var out: [UInt8] = []
        put32(compressedCookie, &out)
        put32(UInt32(zlib.count), &out)
        return out + zlib
    }

    /// ZigZag, then LEB128 in at most 9 bytes (the ninth carries a full 8 bits), as `ZigZagEncoding.putLong`.
    static func putZigZag(_ value: Int64, into out: inout [UInt8]) {
        var v = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        for _ in 0..<8 {
            if v >> 7 == 0 {
                out.append(UInt8(v))
                return
            }
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(truncatingIfNeeded: v))
    }

    private static func put32(_ v: UInt32, _ out: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    private static func put64(_ v: UInt64, _ out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
}

/// The zlib container (RFC 1950) around stored deflate blocks (RFC 1951 §3.2.4): no compression, any inflater
/// reads it.
enum Zlib {
    static func storedStream(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]  // deflate, 32 KiB window; FCHECK makes 0x7801 a multiple of 31
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out.append(final)  // BFINAL, BTYPE 00 (stored)
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        let sum = adler32(data)
        out += [UInt8(sum >> 24), UInt8((sum >> 16) & 0xFF), UInt8((sum >> 8) & 0xFF), UInt8(sum & 0xFF)]
        return out
    }

    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }
}

extension Histogram {
    /// The values recorded in `self` and not in `earlier` (a snapshot of the same histogram taken before),
    /// with the interval's min and max taken from its buckets: one interval of an HdrHistogram log.
    func subtracting(_ earlier: Histogram) -> Histogram {
        guard count > earlier.count else { return Histogram() }
        var pairs: [(index: Int, count: UInt64)] = []
        for (i, c) in counts.enumerated() {
            let before = i < earlier.counts.count ? earlier.counts[i] : 0
            if c > before { pairs.append((i, c - before)) }
        }
        guard let first = pairs.first, let last = pairs.last else { return Histogram() }
        let low = Swift.max(Self.lowestValue(ofBucket: first.index), min)
        let high = Swift.min(Self.lowestValue(ofBucket: last.index) + Self.width(ofBucket: last.index) - 1, max)
        return Histogram(buckets: pairs, min: low, max: high, sum: sum &- earlier.sum) ?? Histogram()
    }
}
