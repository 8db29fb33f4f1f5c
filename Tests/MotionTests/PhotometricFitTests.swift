import Domain
import Foundation
import Motion
import Testing

/// Illumination compensation: a known global gain and offset (a cloud, an exposure step, a lamp) is recovered from
/// one picture against the learned background, also in sensor noise and with an object covering part of the view
/// (the fit takes medians, so what an object covers does not pull it).
@Suite struct PhotometricFitTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var gain: Double
        var offset: Double
        var noise: Double
        /// Share of the picture an object at a level of its own covers (0: none).
        var covered: Double
        var testDescription: String { "gain \(gain), offset \(offset), σ \(noise), \(Int(covered * 100)) % covered" }
    }

    static let cases: [Case] = [
        Case(gain: 1, offset: 0, noise: 3, covered: 0),
        Case(gain: 1.2, offset: 0, noise: 3, covered: 0),
        Case(gain: 0.8, offset: 0, noise: 3, covered: 0),
        Case(gain: 1, offset: -25, noise: 3, covered: 0),
        Case(gain: 0.85, offset: 12, noise: 6, covered: 0),
        Case(gain: 1.15, offset: -10, noise: 6, covered: 0.05),
        Case(gain: 0.7, offset: 20, noise: 4, covered: 0.10),
    ]

    @Test(arguments: cases)
    func aKnownGainAndOffsetAreRecovered(_ c: Case) throws {
        var scene = SyntheticScene(noiseSigma: c.noise, seed: 61)
        var motion = detector(sensitivity: 5)
        // Learn the scene as it is (3 s: past the 2 s warm-up), keyframes rare so that no quality pulse lands late.
        _ = simulate(&motion, scene: &scene, seconds: 3, keyframeEvery: 100)
        (scene.gain, scene.offset) = (c.gain, c.offset)
        if c.covered > 0 {
            let width = Int((Double(scene.width) * c.covered).rounded())
            scene.objects = [SceneObject(x: 20, y: 0, width: width, height: scene.height, level: 30)]
        }
        let time = try #require(stride(from: 3.0, to: 4, by: 1.0 / 30).first { motion.wantsFrame(at: $0) })
        let frame = scene.frame()
        let analysed = motion.analyse(frame, at: time, isKeyframe: false)
        let result = try #require(analysed)
        // The fit predicts each background level's new value over the scene's range (40…190) within 3 levels: under
        // a third of the smallest change any sensitivity counts (10 levels at High), so what the fit leaves over is
        // never motion.
        for level in [40.0, 115, 190] {
            let predicted = result.gain * level + result.offset, actual = c.gain * level + c.offset
            #expect(abs(predicted - actual) <= 3, "level \(level): fit \(result.gain)×+\(result.offset) predicts \(predicted), scene \(actual)")
        }
        #expect(abs(result.gain - c.gain) <= 0.04, "gain \(result.gain)")
    }
}
