import Timeline

/// Compares what a recording should run (each connection's ``DesiredRecording``) with what it runs and says what to
/// change, in an order the recording can carry out between two packets. Pure: no FFmpeg, no I/O; tested by tables.
///
/// Level-triggered, the way a Kubernetes controller is: the same inputs give the same steps, and once carried out a
/// second run gives none. So a desired state published twice, or late, or to a new pass after a reconnect, is safe.
public enum RecordingReconciler {
    /// The part of a connection's desired recording that decides the steps.
    public struct Target: Sendable, Hashable {
        public var generation: Int
        public var active: Bool
        public var includeAudio: Bool
        public var motionFilter: MotionTriggerFilter
        public var retryEpoch: Int

        public init(
            generation: Int, active: Bool, includeAudio: Bool, motionFilter: MotionTriggerFilter, retryEpoch: Int
        ) {
            self.generation = generation
            self.active = active
            self.includeAudio = includeAudio
            self.motionFilter = motionFilter
            self.retryEpoch = retryEpoch
        }
    }

    public enum Step: Sendable, Hashable {
        /// No runner records this connection: start one with its desired policy.
        case start(UInt16)
        /// Its runner records an older generation: that runner ends its recording and leaves; a new one starts.
        case replace(UInt16)
        /// The connection is not wanted any more: its runner ends its recording and leaves once it is written.
        case stop(UInt16)
        case setActive(UInt16, Bool)
        case setAudio(UInt16, Bool)
        case setMotionFilter(UInt16, MotionTriggerFilter)
        /// Try a recording backing off after a failure now.
        case retry(UInt16)
    }

    /// The steps from `running` to `desired`, connections in ID order (stops first, so a connection's End goes out
    /// before any other connection's Begin that the same change causes).
    public static func steps(desired: [UInt16: Target], running: [UInt16: Target]) -> [Step] {
        var steps: [Step] = []
        for id in running.keys.sorted() where desired[id] == nil { steps.append(.stop(id)) }
        for id in desired.keys.sorted() {
            let want = desired[id]!
            guard let have = running[id] else {
                steps.append(.start(id))
                continue
            }
            if have.generation != want.generation {
                steps.append(.replace(id))
                continue
            }
            if have.includeAudio != want.includeAudio { steps.append(.setAudio(id, want.includeAudio)) }
            if have.motionFilter != want.motionFilter { steps.append(.setMotionFilter(id, want.motionFilter)) }
            if have.active != want.active { steps.append(.setActive(id, want.active)) }
            if want.retryEpoch > have.retryEpoch { steps.append(.retry(id)) }
        }
        return steps
    }
}
