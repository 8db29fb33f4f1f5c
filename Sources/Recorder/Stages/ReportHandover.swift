import Domain
import Logging
import Timeline

extension RecordingReport {
    /// The hand-over stage, once the input has ended and every runner has: the finished sessions go to `events` and
    /// into the report, and each stage's account of the pass (motion, input damage, the pre-roll buffer, dropped clips,
    /// long keyframe gaps, a stop) is put on the report's timeline, which starts at the first video picture.
    mutating func handOver(
        runners: ClipRunners, motion: MotionStage, reader: PacketReader, buffer: PreRollBuffer, overflow: BufferOverflow,
        conditionerDrops: (video: Int, audio: Int), timeline: InputTimeline, stopped: Bool,
        events: (@Sendable (RecordingEvent) -> Void)?, logger: Logger
    ) {
        let zero = timeline.origin ?? .zero
        for var record in runners.records {
            record.rebase(to: zero)
            sessions.append(record)
            events?(.sessionFinished(record))
        }
        sessions.sort { ($0.start, $0.session) < ($1.start, $1.session) }
        self.motion = motion.intervals(origin: zero)
        analysisSource = motion.analysisSourceUse
        input.damage = .init(video: reader.videoTimestamps, audio: reader.audioTimestamps, conditionerDrops: conditionerDrops)
        let damage = input.damage
        if damage.droppedPackets + damage.repairedTimestamps > 0 {
            logger.warning("input damaged: \(damage.droppedPackets) packet(s) dropped, \(damage.repairedTimestamps) timestamp(s) repaired")
        }
        preRollBuffer = .init(peakBytes: buffer.peakBytes, peakPackets: buffer.peakPackets,
                              retention: buffer.retention.seconds, droppedPackets: overflow.packets,
                              droppedBytes: overflow.bytes, affectedSessions: overflow.sessions.sorted())
        droppedClips = runners.dropped.map { var d = $0; d.trigger -= zero.seconds; return d }.sorted { $0.trigger < $1.trigger }
        longKeyframeIntervals = timeline.longKeyframeIntervals
        // Same arithmetic as the sessions' rebased times: an open clip's `end` equals it exactly.
        if stopped { stoppedAt = timeline.videoEnd.seconds - zero.seconds }
    }
}
