import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import SidecarAPI
import Sidecar
import Testing

/// HTTP Range on the clip route (RFC 9110 §14), by table: the parser alone, then the real route serving a clip kept as
/// two files (header and segment) as one body.
@Suite struct ByteRangeTests {
    static let etag = #""1000-42""#

    @Test(arguments: [
        (nil, nil, ByteRanges.Answer.whole),
        ("bytes=0-1", nil, .part(0...1)),
        ("bytes=100-", nil, .part(100...999)),
        ("bytes=-100", nil, .part(900...999)),
        ("bytes=-5000", nil, .part(0...999)),
        ("bytes=990-5000", nil, .part(990...999)),
        ("bytes=0-0,10-20", nil, .part(0...20)),         // several ranges: one part covering them
        ("bytes=1000-", nil, .unsatisfiable),
        ("bytes=5000-6000,7000-", nil, .unsatisfiable),
        ("bytes=-0", nil, .unsatisfiable),
        ("bytes=1000-,0-1", nil, .part(0...1)),          // the satisfiable one
        ("bytes=5-1", nil, .whole),                      // invalid: ignored
        ("bytes=a-b", nil, .whole),
        ("bytes=", nil, .whole),
        ("items=0-1", nil, .whole),                      // unknown unit: ignored
        (" Bytes=2-3 ", nil, .part(2...3)),
        ("bytes=0-1", #""1000-42""#, .part(0...1)),      // If-Range matches
        ("bytes=0-1", #""999-42""#, .whole),             // the file changed: all of it
        ("bytes=0-1", "Wed, 21 Oct 2015 07:28:00 GMT", .whole),
    ] as [(String?, String?, ByteRanges.Answer)])
    func answer(range: String?, ifRange: String?, expected: ByteRanges.Answer) {
        #expect(ByteRanges.answer(range: range, ifRange: ifRange, etag: Self.etag, size: 1000) == expected)
    }

    @Test func anEmptyFileHasNoRange() {
        #expect(ByteRanges.answer(range: "bytes=0-1", ifRange: nil, etag: Self.etag, size: 0) == .unsatisfiable)
        #expect(ByteRanges.answer(range: "bytes=-1", ifRange: nil, etag: Self.etag, size: 0) == .unsatisfiable)
    }

    /// (method, Range, expected status, Content-Range, the bytes answered)
    static let routeCases: [(HTTPRequest.Method, String?, HTTPResponse.Status, String?, ClosedRange<Int>?)] = [
        (.get, nil, .ok, nil, 0...999),
        (.get, "bytes=0-1", .partialContent, "bytes 0-1/1000", 0...1),
        (.get, "bytes=500-", .partialContent, "bytes 500-999/1000", 500...999),
        (.get, "bytes=290-310", .partialContent, "bytes 290-310/1000", 290...310),  // across the header's end and a patch
        (.get, "bytes=95-105", .partialContent, "bytes 95-105/1000", 95...105),  // from the made bytes into a file
        (.get, "bytes=702-710", .partialContent, "bytes 702-710/1000", 702...710),  // from inside a patch
        (.get, "bytes=-10", .partialContent, "bytes 990-999/1000", 990...999),
        (.get, "bytes=0-0,10-20", .partialContent, "bytes 0-20/1000", 0...20),  // the header read whole, comma and all
        (.get, "bytes=2000-", .rangeNotSatisfiable, "bytes */1000", nil),
        (.head, nil, .ok, nil, nil),
        (.head, "bytes=0-9", .partialContent, "bytes 0-9/1000", nil),
    ]

    @Test(arguments: routeCases.indices)
    func theClipRouteAnswersRanges(_ index: Int) async throws {
        let (method, range, status, contentRange, bytes) = Self.routeCases[index]
        try await withAPI { _, client in
            var headers = HTTPFields()
            if let range { headers[.range] = range }
            let response = try await client.execute(uri: "/v1/cameras/cam1/clips/1/3", method: method, headers: headers)
            #expect(response.status == status)
            #expect(response.headers[.acceptRanges] == "bytes")
            // The MP4's type on the clip and on HEAD, as the GET's; a 416 carries no clip.
            #expect(response.headers[.contentType] == (status == .rangeNotSatisfiable ? nil : "video/mp4"))
            #expect(response.headers[.contentRange] == contentRange)
            #expect(response.headers[.eTag]?.hasSuffix("-1000\"") == true)
            let expectedLength = bytes?.count ?? (status == .rangeNotSatisfiable ? 0 : method == .head && range == nil ? 1000 : 10)
            #expect(response.headers[.contentLength] == "\(expectedLength)")
            #expect(Array(buffer: response.body) == bytes.map { Array(TestSidecar.clipBytes[$0]) } ?? [])
        }
    }

    /// The reads a range of a clip becomes: each part's share of the range, in chunks of at most 128 KiB, in order,
    /// each with the patches that fall in it.
    @Test func aRangeIsReadInChunksAcrossTheParts() {
        let header = URL(fileURLWithPath: "/spool/init.mp4"), segment = URL(fileURLWithPath: "/spool/1.m4s")
        let early = ClipParts.Patch(offset: 8, bytes: [1, 2, 3, 4]), late = ClipParts.Patch(offset: 131_070, bytes: [5, 6, 7, 8])
        let clip = ClipParts(parts: [.init(made: [9, 9]), .init(file: header, bytes: 300),
                                     .init(file: segment, bytes: 300_000, patches: [early, late])])
        let reads = ConcatenatedFiles(clip, range: 291...200_002).reads
        #expect(reads == [
            .init(file: header, offset: 289, length: 11),
            .init(file: segment, offset: 0, length: 131_072, patches: [early, late]),
            .init(file: segment, offset: 131_072, length: 68_629, patches: [late]),  // the patch straddles the chunks
        ])
        #expect(reads.map(\.length).reduce(0, +) == (291...200_002).count)
        #expect(ConcatenatedFiles(clip, range: 1...301).reads == [
            .init(file: nil, made: [9], offset: 1, length: 1), .init(file: header, offset: 0, length: 300),
        ])
        // A patch is written over the bytes it overlaps, and only those.
        #expect(ConcatenatedFiles.patched([0, 0, 0], from: 131_072, [late]) == [7, 8, 0])
        #expect(ConcatenatedFiles.patched([0, 0, 0], from: 0, [late]) == [0, 0, 0])
    }

    @Test func ifRangeWithTheCurrentETagGetsThePartAnotherGetsTheWhole() async throws {
        try await withAPI { _, client in
            let first = try await client.execute(uri: "/v1/cameras/cam1/clips/1/3", method: .get)
            let etag = try #require(first.headers[.eTag])
            var headers = HTTPFields()
            headers[.range] = "bytes=0-3"
            headers[.ifRange] = etag
            #expect(try await client.execute(uri: "/v1/cameras/cam1/clips/1/3", method: .get, headers: headers).status == .partialContent)
            headers[.ifRange] = #""stale""#
            let whole = try await client.execute(uri: "/v1/cameras/cam1/clips/1/3", method: .get, headers: headers)
            #expect(whole.status == .ok && whole.body.readableBytes == 1000)
            #expect(try await client.execute(uri: "/v1/cameras/cam1/clips/1/4", method: .get).status == .notFound)
        }
    }
}
