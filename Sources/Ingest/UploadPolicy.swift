/// How the uploader waits, times out and gives up. Defaults follow DASH-IF ingest §"Failure behaviour" and our
/// reference ("Upload"): backoff 1 s → 60 s with jitter, connect timeout about one segment duration.
public struct UploadPolicy: Sendable, Hashable {
    /// First retry delay.
    public var initialBackoff: Duration = .seconds(1)
    /// Largest retry delay.
    public var maximumBackoff: Duration = .seconds(60)
    /// Fraction of each delay that is randomised (0 = none, 1 = "full jitter"); spreads reconnecting cameras.
    public var jitter: Double = 0.5
    /// 401/403 answers in a row after which the connection is reported failed (`pushav_upload_connection_failed`
    /// = 1, one error log). The uploader never stops for them: credentials are fixed or rotated while it runs, and a
    /// daemon that stopped would hold the spool until it is restarted.
    public var maximumAuthFailures = 5
    /// Attempts for one object answered with a *permanent rejection* (a 4xx other than 401, 403, 408, 412 and 429)
    /// before the object is given up (``UploadDecision/giveUp(_:)``). More than one: a misconfigured proxy or an
    /// ingest being redeployed can refuse briefly, and a few backed-off attempts cost little. Few: an object the
    /// ingest refuses for good (malformed, too large, a path it will not take) would otherwise hold its lane, and
    /// every later object of the connection, forever.
    public var maximumRejections = 3
    /// Failed attempts in a row for one object before the uploader gives up on its track; nil = never
    /// (a daemon keeps retrying; the CLI spends a budget and exits non-zero with the spool kept).
    public var retryBudget: Int? = nil
    /// Time to establish TCP + TLS.
    public var connectTimeout: Duration
    /// Time allowed for a response once the body is sent (and for a spooled upload as a whole, plus its size at
    /// `minimumThroughput`).
    public var requestTimeout: Duration
    /// Bytes per second any upload is expected to reach; a slower request is abandoned and retried.
    public var minimumThroughput = 256 * 1024

    /// Timeouts derived from the segment duration: connect ≈ one segment (1…6 s), response ≈ two segments.
    public init(segmentDuration: Duration) {
        connectTimeout = min(max(segmentDuration, .seconds(1)), .seconds(6))
        requestTimeout = max(segmentDuration * 2, .seconds(2))
    }

    /// Delay before retry `attempt` (1 = first retry): `initial · 2^(attempt−1)` capped at `maximum`, of which the
    /// `jitter` fraction is replaced by a uniform random share.
    public func backoff(attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let base = min(initialBackoff * (1 << exponent), maximumBackoff)
        let fixedPart = base * (1 - jitter)
        let randomPart = base * jitter * Double.random(in: 0..<1, using: &random)
        return fixedPart + randomPart
    }

    /// Upper bound for one spooled upload of `bytes`.
    public func deadline(forBytes bytes: Int) -> Duration {
        requestTimeout + .milliseconds(Int64(bytes) * 1000 / Int64(max(minimumThroughput, 1)))
    }
}

/// What came of one PUT.
public enum UploadOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The endpoint answered with this status code.
    case status(Int)
    /// Not sent: refused, no connection or TLS session, reset before the request went out.
    case transportFailure(String)
    /// Sent, or being sent, but no answer came (timed out, or the connection closed before the response): the ingest
    /// may have taken the object. Retried like a transport failure; see ``UploadDecision/deliveredUnconfirmed(_:)``.
    case unanswered(String)

    /// Whether the request may have reached the ingest although no answer did.
    public var mayHaveArrived: Bool {
        if case .unanswered = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .status(let code): "HTTP \(code)"
        case .transportFailure(let reason): "not sent (\(reason))"
        case .unanswered(let reason): "no answer (\(reason))"
        }
    }
}

