/// The four durations of a transport's `motionTimeControl` (or of a ManuallyTriggerTransport `TimeControl`).
///
/// Held as `MediaTime` so that every comparison against media timestamps stays exact.
public struct ClipTimeControl: Sendable, Hashable, CustomStringConvertible {
    /// I: how long a clip lasts after its activation without further motion.
    public var initialDuration: MediaTime
    /// A: how much one augmentation lengthens the clip.
    public var augmentationDuration: MediaTime
    /// M: the longest a clip may last after its activation.
    public var maxDuration: MediaTime
    /// B: after a motion-activated clip ends, matching samples are ignored for this long.
    public var blindDuration: MediaTime

    public init(
        initialDuration: MediaTime, augmentationDuration: MediaTime, maxDuration: MediaTime, blindDuration: MediaTime
    ) {
        self.initialDuration = initialDuration
        self.augmentationDuration = augmentationDuration
        self.maxDuration = maxDuration
        self.blindDuration = blindDuration
    }

    /// Whole seconds, as the Matter struct carries them.
    public init(initial: Int64, augmentation: Int64, max: Int64, blind: Int64) {
        self.init(
            initialDuration: .seconds(initial), augmentationDuration: .seconds(augmentation),
            maxDuration: .seconds(max), blindDuration: .seconds(blind))
    }

    /// The cluster defaults of the draft XML that Google and the reference app use: 10 / 5 / 30 / 30 s.
    public static let matterDefaults = ClipTimeControl(initial: 10, augmentation: 5, max: 30, blind: 30)

    public var description: String {
        "I=\(initialDuration.seconds) A=\(augmentationDuration.seconds) M=\(maxDuration.seconds) B=\(blindDuration.seconds)"
    }
}
