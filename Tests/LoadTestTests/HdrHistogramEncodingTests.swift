import Foundation
import Glibc
import XCTest
@testable import LoadTest

/// The V2 encoding against HdrHistogram's own test data (jHiccup-2.0.7S.logV2.hlog in HdrHistogram's
/// src/test/resources, written by the Java `HistogramLogWriter`): each vector is inflated with the system
/// zlib, its counts decoded, and re-encoded here, which must give the very same bytes. Our own compressed
/// output goes back through zlib and the same decoder.
final class HdrHistogramEncodingTests: XCTestCase {
    /// The first five interval histograms of jHiccup-2.0.7S.logV2.hlog, and their Interval_Max (ms).
    static let vectors: [(base64: String, maxMs: Double)] = [
        ("HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=", 2.769),
        ("HISTFAAAAEJ42pNpmSzMwMAgxwABTBDKT4GBgdnNYMcCBvsPEBEWLj45FTExAT4pBSEBKa6UkAgBi1uM7xjfMMlwMDABAC0CCjM=", 0.442),
        ("HISTFAAAAD942pNpmSzMwMAgwwABTBDKT4GBgdnNYMcCBvsPEBE+Ph4OLgk5OSkeIS4+LgEeswIDo1+MbmdYNASYAA51CSo=", 0.426),
        ("HISTFAAAAD942pNpmSzMwMAgwwABTBDKT4GBgdnNYMcCBvsPEBExPiEpITEFGTkRKSEeOR6FkCg1hTeMXvNYlHhYABQ5CTo=", 0.426),
        ("HISTFAAAAD942pNpmSzMwMAgwwABTBDKT4GBgdnNYMcCBvsPEBE2PiERBREpBREhER4+Hj4uvQAdrTlMBldYDDhYAAugCKk=", 0.426),
    ]

    struct Decoded {
        var cookie: UInt32
        var digits: Int32
        var lowest: UInt64
        var highest: UInt64
        var ratio: Double
        var counts: [UInt64]
    }

    // MARK: A reference decoder (independent of the encoder under test)

    /// zlib's `uncompress`, from the system library.
    static func inflate(_ bytes: [UInt8], capacity: Int = 1 << 20) throws -> [UInt8] {
        typealias Uncompress = @convention(c) (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt>, UnsafePointer<UInt8>, UInt) -> Int32
        let library = try XCTUnwrap(dlopen("libz.so.1", RTLD_NOW), "the system zlib (libz.so.1)")
        defer { dlclose(library) }
        let uncompress = unsafeBitCast(try XCTUnwrap(dlsym(library, "uncompress")), to: Uncompress.self)
        var out = [UInt8](repeating: 0, count: capacity)
        var length = UInt(capacity)
        let status = out.withUnsafeMutableBufferPointer { o in
            bytes.withUnsafeBufferPointer { uncompress(o.baseAddress!, &length, $0.baseAddress!, UInt($0.count)) }
        }
        XCTAssertEqual(status, 0, "zlib uncompress")
        return Array(out[0..<Int(length)])
    }