/// What the track lane does next, decided by ``UploadStateMachine``.
public enum UploadDecision: Sendable, Hashable {
    /// The object arrived; go on with the next.
    case delivered
    /// Send the same object again after the delay.
    case retry(after: Duration)
    /// 412: the endpoint lacks the header; send the header, then this segment, after the delay.
    case resendHeader(after: Duration)
    /// 401/403 for the ``UploadPolicy/maximumAuthFailures``-th time in a row: send the same object again after the
    /// delay, like ``retry(after:)``, and report the connection failed. Decided once per run of refusals; the next
    /// refusals are plain retries, and the first 2xx ends the run.
    case authenticationRefused(after: Duration, String)
    /// The endpoint refused this object for good (``UploadPolicy/maximumRejections`` permanent rejections): drop it
    /// from the queue, count and log it, and go on with the lane's next object.
    case giveUp(String)
    /// The endpoint refused this object for good, but an earlier attempt of it went out and got no answer: most likely
    /// the ingest took that attempt and now refuses the copy (the CSA test server in strict mode refuses a track's
    /// header twice). At-least-once delivery makes such copies unavoidable, so the object is not given up: it counts
    /// as delivered, but *unconfirmed* — logged and counted apart, so an operator can check the ingest.
    case deliveredUnconfirmed(String)
    /// The retry budget is spent; keep the data and stop this track.
    case budgetSpent(String)
}

/// The per-track upload rules as a pure state machine (no I/O, tested on its own): counts failures, picks the
/// backoff, turns 412 into a header resend, repeated 401/403 into a report that authentication is refused, and
/// repeated permanent rejections of one object into giving that object up.
public struct UploadStateMachine: Sendable {
    public let policy: UploadPolicy
    /// Failed attempts in a row (any cause) for the object being sent. A header resent because of a 412 does not end
    /// the run: only the segment itself arriving does.
    public private(set) var consecutiveFailures = 0
    /// 401/403 answers in a row.
    public private(set) var authFailures = 0
    /// Permanent rejections (see ``isPermanentRejection(_:)``) of ``rejectedObject`` with no 2xx since (any 2xx resets it).
    /// Transient failures in between neither count nor reset them: a 503 says nothing about whether the ingest will
    /// ever take the object, and resetting on it would let an endpoint alternating 400 and 503 hold the lane forever.
    public private(set) var rejections = 0
    /// The object the ``rejections`` are about; another object's rejection starts the count again.
    public private(set) var rejectedObject: UploadObject?
    /// Headers given up on this lane: a 412 for a segment of their session cannot be cured by a resend, so it counts as
    /// a permanent rejection of the segment (else the segment would go 412 → resend → 412 forever).
    public private(set) var headersGivenUp: Set<UploadObject> = []
    /// The segment whose 412 made the lane resend its session's header; nil when no resend is under way.
    public private(set) var segmentAwaitingHeader: UploadObject?
    /// The object one of whose attempts went out unanswered (``UploadOutcome/mayHaveArrived``) since it was last
    /// decided on another object: its permanent rejections may be the ingest refusing a copy of what it took.
    public private(set) var unansweredObject: UploadObject?

    public init(policy: UploadPolicy) {
        self.policy = policy
    }

    /// Whether `code` says the ingest will not take the object however often it is sent: any 4xx except 401/403
    /// (credentials, which can be fixed while we retry), 408 (request timeout), 412 (a missing header, cured by a
    /// resend) and 429 (rate limited).
    public static func isPermanentRejection(_ code: Int) -> Bool {
        (400..<500).contains(code) && ![401, 403, 408, 412, 429].contains(code)
    }

