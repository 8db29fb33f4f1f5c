import Domain
import Foundation
import GRDB
@testable import Ingest
import Testing
import TestSupport

/// The spool's destinations: each label's objects keep the destination they were recorded for, across reopens;
/// retirement is remembered from its first time; a retired destination is forgotten once nothing of it waits, and its
/// objects can be given up as a whole; delivery records stay bounded.
@Suite struct DestinationSpoolTests {
    static func destination(_ owner: String = "cam1/3", url: String = "https://a.example/in", key: String? = nil) -> UploadDestination {
        UploadDestination(owner: owner, url: url, fabric: 1, trustedCertificates: Array("CA".utf8),
                          certificateChain: Array("LEAF".utf8), privateKeyReference: "sha256:00", key: key)
    }

    @Test func destinationsSurviveAReopenAndRetirementKeepsItsFirstTime() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = Self.destination()
        let b = Self.destination(url: "https://b.example/in")
        #expect(a.key != b.key && a.key.hasPrefix("cam1/3@") && UploadDestination.owner(ofKey: a.key) == "cam1/3")
        #expect(Self.destination().key == a.key, "the same contents, the same label")
        let first = Date(timeIntervalSince1970: 1_000_000)
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.register(a)
            try spool.register(a)  // idempotent
            try spool.register(b)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: a.key)
            try spool.store(SpoolObjectBytes.whole(.header(session: 2, track: "video"), [2]), for: .header(session: 2, track: "video"), connection: b.key)
            try spool.retire(destination: a.key, now: first)
            try spool.retire(destination: a.key, now: first.addingTimeInterval(60))
        }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let stored = try spool.storedDestinations()
        #expect(stored.map(\.destination) == [a, b].sorted { $0.key < $1.key })
        let byKey = Dictionary(uniqueKeysWithValues: stored.map { ($0.destination.key, $0) })
        #expect(byKey[a.key]?.retiredAt == first && byKey[a.key]?.pending == 1)
        #expect(byKey[b.key]?.retiredAt == nil && byKey[b.key]?.pending == 1)
        // Each session is found under its own destination, by the connection's owner.
        try spool.finishSession(2, connection: b.key)
        try spool.markDelivered(connection: b.key, object: .header(session: 2, track: "video"))
        #expect(try spool.sessionDelivery(2, owner: "cam1/3") == .delivered)
        #expect(try spool.sessionDelivery(1, owner: "cam1/3") == .pending)
        #expect(try spool.sessionDelivery(2, owner: "cam1/30") == .pending, "another owner's prefix does not match")
        // Used again: current again.
        try spool.register(a)
        #expect(try spool.storedDestinations().first { $0.destination.key == a.key }?.retiredAt == nil)
    }

    @Test func aRetiredDestinationIsForgottenOnlyOnceNothingWaits() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let a = Self.destination()
        try spool.register(a)
        try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: a.key)
        #expect(try !spool.forgetDestinationIfDone(a.key), "current: never forgotten")
        try spool.retire(destination: a.key)
        #expect(try !spool.forgetDestinationIfDone(a.key), "an object waits")
        try spool.markDelivered(connection: a.key, object: .header(session: 1, track: "video"))
        #expect(try spool.forgetDestinationIfDone(a.key))
        #expect(try spool.storedDestinations().isEmpty)
        #expect(try spool.statistics().bytes == 0, "its delivered header went with it")
    }

    @Test func givingUpADestinationRecordsEveryObjectItHeld() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let a = Self.destination()
        let b = Self.destination(url: "https://b.example/in")
        let objects = [UploadObject.header(session: 1, track: "video"), UploadObject(session: 1, track: "video", number: 1001),
                       UploadObject(session: 2, track: "video", number: 1001)]
        for object in objects { try spool.store(SpoolObjectBytes.whole(object, [9]), for: object, connection: a.key) }
        try spool.store(SpoolObjectBytes.whole(.header(session: 3, track: "video"), [8]), for: .header(session: 3, track: "video"), connection: b.key)
        let given = try spool.giveUpPending(destination: a.key, reason: "unreachable")
        #expect(Set(given) == Set(objects))
        #expect(try spool.givenUpObjects(connection: a.key).map(\.object).sorted() == objects.sorted())
        #expect(try !spool.isBusy(connection: a.key) && spool.isBusy(connection: b.key), "the other destination keeps its object")
        for object in objects { #expect(!FileManager.default.fileExists(atPath: spool.fileURL(connection: a.key, object: object).path)) }
    }

    @Test func deliveryRecordsArePrunedByAgeAndCount() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let now = Date()
        let old = now.addingTimeInterval(-SegmentSpool.deliveryRecordRetention - 60)
        try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: "c")
        try spool.markGivenUp(connection: "c", object: .header(session: 1, track: "video"), reason: "old", now: old)
        try spool.store(SpoolObjectBytes.whole(.header(session: 2, track: "video"), [1]), for: .header(session: 2, track: "video"), connection: "c")
        try spool.markGivenUp(connection: "c", object: .header(session: 2, track: "video"), reason: "new", now: now)
        let kept = SegmentSpool.sessionRecordsKept
        for session in 1...(kept + 10) { try spool.finishSession(SessionNumber(UInt64(session)), connection: "d") }
        try spool.pruneDeliveryRecords(now: now)
        #expect(try spool.givenUpObjects(connection: "c").map(\.reason) == ["new"])
        let sessions = try spool.database.read { db in
            try Int.fetchAll(db, sql: "SELECT session FROM session WHERE connection = 'd' ORDER BY session")
        }
        #expect(sessions.first == 10 && sessions.last == kept + 10 && sessions.count == kept + 1, "\(sessions.prefix(3))…")
    }
}