    static func be32(_ b: [UInt8], _ at: Int) -> UInt32 { b[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    static func be64(_ b: [UInt8], _ at: Int) -> UInt64 { b[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }

    /// The compressed wrapper off, inflated.
    static func unwrap(_ compressed: [UInt8]) throws -> [UInt8] {
        XCTAssertEqual(be32(compressed, 0), 0x1c84_9314, "V2 compressed cookie")
        XCTAssertEqual(Int(be32(compressed, 4)), compressed.count - 8, "compressed length")
        return try inflate(Array(compressed[8...]))
    }

    static func decode(_ encoded: [UInt8]) -> Decoded {
        let payloadLength = Int(be32(encoded, 4))
        XCTAssertEqual(payloadLength, encoded.count - 40, "payload length")
        var counts: [UInt64] = []
        var i = 40
        while i < encoded.count {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = encoded[i]
                i += 1
                if shift == 56 {  // the ninth byte carries 8 bits
                    value |= UInt64(byte) << 56
                    break
                }
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            let signed = Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
            if signed < 0 { counts += Array(repeating: 0, count: Int(-signed)) } else { counts.append(UInt64(signed)) }
        }
        return Decoded(cookie: be32(encoded, 0), digits: Int32(bitPattern: be32(encoded, 12)), lowest: be64(encoded, 16),
                       highest: be64(encoded, 24), ratio: Double(bitPattern: be64(encoded, 32)), counts: counts)
    }

    // MARK: Tests

    func testReencodingHdrHistogramsOwnVectorsGivesTheSameBytes() throws {
        for (text, maxMs) in Self.vectors {
            let encoded = try Self.unwrap(Array(try XCTUnwrap(Data(base64Encoded: text))))
            let vector = Self.decode(encoded)
            XCTAssertEqual(vector.cookie, 0x1c84_9313)
            XCTAssertGreaterThan(vector.counts.reduce(0, +), 0)
            XCTAssertEqual(HdrHistogramEncoding.encode(counts: vector.counts, significantDigits: vector.digits,
                                                       lowestDiscernibleValue: vector.lowest, highestTrackableValue: vector.highest,
                                                       conversionRatio: vector.ratio),
                           encoded, text)
            // The last non-zero count is the interval's max, as the log line says (HdrHistogram's value of a
            // counts index: sub-buckets from the digits, the unit from the lowest discernible value).
            let subBucketCount = 1 << Int((log2(2 * pow(10, Double(vector.digits)))).rounded(.up))
            let half = subBucketCount / 2
            let last = vector.counts.lastIndex { $0 != 0 }!
            let bucket = max(0, last / half - 1)
            let sub = last / half == 0 ? last : last % half + half
            let unit = UInt64(63 - vector.lowest.leadingZeroBitCount)  // log2 of the lowest discernible value
            let value = UInt64(sub) << (UInt64(bucket) + unit)
            let highest = value + (UInt64(1) << (UInt64(bucket) + unit)) - 1
            XCTAssertEqual(Double(highest) / 1e6, maxMs, accuracy: maxMs / 100, "the max of \(text)")
        }
    }

    func testOurCompressedHistogramDecodesToOurCounts() throws {
        var histogram = Histogram()
        for v: UInt64 in [1, 1, 300, 45_000, 45_100, 1_000_000, 123_456_789, 10_000_000_000] { histogram.record(v) }
        histogram.record(77_777, times: 1000)
        let compressed = HdrHistogramEncoding.compressed(histogram)
        let decoded = Self.decode(try Self.unwrap(compressed))
        XCTAssertEqual(decoded.cookie, 0x1c84_9313)
        XCTAssertEqual(decoded.digits, 2)
        XCTAssertEqual(decoded.lowest, 1)
        XCTAssertEqual(decoded.highest, UInt64(Int64.max / 2))
        XCTAssertEqual(decoded.ratio, 1)
        let last = histogram.counts.lastIndex { $0 != 0 }!
        XCTAssertEqual(decoded.counts, Array(histogram.counts[...last]))
        // HdrHistogram's counts index for 2 digits is Histogram's bucket index: check a few by hand
        // (bucket = 56 - lzcnt(v | 255), sub = v >> bucket, index = (bucket + 1) * 128 + sub - 128).
        for v: UInt64 in [0, 1, 255, 256, 300, 511, 512, 77_777, 10_000_000_000] {
            let bucket = 56 - (v | 255).leadingZeroBitCount
            XCTAssertEqual(Histogram.bucketIndex(of: v), (bucket + 1) * 128 + Int(v >> UInt64(bucket)) - 128, "\(v)")
        }
    }

    func testPayloadByHand() {
        // Values 1, 1 and 300: counts[1] = 2, counts[278] = 1. Payload: 0 (one zero), 2, a run of 276 zeros
        // (-276, zigzag 551 = 0xA7 0x04), 1.
        var histogram = Histogram()
        histogram.record(1, times: 2)
        histogram.record(300)
        let encoded = HdrHistogramEncoding.encode(counts: histogram.counts)
        XCTAssertEqual(Array(encoded[40...]), [0x00, 0x04, 0xA7, 0x04, 0x02])
        XCTAssertEqual(Array(encoded[0..<8]), [0x1c, 0x84, 0x93, 0x13, 0, 0, 0, 5])
        var nine: [UInt8] = []
        HdrHistogramEncoding.putZigZag(Int64.min, into: &nine)
        XCTAssertEqual(nine, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], "9 bytes, the last with 8 bits")
        XCTAssertEqual(Zlib.adler32(Array("Wikipedia".utf8)), 0x11E6_0398)
    }

    func testIntervalSubtraction() {
        var early = Histogram()
        early.record(500, times: 3)
        var late = early
        late.record(2_000_000)
        late.record(600)
        let interval = late.subtracting(early)
        XCTAssertEqual(interval.count, 2)
        XCTAssertEqual(interval.counts[Histogram.bucketIndex(of: 600)], 1)
        XCTAssertEqual(interval.counts[Histogram.bucketIndex(of: 500)], 0)
        XCTAssertEqual(interval.max, 2_000_000)
        XCTAssertEqual(early.subtracting(early).count, 0)
    }
}