    /// Call after each attempt for `object`; resets the counters when `object` arrived (a header resent for a 412
    /// arriving does not count: its segment has not).
    public mutating func decide(
        after outcome: UploadOutcome, for object: UploadObject, using random: inout some RandomNumberGenerator
    ) -> UploadDecision {
        if unansweredObject != object { unansweredObject = nil }
        if case .status(let code) = outcome, (200..<300).contains(code) {
            authFailures = 0
            rejections = 0
            rejectedObject = nil
            unansweredObject = nil
            if let segment = segmentAwaitingHeader, object == .header(session: segment.session, track: segment.track) {
                return .delivered
            }
            consecutiveFailures = 0
            segmentAwaitingHeader = nil
            return .delivered
        }
        consecutiveFailures += 1
        if outcome.mayHaveArrived { unansweredObject = object }
        var authenticationRefused: String?
        if case .status(let code) = outcome, code == 401 || code == 403 {
            authFailures += 1
            if authFailures == policy.maximumAuthFailures {
                authenticationRefused = "\(code) for \(object) \(authFailures) times in a row"
            }
        } else {
            authFailures = 0
        }
        if let budget = policy.retryBudget, consecutiveFailures >= budget {
            let why = segmentAwaitingHeader == object && outcome == .status(412) ? " again after its header was re-sent" : ""
            return .budgetSpent("\(consecutiveFailures) failed attempts for \(object), last: \(outcome)\(why)")
        }
        if case .status(let code) = outcome, Self.isPermanentRejection(code) || isIncurable412(code, for: object) {
            if rejectedObject != object {
                rejectedObject = object
                rejections = 0
            }
            rejections += 1
            if rejections >= policy.maximumRejections {
                let reason = "\(object) refused \(rejections) times, last: \(outcome)"
                let unconfirmed = unansweredObject == object
                if object.isHeader, !unconfirmed { headersGivenUp.insert(object) }
                // The next object starts with a clean slate: this one's failures say nothing about it.
                consecutiveFailures = 0
                rejections = 0
                rejectedObject = nil
                segmentAwaitingHeader = nil
                unansweredObject = nil
                if unconfirmed {
                    return .deliveredUnconfirmed("\(reason), after an attempt that got no answer: the ingest most likely took that one")
                }
                return .giveUp(reason)
            }
        }
        if case .status(412) = outcome, !object.isHeader, !isIncurable412(412, for: object) {
            segmentAwaitingHeader = object
            // A 412 that starts a run of failures is answered at once: the endpoint lost the session's header (it
            // restarted), and one resend cures that. A 412 again after the header went through is a failure like
            // any other: it backs off (the first resend was free, so the schedule starts over at the initial delay).
            let delay = consecutiveFailures == 1 ? .zero : policy.backoff(attempt: consecutiveFailures - 1, using: &random)
            return .resendHeader(after: delay)
        }
        let delay = policy.backoff(attempt: consecutiveFailures, using: &random)
        if let reason = authenticationRefused {
            return .authenticationRefused(after: delay, reason)
        }
        return .retry(after: delay)
    }

    /// Call before the first attempt of `object` when an earlier delivery may have sent it: the first object of a
    /// track that a stopped delivery (a restart, a kill -9, a replaced delivery) left in the spool can have reached the
    /// ingest just before the stop, with the journal never hearing of it. A strict ingest refuses such a copy (the CSA
    /// server refuses a track's header twice), and that refusal must not be reported as the object given up: it
    /// counts as delivered unconfirmed, like a copy of an unanswered attempt in this process.
    public mutating func mayHaveArrivedBefore(_ object: UploadObject) {
        unansweredObject = object
    }

    /// Call when the lane learns that `header` will not be sent again (given up earlier, e.g. before a restart, so
    /// it is no longer in the spool): from now on a 412 for a segment of its session counts as a permanent rejection.
    public mutating func headerIsGone(_ header: UploadObject) {
        headersGivenUp.insert(header)
    }

    private func isIncurable412(_ code: Int, for object: UploadObject) -> Bool {
        code == 412 && !object.isHeader && headersGivenUp.contains(.header(session: object.session, track: object.track))
    }

    /// Call when committing a delivery to the spool's journal failed: the object stays delivered (the lane keeps it
    /// in memory and never sends it again), and the commit is tried again after the policy's backoff. There is no
    /// budget: giving up an object the ingest holds would report a loss that did not happen.
    public func delay(afterJournalFailure failures: Int, using random: inout some RandomNumberGenerator) -> Duration {
        policy.backoff(attempt: failures, using: &random)
    }

    /// Call when the lane could not read what it was about to send from the spool (journal or file): a failed attempt
    /// like any other (backoff, retry budget), so a broken spool neither spins the lane nor retries forever.
    public mutating func decide(afterSpoolFailure reason: String, using random: inout some RandomNumberGenerator) -> UploadDecision {
        consecutiveFailures += 1
        if let budget = policy.retryBudget, consecutiveFailures >= budget {
            return .budgetSpent("\(consecutiveFailures) failed attempts, last: \(reason)")
        }
        return .retry(after: policy.backoff(attempt: consecutiveFailures, using: &random))
    }
}
