import Motion
import Synchronization

/// Hands a camera's motion detector from one recording pass to the next (`pushav serve` opens the camera again after
/// a loss, and starts a looped file over): the next pass goes on with what the detector learned of the scene's flicker
/// and noise (``MotionDetector/resumeAfterGap()``) instead of a fresh detector's warm-up, during which a person
/// walking in would not be seen. One per camera; a pass whose pictures are analysed differently (another size, rate
/// or sensitivity) starts fresh.
public final class MotionDetectorHandover: Sendable {
    private let detector = Mutex<MotionDetector?>(nil)

    public init() {}

    /// The previous pass's detector, resumed, if it analyses like `configuration` (zones are replaced); else a new one.
    func take(for configuration: MotionDetectorConfiguration) -> (detector: MotionDetector, resumed: Bool) {
        guard var previous = detector.withLock({ $0.take() }), previous.analysesLike(configuration) else {
            return (MotionDetector(configuration: configuration), false)
        }
        previous.resumeAfterGap()
        previous.replaceZones(configuration.zones)
        return (previous, true)
    }

    /// Keeps `detector` for the next pass.
    func keep(_ detector: MotionDetector) {
        self.detector.withLock { $0 = detector }
    }
}
