import AsyncHTTPClient
import Foundation
import Ingest
import NIOCore
import NIOSSL
import Testing

@Suite struct UploadObjectTests {
    @Test func trackNamesArePercentEncodedAsOnePathSegment() {
        #expect(percentEncodedPathSegment("front door") == "front%20door")
        #expect(percentEncodedPathSegment("a?b#c%") == "a%3Fb%23c%25")
        #expect(percentEncodedPathSegment("cam-1_x.y~") == "cam-1_x.y~")
    }

    @Test func pathsAndContentTypesFollowTheMatterLayout() {
        #expect(UploadObject.header(session: 3, track: "video").relativePath == "session_3/video/video.init")
        #expect(UploadObject(session: 3, track: "video", number: 1001).relativePath == "session_3/video/segment_1001.m4s")
        #expect(UploadObject(session: 1, track: "a", number: 12).relativePath == "session_1/a/segment_0012.m4s")
        #expect(UploadObject(session: 1, track: "a", number: 12345).relativePath == "session_1/a/segment_12345.m4s")
        #expect(UploadObject.header(session: 1, track: "a").contentType == "video/mp4")
        #expect(UploadObject(session: 1, track: "a", number: 1001).contentType == "video/iso.segment")
        #expect(UploadObject(session: 1, track: "a", number: 1001).predecessor == .header(session: 1, track: "a"))
        #expect(UploadObject(session: 1, track: "a", number: 1005).predecessor == UploadObject(session: 1, track: "a", number: 1004))
        #expect(UploadObject.header(session: 2, track: "a") < UploadObject(session: 2, track: "a", number: 1001))
        #expect(UploadObject(session: 1, track: "a", number: 1009) < UploadObject.header(session: 2, track: "a"))
    }

    @Test(arguments: [
        ("session_1/video/video.init", [String](), 0),
        ("/session_12/video/segment_1001.m4s", [], 1001),
        ("ingest/cam-1/session_2/audio/segment_1002.m4s", ["ingest", "cam-1"], 1002),
    ])
    func acceptedPaths(path: String, prefix: [String], number: Int) throws {
        let parsed = try IngestPath.parse(path)
        #expect(parsed.prefix == prefix)
        #expect(parsed.object.number == number)
        #expect(parsed.relativePath == path.drop(while: { $0 == "/" }).description)
    }

    @Test(arguments: [
        "session_1/video/audio.init", "session_1/video/segment_101.m4s", "session_x/video/video.init",
        "session_1/video/segment_1001.mp4", "video/video.init", "session_1//video.init", "session_1/vid eo/vid eo.init",
    ])
    func layoutViolationsAreRejected(path: String) {
        #expect(throws: IngestPath.Rejection.self) { try IngestPath.parse(path) }
    }

    @Test(arguments: ["../session_1/video/video.init", "a/../../session_1/video/video.init", "%2e%2e/session_1/video/video.init",
                      "./session_1/video/video.init", ".hidden/session_1/video/video.init"])
    func traversalIsRejected(path: String) {
        #expect {
            try IngestPath.parse(path)
        } throws: { error in
            if case .traversal = error as? IngestPath.Rejection { return true }
            return false
        }
    }
}

/// A generator that always returns the same value, so jitter is predictable.
struct FixedRandom: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite struct UploadPolicyTests {
    @Test func backoffDoublesFromOneSecondAndCapsAtSixtyWithJitterInBounds() {
        var policy = UploadPolicy(segmentDuration: .seconds(4))
        policy.jitter = 0
        var random = SystemRandomNumberGenerator()
        #expect(policy.backoff(attempt: 1, using: &random) == .seconds(1))
        #expect(policy.backoff(attempt: 2, using: &random) == .seconds(2))
        #expect(policy.backoff(attempt: 6, using: &random) == .seconds(32))
        #expect(policy.backoff(attempt: 7, using: &random) == .seconds(60))
        #expect(policy.backoff(attempt: 500, using: &random) == .seconds(60))
        policy.jitter = 0.5
        for attempt in 1...10 {
            let delay = policy.backoff(attempt: attempt, using: &random)
            let base = min(Duration.seconds(1 << (attempt - 1)), .seconds(60))
            #expect(delay >= base / 2 && delay <= base)
        }
        var low = FixedRandom(value: 0)
        #expect(policy.backoff(attempt: 3, using: &low) == .seconds(2))
    }

