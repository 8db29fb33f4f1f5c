import Ingest
import Testing

@Suite struct UploadObjectTests {
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

    @Test func repeatedAuthFailuresMarkTheConnectionFailed() {
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        #expect(machine.decide(after: .status(403), for: segment, using: &random) == .retry(after: .seconds(1)))
        #expect(machine.decide(after: .status(401), for: segment, using: &random) == .retry(after: .seconds(2)))
        guard case .connectionFailed = machine.decide(after: .status(403), for: segment, using: &random) else {
            Issue.record("third auth failure must fail the connection")
            return
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
        #expect(machine.decide(after: .status(403), for: segment, using: &random) == .connectionFailed("403 for session_1/video/segment_1002.m4s 3 times in a row"))
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