    @Test func timeoutsFollowTheSegmentDuration() {
        let short = UploadPolicy(segmentDuration: .milliseconds(500))
        #expect(short.connectTimeout == .seconds(1))
        #expect(short.requestTimeout == .seconds(2))
        let long = UploadPolicy(segmentDuration: .seconds(10))
        #expect(long.connectTimeout == .seconds(6))
        #expect(long.requestTimeout == .seconds(20))
        #expect(long.deadline(forBytes: 256 * 1024) == .seconds(21))
    }
}

@Suite struct UploadStateMachineTests {
    var policy: UploadPolicy {
        var policy = UploadPolicy(segmentDuration: .seconds(2))
        policy.jitter = 0
        policy.maximumAuthFailures = 3
        return policy
    }
    let segment = UploadObject(session: 1, track: "video", number: 1002)

    @Test func anyTwoHundredIsDeliveryAndResetsTheCounters() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(503), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .transportFailure("reset"), for: segment, using: &random) == .retry(after: .seconds(2)))
        #expect(machine.consecutiveFailures == 2)
        for code in [200, 201, 202, 204] {
            #expect(machine.decide(after: .status(code), for: segment, using: &random) == .delivered)
        }
        #expect(machine.consecutiveFailures == 0)
    }

    var header: UploadObject { .header(session: 1, track: "video") }

    /// The legitimate case (the endpoint lost the session's header): one 412, the header again, the segment arrives;
    /// no delay anywhere, and the next segment's 412 is again answered at once.
    @Test func onePreconditionFailedResendsTheHeaderAtOnce() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        for next in [segment, UploadObject(session: 1, track: "video", number: 1003)] {
            #expect(machine.decide(after: .status(412), for: next, using: &random) == .resendHeader(after: .zero))
            #expect(machine.decide(after: .status(204), for: header, using: &random) == .delivered)
            #expect(machine.decide(after: .status(201), for: next, using: &random) == .delivered)
            #expect(machine.consecutiveFailures == 0 && machine.segmentAwaitingHeader == nil)
        }
    }

    /// What the lane really does against an endpoint that refuses every segment: 412, header (2xx), 412, header, …
    /// The header's 2xx does not reset the count; every 412 after the first backs off (doubling, like other failures)
    /// and the budget ends it with a reason naming the 412.
    @Test func preconditionFailedAgainAfterTheHeaderBacksOffAndSpendsTheBudget() {
        var limited = policy
        limited.retryBudget = 5
        var machine = UploadStateMachine(policy: limited)
        var random = SystemRandomNumberGenerator()
        let expectedDelays: [Duration] = [.zero, .seconds(1), .seconds(2), .seconds(4)]
        for (attempt, delay) in expectedDelays.enumerated() {
            #expect(machine.decide(after: .status(412), for: segment, using: &random) == .resendHeader(after: delay))
            #expect(machine.decide(after: .status(201), for: header, using: &random) == .delivered)
            #expect(machine.consecutiveFailures == attempt + 1, "the header's 2xx must not reset the count")
        }
        #expect(machine.decide(after: .status(412), for: segment, using: &random)
                == .budgetSpent("5 failed attempts for session_1/video/segment_1002.m4s, last: HTTP 412 again after its header was re-sent"))
    }

    @Test func otherFailuresBeforeA412CountAndDelayTheResend() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(503), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(412), for: segment, using: &random) == .resendHeader(after: .seconds(1)))
        // The resent header failing is a failure of the same run; its success does not end the run either.
        #expect(machine.decide(after: .status(500), for: header, using: &random) == .retry(after: .seconds(4)))
        #expect(machine.decide(after: .status(201), for: header, using: &random) == .delivered)
        #expect(machine.consecutiveFailures == 3)
        #expect(machine.decide(after: .status(201), for: segment, using: &random) == .delivered)
        #expect(machine.consecutiveFailures == 0)
    }

    @Test func preconditionFailedForTheHeaderItselfIsAPlainRetry() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        // A 412 for the header cannot be cured by resending it.
        #expect(machine.decide(after: .status(412), for: header, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.segmentAwaitingHeader == nil)
    }

    @Test func spoolReadFailuresBackOffAndSpendTheBudget() {
        var limited = policy
        limited.retryBudget = 3
        var machine = UploadStateMachine(policy: limited)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(afterSpoolFailure: "file gone", using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(afterSpoolFailure: "file gone", using: &random) == .retry(after: .seconds(2)))
        #expect(machine.decide(afterSpoolFailure: "file gone", using: &random) == .budgetSpent("3 failed attempts, last: file gone"))
    }

    /// Backoff with `jitter = 0`: 1 s, 2 s, 4 s, … capped at 60 s.
    static func backoff(_ attempt: Int) -> Duration { min(.seconds(1 << min(attempt - 1, 20)), .seconds(60)) }

    /// 401/403 never stop the lane: every refusal is a retry with the usual backoff, and the third in a row (the
    /// policy's `maximumAuthFailures`) says once that authentication is refused. A 2xx ends the run; the next run is
    /// reported again.
    @Test(arguments: [401, 403]) func refusedAuthenticationIsReportedOnceAndRetriedForever(code: Int) {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        for run in 1...2 {
            for attempt in 1...20 {
                let decision = machine.decide(after: .status(code), for: segment, using: &random)
                if attempt == 3 {
                    #expect(decision == .authenticationRefused(after: Self.backoff(attempt),
                                                               "\(code) for session_1/video/segment_1002.m4s 3 times in a row"),
                            "run \(run)")
                } else {
                    #expect(decision == .retry(after: Self.backoff(attempt)), "run \(run), attempt \(attempt)")
                }
            }
            #expect(machine.authFailures == 20)
            #expect(machine.decide(after: .status(201), for: segment, using: &random) == .delivered)
            #expect(machine.authFailures == 0 && machine.consecutiveFailures == 0)
        }
    }

    @Test func authCounterRestartsAfterAnotherKindOfFailure() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        _ = machine.decide(after: .status(403), for: segment, using: &random)
        _ = machine.decide(after: .status(403), for: segment, using: &random)
        _ = machine.decide(after: .transportFailure("timeout"), for: segment, using: &random)
        #expect(machine.authFailures == 0)
        #expect(machine.decide(after: .status(403), for: segment, using: &random) == .retry(after: .seconds(8)))
        #expect(machine.decide(after: .status(401), for: segment, using: &random) == .retry(after: .seconds(16)))
        #expect(machine.decide(after: .status(403), for: segment, using: &random)
                == .authenticationRefused(after: .seconds(32), "403 for session_1/video/segment_1002.m4s 3 times in a row"))
    }

    /// A 4xx that no resend can cure: retried with the usual backoff, then given up after `maximumRejections` (3)
    /// attempts; the next object starts over.
    @Test(arguments: [400, 404, 410, 413, 415, 422])
    func permanentRejectionsAreRetriedThenGivenUp(code: Int) {
        #expect(policy.maximumRejections == 3, "the documented default")
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(code), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(code), for: segment, using: &random) == .retry(after: .seconds(2)))
        #expect(machine.decide(after: .status(code), for: segment, using: &random)
                == .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP \(code)"))
        #expect(machine.consecutiveFailures == 0 && machine.rejections == 0)
        let next = UploadObject(session: 1, track: "video", number: 1003)
        #expect(machine.decide(after: .status(code), for: next, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(201), for: next, using: &random) == .delivered)
    }

    /// Failures that may pass (timeouts, rate limits, server errors, no answer) are retried forever without a budget.
    @Test(arguments: [UploadOutcome.status(408), .status(429), .status(500), .status(502), .status(503), .status(504),
                      .transportFailure("connection reset by peer"), .unanswered("HTTPClientError.deadlineExceeded")])
    func transientFailuresAreNeverGivenUpWithoutABudget(outcome: UploadOutcome) {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        for attempt in 1...200 {
            let decision = machine.decide(after: outcome, for: segment, using: &random)
            #expect(decision == .retry(after: Self.backoff(attempt)), "attempt \(attempt)")
        }
    }

    /// 412 keeps resending the header (with backoff after the first), however often: it is not a rejection.
    @Test func preconditionFailedIsNeverGivenUpWithoutABudget() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        for attempt in 1...20 {
            let expected: Duration = attempt == 1 ? .zero : Self.backoff(attempt - 1)
            #expect(machine.decide(after: .status(412), for: segment, using: &random) == .resendHeader(after: expected))
            #expect(machine.decide(after: .status(204), for: header, using: &random) == .delivered)
        }
    }

    struct RejectionRun: Sendable, CustomTestStringConvertible {
        var name: String
        var outcomes: [UploadOutcome]
        /// The decision after the last outcome; every earlier one is a `.retry`.
        var last: UploadDecision
        var testDescription: String { name }
    }

    static let rejectionRuns: [RejectionRun] = [
        RejectionRun(name: "a success between rejections resets the count",
                     outcomes: [.status(400), .status(400), .status(201), .status(400), .status(400)], last: .retry(after: .seconds(2))),
        RejectionRun(name: "transient failures between rejections neither count nor reset",
                     outcomes: [.status(400), .status(503), .status(400), .transportFailure("reset"), .status(404)],
                     last: .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 404")),
        RejectionRun(name: "rejections after an unanswered attempt: delivered, unconfirmed",
                     outcomes: [.unanswered("HTTPClientError.deadlineExceeded"), .status(400), .status(400), .status(400)],
                     last: .deliveredUnconfirmed("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 400, after an "
                                                 + "attempt that got no answer: the ingest most likely took that one")),
        RejectionRun(name: "an unanswered attempt between rejections counts as well",
                     outcomes: [.status(400), .unanswered("remoteConnectionClosed"), .status(400), .status(404)],
                     last: .deliveredUnconfirmed("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 404, after an "
                                                 + "attempt that got no answer: the ingest most likely took that one")),
        RejectionRun(name: "an attempt that was never sent does not make rejections unconfirmed",
                     outcomes: [.transportFailure("connection refused"), .status(400), .status(400), .status(400)],
                     last: .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 400")),
        RejectionRun(name: "auth refusals between rejections neither count nor reset",
                     outcomes: [.status(400), .status(401), .status(400), .status(400)],
                     last: .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 400")),
    ]

    @Test(arguments: rejectionRuns) func rejectionsAreCountedPerRunOfTheObject(_ run: RejectionRun) {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        var decisions = run.outcomes.map { machine.decide(after: $0, for: segment, using: &random) }
        let last = decisions.removeLast()
        #expect(last == run.last)
        #expect(decisions.allSatisfy { if case .retry = $0 { true } else { $0 == .delivered } }, "\(decisions)")
    }

    @Test func anotherObjectsRejectionStartsTheCountAgain() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        let other = UploadObject(session: 1, track: "video", number: 1003)
        _ = machine.decide(after: .status(400), for: segment, using: &random)
        _ = machine.decide(after: .status(400), for: segment, using: &random)
        #expect(machine.decide(after: .status(400), for: other, using: &random) == .retry(after: .seconds(4)))
        #expect(machine.rejections == 1 && machine.rejectedObject == other)
    }

    /// Which failures may have reached the ingest: those after the request went out (no answer in time, the connection
    /// closed before the answer); not those that end before it is sent.
    @Test(arguments: [
        (HTTPClientError.deadlineExceeded as any Error & Sendable, true), (HTTPClientError.readTimeout, true),
        (HTTPClientError.remoteConnectionClosed, true), (HTTPClientError.connectTimeout, false),
        (HTTPClientError.tlsHandshakeTimeout, false), (IOError(errnoCode: ECONNREFUSED, reason: "connect"), false),
        (NIOSSLError.handshakeFailed(.sslError([])), false),
    ])
    func failuresThatMayHaveArrived(error: any Error & Sendable, mayHaveArrived: Bool) {
        #expect(SegmentUploader.outcome(of: error).mayHaveArrived == mayHaveArrived, "\(error)")
    }

    /// An object an earlier delivery may have sent: its permanent refusal is a copy refused, not the object given up.
    @Test func anObjectMaybeSentBeforeARestartIsUnconfirmedWhenRefused() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        machine.mayHaveArrivedBefore(header)
        for _ in 1...2 { _ = machine.decide(after: .status(400), for: header, using: &random) }
        guard case .deliveredUnconfirmed = machine.decide(after: .status(400), for: header, using: &random) else {
            Issue.record("not delivered unconfirmed")
            return
        }
        #expect(machine.headersGivenUp.isEmpty)
    }

    /// Only the object's own unanswered attempt makes its rejections unconfirmed; the mark goes with the next object.
    @Test func anotherObjectsUnansweredAttemptDoesNotCount() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        _ = machine.decide(after: .unanswered("readTimeout"), for: header, using: &random)
        #expect(machine.unansweredObject == header)
        _ = machine.decide(after: .status(400), for: segment, using: &random)
        #expect(machine.unansweredObject == nil)
        _ = machine.decide(after: .status(400), for: segment, using: &random)
        #expect(machine.decide(after: .status(400), for: segment, using: &random)
                == .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 400"))
    }

    /// A header counted as delivered unconfirmed is presumed at the ingest: a 412 for its segment still resends it
    /// (as for any header), where a header given up turns that 412 into a rejection.
    @Test func aHeaderDeliveredUnconfirmedIsStillResentForA412() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        _ = machine.decide(after: .unanswered("deadlineExceeded"), for: header, using: &random)
        for _ in 1...2 { _ = machine.decide(after: .status(400), for: header, using: &random) }
        guard case .deliveredUnconfirmed = machine.decide(after: .status(400), for: header, using: &random) else {
            Issue.record("not delivered unconfirmed")
            return
        }
        #expect(machine.headersGivenUp.isEmpty && machine.consecutiveFailures == 0 && machine.unansweredObject == nil)
        #expect(machine.decide(after: .status(412), for: segment, using: &random) == .resendHeader(after: .zero))
    }

    /// A header given up cannot be resent, so a 412 for its segments is a rejection like a 400, given up in turn
    /// (otherwise: 412, resend, 412 forever). `headerIsGone` teaches the same to a lane that gave it up before a restart.
    @Test(arguments: [false, true]) func preconditionFailedAfterTheHeaderWasGivenUpIsARejection(restarted: Bool) {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        if restarted {
            machine.headerIsGone(header)
        } else {
            for _ in 1...2 { _ = machine.decide(after: .status(400), for: header, using: &random) }
            #expect(machine.decide(after: .status(400), for: header, using: &random)
                    == .giveUp("session_1/video/video.init refused 3 times, last: HTTP 400"))
        }
        #expect(machine.decide(after: .status(412), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(412), for: segment, using: &random) == .retry(after: .seconds(2)))
        #expect(machine.decide(after: .status(412), for: segment, using: &random)
                == .giveUp("session_1/video/segment_1002.m4s refused 3 times, last: HTTP 412"))
        // Another session's header is still resent for a 412.
        let later = UploadObject(session: 2, track: "video", number: 1001)
        #expect(machine.decide(after: .status(412), for: later, using: &random) == .resendHeader(after: .zero))
    }

    @Test func theRetryBudgetComesBeforeTheRejectionLimit() {
        var limited = policy
        limited.retryBudget = 2
        var machine = UploadStateMachine(policy: limited)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(400), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(400), for: segment, using: &random)
                == .budgetSpent("2 failed attempts for session_1/video/segment_1002.m4s, last: HTTP 400"))
    }

    @Test func retryBudgetStopsTheTrack() {
        var limited = policy
        limited.retryBudget = 2
        var machine = UploadStateMachine(policy: limited)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(500), for: segment, using: &random) == .retry(after: .seconds(1)))
        guard case .budgetSpent = machine.decide(after: .status(500), for: segment, using: &random) else {
            Issue.record("second failure spends a budget of 2")
            return
        }
    }
}
