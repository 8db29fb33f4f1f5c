import Domain
import Foundation
import Motion
import Testing

/// Warm-up: the detector's first frame only initialises the background.
private func warmedUp(_ detector: inout MotionDetector, _ scene: inout SyntheticScene, seconds: Double = 2) {
    _ = simulate(&detector, scene: &scene, seconds: seconds)
}

@Suite struct NoiseAndStillnessTests {
    @Test(arguments: [3.0, 4.5, 6.0])
    func stillNoisyBackgroundNeverMoves(sigma: Double) {
        var scene = SyntheticScene(noiseSigma: sigma, seed: 7)
        var motion = detector(sensitivity: 10)
        let results = simulate(&motion, scene: &scene, seconds: 120)
        #expect(results.count == 600)
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
        #expect(results.dropFirst().allSatisfy { !$0.recalibrated })
        // The measured noise is the injected one (rounding to whole levels adds about 0.3).
        #expect(abs(results.last!.noiseSigma - sigma) < 1.2)
    }

    @Test func keyframeQualityPulseDoesNotTrigger() {
        var scene = SyntheticScene(noiseSigma: 5, seed: 11)
        var motion = detector(sensitivity: 10)
        // Keyframes every second, each one analysed (interval 0.2 s divides 1 s), each carrying the pulse.
        let results = simulate(&motion, scene: &scene, seconds: 60, keyframeEvery: 1)
        #expect(results.filter(\.isKeyframe).count == 60)
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
        #expect(results.dropFirst().allSatisfy { !$0.recalibrated })
    }

    @Test func slowGlobalIlluminationDriftDoesNotTrigger() {
        var scene = SyntheticScene(noiseSigma: 5, seed: 12)
        var motion = detector(sensitivity: 10)
        // Dusk: a third darker and 20 levels lower over two minutes.
        let results = simulate(&motion, scene: &scene, seconds: 120) { time, scene in
            scene.gain = 1 - 0.33 * time / 120
            scene.offset = -20 * time / 120
        }
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
    }
}

/// The noise floor: a figure little brighter or darker than its ground in strong sensor noise (rain, night) is seen,
/// because the floor is tested on the opened residual (see `MotionDetectorConfiguration.noiseFactor`), while the
/// same noise alone stays still (`stillNoisyBackgroundNeverMoves`, σ up to 6 at High).
@Suite struct FaintFigureInNoiseTests {
    /// First motion at Medium, in seconds after a 26-level, 8×20 figure starts crossing a plain ground in σ 6 noise.
    static func firstMotion(noiseFactor: Double?) -> Double? {
        var scene = SyntheticScene(noiseSigma: 6, seed: 52)
        scene.base = [Double](repeating: 110, count: scene.width * scene.height)
        var configuration = MotionDetectorConfiguration(
            sourceWidth: 1920, sourceHeight: 1080, analysisWidth: 160, analysisHeight: 90, sensitivity: 5)
        if let noiseFactor { configuration.noiseFactor = noiseFactor }
        var motion = MotionDetector(configuration: configuration)
        _ = simulate(&motion, scene: &scene, seconds: 3)
        scene.objects = [SceneObject(x: 0, y: 35, width: 8, height: 20, level: 84)]
        let results = simulate(&motion, scene: &scene, from: 3, seconds: 3) { time, scene in
            scene.objects[0].x = 10 + 30 * (time - 3)
        }
        return results.first(where: \.hasMotion).map { $0.time - 3 }
    }

    @Test func aFaintFigureInStrongNoiseIsSeenWithinASecond() {
        let first = Self.firstMotion(noiseFactor: nil)
        #expect(first.map { $0 <= 1 } == true, "first motion \(String(describing: first)) s after entry")
    }

    /// The floor of before (3.5 σ: 21 levels here) hid it: the test above measures the floor, not the figure.
    @Test func theFormerFloorMissedIt() {
        let first = Self.firstMotion(noiseFactor: 3.5)
        #expect(first.map { $0 > 1 } ?? true, "first motion \(String(describing: first)) s after entry")
    }
}

@Suite struct MovingObjectTests {
    @Test(arguments: [255.0, 0.0])
    func movingRectangleIsSeenEveryAnalysedFrame(level: Double) {
        var scene = SyntheticScene(seed: 21)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene)
        // A 12×16 object (about 1.3 % of the frame) crossing at 30 px/s from 2 s on.
        scene.objects = [SceneObject(x: 10, y: 40, width: 12, height: 16, level: level)]
        let results = simulate(&motion, scene: &scene, from: 2, seconds: 4) { time, scene in
            scene.objects[0].x = 10 + 30 * (time - 2)
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0.hasMotion }, "\(results.map(\.hasMotion))")
    }

    @Test func objectThatStopsFadesIntoTheBackground() {
        var scene = SyntheticScene(seed: 22)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene)
        scene.objects = [SceneObject(x: 60, y: 30, width: 16, height: 16, level: 230)]
        let results = simulate(&motion, scene: &scene, from: 2, seconds: 60)
        #expect(results.first!.hasMotion)
        let lastMotion = results.last(where: \.hasMotion)!.time
        // Foreground time constant 15 s: a parked object stops counting well within a minute.
        #expect(lastMotion < 40, "still moving at \(lastMotion)")
        #expect(results.suffix(50).allSatisfy { !$0.hasMotion })
    }

    /// Motion is change within the last `motionWindow` (2 s): a mover is seen down to about 3 px/s at 160×90
    /// (36 px/s at 1080p, a person far away strolling; TestMedia's slow object moves 3.75 px/s at 160×90). Slower creep is indistinguishable from a parked object's
    /// ghost fading, which must stop counting within seconds (see `parkedObjectStopsCountingWithinTheWindow`).
    @Test(arguments: [3.0, 6.0])
    func slowObjectIsDetectedWithinSeconds(speed: Double) {
        var scene = SyntheticScene(seed: 23)
        var motion = detector(sensitivity: 5)
        // The object is part of the scene from the start, then creeps at `speed` px/s at 160×90.
        scene.objects = [SceneObject(x: 60, y: 30, width: 10, height: 20, level: 200)]
        warmedUp(&motion, &scene, seconds: 20)
        // 10 s keeps it inside the 160-pixel-wide frame at either speed.
        let results = simulate(&motion, scene: &scene, from: 20, seconds: 10) { time, scene in
            scene.objects[0].x = 60 + speed * (time - 20)
        }
        let first = results.first(where: \.hasMotion)
        #expect(first != nil, "a slow mover is real motion")
        if let first { #expect(first.time < 24, "first seen at \(first.time) s") }
        // Once seen it keeps being seen while it moves: never two analysed pictures in a row without it, so no clip is
        // split (a clip ends only after the augmentation time, at least a second, without motion). One picture may
        // miss it: where the object's edge lies on one of the scene's block edges, the frame's contrast there is
        // the scene's own, scaled, which is what a light does (see `MotionDetector.findEdges`).
        if let first {
            let after = results.filter { $0.time > first.time + 2 }
            let gaps = zip(after, after.dropFirst()).filter { !$0.hasMotion && !$1.hasMotion }.map(\.0.time)
            #expect(gaps.isEmpty, "unseen in consecutive pictures from \(gaps)")
        }
    }

    @Test func parkedObjectStopsCountingWithinTheWindow() {
        var scene = SyntheticScene(seed: 24)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene)
        scene.objects = [SceneObject(x: 20, y: 30, width: 16, height: 16, level: 230)]
        let results = simulate(&motion, scene: &scene, from: 2, seconds: 10) { time, scene in
            scene.objects[0].x = 20 + 40 * min(time - 2, 2)  // moves for 2 s, then parks at x = 100
        }
        #expect(results.filter { $0.time < 4 }.allSatisfy { $0.hasMotion })
        let last = results.last(where: \.hasMotion)?.time ?? 0
        #expect(last < 6.1, "still counted as motion at \(last) s, 4 s after it parked")
    }
}

@Suite struct LightingTests {
    @Test func lampSwitchDoesNotTrigger() {
        var scene = SyntheticScene(seed: 31)
        var motion = detector(sensitivity: 10)
        warmedUp(&motion, &scene, seconds: 5)
        let results = simulate(&motion, scene: &scene, from: 5, seconds: 20) { time, scene in
            scene.offset = time >= 10 ? 60 : 0
        }
        #expect(results.filter(\.hasMotion).isEmpty)
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
    }

    @Test func exposureRampDoesNotTrigger() {
        var scene = SyntheticScene(seed: 32)
        var motion = detector(sensitivity: 10)
        warmedUp(&motion, &scene, seconds: 5)
        // Lights off, then the camera re-exposes over one second: gain 0.5 back up to 0.9.
        let results = simulate(&motion, scene: &scene, from: 5, seconds: 20) { time, scene in
            scene.gain = time < 10 ? 1 : 0.5 + 0.4 * min(1, time - 10)
        }
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
    }

    /// Motion that coincides with the lamp switch is still seen (the Motion #294 failure).
    @Test func motionDuringALampSwitchIsStillSeen() {
        var scene = SyntheticScene(seed: 33)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene, seconds: 5)
        scene.objects = [SceneObject(x: 20, y: 30, width: 14, height: 18, level: 30)]
        let results = simulate(&motion, scene: &scene, from: 5, seconds: 10) { time, scene in
            scene.offset = time >= 10 ? 60 : 0
            scene.objects[0].x = 20 + 8 * (time - 5)
        }
        let atSwitch = results.filter { $0.time >= 10 && $0.time < 12 }
        #expect(!atSwitch.isEmpty && atSwitch.allSatisfy { $0.hasMotion })
    }

    /// An IR-cut switch changes the picture non-linearly: recalibrate, then see real motion within 2 s.
    @Test func irCutSwitchRecalibratesAndRearmsWithinTwoSeconds() {
        var scene = SyntheticScene(seed: 34)
        var motion = detector(sensitivity: 10)
        warmedUp(&motion, &scene, seconds: 5)
        let night = SyntheticScene(seed: 99).base.map { 230 - $0 }  // a different, inverted texture
        var results = simulate(&motion, scene: &scene, from: 5, seconds: 5) { time, scene in
            if time >= 9 { scene.base = night }
        }
        #expect(results.contains { $0.recalibrated })
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
        // 0.2 s after the switch, someone walks in.
        scene.objects = [SceneObject(x: 10, y: 40, width: 12, height: 16, level: 250)]
        results = simulate(&motion, scene: &scene, from: 10, seconds: 3) { time, scene in
            scene.objects[0].x = 10 + 30 * (time - 10)
        }
        let firstMotion = results.first(where: \.hasMotion)?.time
        #expect(firstMotion != nil && firstMotion! < 11, "first motion at \(String(describing: firstMotion))")
    }

    /// A decoder's concealed (grey) frame is a global change, not motion, and so is the return to the picture.
    @Test func greyFrameDoesNotTrigger() {
        var scene = SyntheticScene(seed: 36)
        var motion = detector(sensitivity: 10)
        warmedUp(&motion, &scene, seconds: 5)
        let grey = motion.analyseNow(LumaPlane(width: 160, height: 90, level: 128), at: 5, isKeyframe: false)
        #expect(grey.recalibrated && !grey.hasMotion)
        let results = simulate(&motion, scene: &scene, from: 5.2, seconds: 5)
        #expect(results.first!.recalibrated)
        #expect(results.filter { $0.anywhere.lowestSensitivity != nil }.isEmpty)
    }

    @Test func lightingStepOfSixtyThenMotionWithinTwoSeconds() {
        var scene = SyntheticScene(seed: 35)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene, seconds: 5)
        var results = simulate(&motion, scene: &scene, from: 5, seconds: 5) { time, scene in
            scene.offset = time >= 8 ? 60 : 0
        }
        #expect(!results.contains { $0.hasMotion })
        scene.objects = [SceneObject(x: 100, y: 20, width: 12, height: 16, level: 20)]
        results = simulate(&motion, scene: &scene, from: 10, seconds: 2) { time, scene in
            scene.objects[0].x = 100 - 25 * (time - 10)
        }
        #expect(results.first(where: \.hasMotion).map { $0.time < 12 } == true)
    }
}

@Suite struct ZoneTests {
    // Zones in 1080p coordinates: A is the left third, B the right third.
    private let zoneA = MotionZone.rectangle(id: 1, x1: 0, y1: 0, x2: 640, y2: 1080)
    private let zoneB = MotionZone.rectangle(id: 2, x1: 1280, y1: 0, x2: 1920, y2: 1080)

    private func run(zones: [MotionZone], sensitivity: Int = 5, object: SceneObject, speed: Double) -> [MotionFrameResult] {
        var scene = SyntheticScene(seed: 41)
        var motion = detector(sensitivity: sensitivity, zones: zones)
        warmedUp(&motion, &scene)
        scene.objects = [object]
        let startX = object.x
        return simulate(&motion, scene: &scene, from: 2, seconds: 2) { time, scene in
            scene.objects[0].x = startX + speed * (time - 2)
        }
    }

    @Test func motionInsideZoneAReportsAOnly() {
        let results = run(zones: [zoneA, zoneB], object: SceneObject(x: 10, y: 30, width: 10, height: 14, level: 230), speed: 10)
        #expect(results.allSatisfy { $0.movedZones == [1] && !$0.movedOutsideZones })
        #expect(results.allSatisfy { $0.zones[1]!.changedFraction > 0 && $0.zones[2]!.lowestSensitivity == nil })
    }

    @Test func motionOutsideEveryZoneReportsOutside() {
        let results = run(zones: [zoneA, zoneB], object: SceneObject(x: 70, y: 30, width: 10, height: 14, level: 230), speed: 5)
        #expect(results.allSatisfy { $0.movedZones.isEmpty && $0.movedOutsideZones && $0.hasMotion })
    }

    @Test func perZoneSensitivity() {
        // The same small, low-contrast object: seen in A (High) and not in B (Low).
        let sensitiveA = MotionZone.rectangle(id: 1, x1: 0, y1: 0, x2: 640, y2: 1080, sensitivity: 10)
        let dullB = MotionZone.rectangle(id: 2, x1: 1280, y1: 0, x2: 1920, y2: 1080, sensitivity: 1)
        let small = SceneObject(x: 20, y: 30, width: 6, height: 6, level: 0)
        let inA = run(zones: [sensitiveA, dullB], object: small, speed: 8)
        #expect(inA.filter { $0.movedZones == [1] }.count >= inA.count - 1)
        var inB = small
        inB.x = 125
        let resultsB = run(zones: [sensitiveA, dullB], object: inB, speed: 8)
        #expect(resultsB.allSatisfy { $0.movedZones.isEmpty })
        #expect(resultsB.contains { $0.zones[2]!.lowestSensitivity != nil }, "B saw it at a higher sensitivity than its own")
    }

    /// Zone Management changes zones while the camera records: the detector rasterises the new ones and keeps its
    /// background, so motion in a zone made mid-stream is located there from the next picture, with no warm-up.
    @Test func replacedZonesApplyFromTheNextPicture() {
        var scene = SyntheticScene(seed: 41)
        var motion = detector(sensitivity: 5, zones: [zoneB])
        warmedUp(&motion, &scene)
        scene.objects = [SceneObject(x: 10, y: 30, width: 10, height: 14, level: 230)]
        let before = simulate(&motion, scene: &scene, from: 2, seconds: 1) { time, scene in scene.objects[0].x = 10 + 10 * (time - 2) }
        #expect(before.allSatisfy { $0.movedZones.isEmpty && $0.zones[1] == nil })
        #expect(before.contains { $0.movedOutsideZones })
        motion.replaceZones([zoneA, zoneB])
        #expect(motion.zonePixelCounts[1] != nil && motion.configuration.zones.map(\.id) == [1, 2])
        let after = simulate(&motion, scene: &scene, from: 3, seconds: 1) { time, scene in scene.objects[0].x = 20 + 10 * (time - 3) }
        #expect(after.first?.movedZones == [1], "the first picture after the change is located in the new zone")
        #expect(after.allSatisfy { $0.movedZones == [1] && !$0.movedOutsideZones })
    }

    @Test func zonesScaleFromSourceCoordinates() {
        // A 640×1080 rectangle is a third of a 1920×1080 frame: the pixel centres of 53 of 160 columns fall inside.
        let triangle = MotionZone(id: 9, polygon: [.init(x: 0, y: 0), .init(x: 1920, y: 0), .init(x: 0, y: 1080)])
        let tiny = MotionZone.rectangle(id: 3, x1: 1000, y1: 500, x2: 1004, y2: 504)
        let motion = detector(zones: [zoneA, triangle, tiny])
        #expect(motion.zonePixelCounts[1] == 53 * 90)
        #expect(abs(motion.zonePixelCounts[9]! - 7200) < 100)
        #expect(motion.zonePixelCounts[3] == 1, "a zone smaller than a pixel keeps one")
    }

    @Test func wholeFrameChangeRecalibrates() {
        var scene = SyntheticScene(seed: 42)
        var motion = detector(zones: [zoneA])
        _ = motion.analyseNow(scene.frame(), at: 0, isKeyframe: true)
        var other = SyntheticScene(seed: 43)
        let result = motion.analyseNow(other.frame(), at: 0.2, isKeyframe: false)
        #expect(result.recalibrated && !result.hasMotion && result.movedZones.isEmpty)
    }

    @Test func analysisSizeKeepsAspect() {
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 1920, sourceHeight: 1080) == (160, 90))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 640, sourceHeight: 480) == (160, 120))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 1080, sourceHeight: 1920) == (90, 160))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 128, sourceHeight: 72) == (128, 72))
    }
}

@Suite struct SensitivityTests {
    @Test func tableIsMonotonic() {
        let table = MotionSensitivity.table
        #expect(table.count == 10)
        for (lower, higher) in zip(table, table.dropFirst()) {
            #expect(higher.pixelDelta < lower.pixelDelta)
            #expect(higher.minimumAreaFraction < lower.minimumAreaFraction)
        }
        #expect(MotionSensitivity.level(1) == table[0] && MotionSensitivity.level(10) == table[9])
        #expect(MotionSensitivity.level(0) == table[0] && MotionSensitivity.level(11) == table[9])
    }

    /// The persistent-outline thresholds (Medium up): none below Medium, never stricter than the level's own, each
    /// level's at most the level below's (so detection stays monotonic), a change that is one of the table's (pixels are
    /// counted per level of change), and High's own at High.
    @Test(arguments: 1...10) func persistentOutlineThresholds(level: Int) throws {
        guard level >= 5 else {
            #expect(MotionSensitivity.persistentOutline(level) == nil)
            return
        }
        let outline = try #require(MotionSensitivity.persistentOutline(level))
        let own = MotionSensitivity.level(level)
        #expect(outline.pixelDelta <= own.pixelDelta && outline.minimumAreaFraction <= own.minimumAreaFraction)
        #expect(MotionSensitivity.table.contains { $0.pixelDelta == outline.pixelDelta })
        if let lower = MotionSensitivity.persistentOutline(level - 1) {
            #expect(outline.pixelDelta <= lower.pixelDelta && outline.minimumAreaFraction < lower.minimumAreaFraction)
        }
        if level == 10 {
            #expect(outline.pixelDelta == own.pixelDelta && abs(outline.minimumAreaFraction - own.minimumAreaFraction) < 1e-12)
        }
    }

    @Test func smallObjectSeenAtHighNotAtLow() {
        var scene = SyntheticScene(seed: 51)
        var motion = detector(sensitivity: 5)
        warmedUp(&motion, &scene)
        scene.objects = [SceneObject(x: 30, y: 30, width: 5, height: 5, level: 250)]
        let results = simulate(&motion, scene: &scene, from: 2, seconds: 2) { time, scene in
            scene.objects[0].x = 30 + 15 * (time - 2)
        }
        // Above Medium faint change counts near an outline seen in two pictures in a row: from the object's second
        // analysed picture on (see `MotionDetector.strictOutlineMargin`).
        #expect(results.dropFirst().allSatisfy { $0.anywhere.moved(atSensitivity: 10) })
        #expect(results.allSatisfy { !$0.anywhere.moved(atSensitivity: 1) })
    }

    /// A figure under Medium's own area (6×7 analysis pixels: 0.29 % of the frame, Medium asks 0.66 %) whose outline
    /// persists is seen at Medium in all but its first and last analysed pictures — how a dark figure by night or in
    /// rain, most of which is within the noise, is still seen — while level 4, which judges every picture alone, never
    /// sees it.
    @Test func smallFigureWithAPersistentOutlineSeenAtMediumNotBelow() {
        for sensitivity in [4, 5] {
            var scene = SyntheticScene(seed: 53)
            var motion = detector(sensitivity: sensitivity)
            warmedUp(&motion, &scene)
            scene.objects = [SceneObject(x: 30, y: 40, width: 6, height: 7, level: 250)]
            let results = simulate(&motion, scene: &scene, from: 2, seconds: 2) { time, scene in
                scene.objects[0].x = 30 + 15 * (time - 2)
            }
            let moved = results.filter { $0.anywhere.moved(atSensitivity: sensitivity) }.count
            if sensitivity == 5 {
                // The first picture has no earlier outline; at the last one the figure's changed pixels fall just
                // short of 0.21 % (seen at 6).
                #expect(moved >= results.count - 2, "seen in \(moved) of \(results.count) pictures")
            } else {
                #expect(moved == 0)
            }
        }
    }

    /// The smallest object side seen at each sensitivity never grows as sensitivity rises.
    @Test func detectableSizeShrinksWithSensitivity() {
        var smallest: [Int] = []
        for sensitivity in 1...10 {
            var found = 99
            for side in stride(from: 2, through: 30, by: 2) {
                var scene = SyntheticScene(seed: 52)
                var motion = detector(sensitivity: sensitivity)
                warmedUp(&motion, &scene)  // the detector's warm-up
                scene.objects = [SceneObject(x: 20, y: 20, width: side, height: side, level: 20)]
                let results = simulate(&motion, scene: &scene, from: 2, seconds: 1) { time, scene in
                    scene.objects[0].x = 20 + 20 * (time - 2)
                }
                if results.allSatisfy(\.hasMotion) { found = side; break }
            }
            smallest.append(found)
        }
        #expect(zip(smallest, smallest.dropFirst()).allSatisfy { $0 >= $1 }, "\(smallest)")
        #expect(smallest[9] < smallest[0])
    }
}

@Suite struct AnalysisRateTests {
    @Test func analysesEverySixthFrameAtThirtyFramesPerSecond() {
        var scene = SyntheticScene(seed: 61)
        var motion = detector()
        var analysed: [Int] = []
        for n in 0..<60 {
            let time = Double(n) * 512 / 15360  // as the media layer converts 1/15360 timestamps
            if motion.wantsFrame(at: time) {
                analysed.append(n)
                _ = motion.analyse(scene.frame(), at: time, isKeyframe: n == 0)
            }
        }
        #expect(analysed == Array(stride(from: 0, to: 60, by: 6)))
    }

    @Test func skippedFramesReturnNil() {
        var scene = SyntheticScene(seed: 62)
        var motion = detector()
        #expect(motion.analyse(scene.frame(), at: 0, isKeyframe: true) != nil)
        #expect(motion.analyse(scene.frame(), at: 0.1, isKeyframe: false) == nil)
        #expect(motion.analyse(scene.frame(), at: 0.2, isKeyframe: false) != nil)
    }
}

/// The structural tests of release 2 (issue 19) on synthetic scenes without a codec: what has no outline or flickers
/// in place stays quiet, while an object of the same contrast moving through it is seen at Medium. Two limits show
/// here as they do on the corpus: the insect's fringe reaches High (9–10), and a headlight on this scene's 3:1 block
/// texture has outlines (its texture edges) and reaches sensitivity 4; both stay under Medium and Low respectively.
@Suite struct StructureTests {
    /// A change drawn into the scene's base picture at time t (seconds after the scene starts).
    enum Change: Sendable {
        /// An insect out of focus at the lens: a Gaussian blob (σ 8 px, darker by `amplitude`) flitting about.
        case blurredBlob(amplitude: Double)
        /// A person-sized box (7×20 px, darker by `amplitude`) walking 20 px/s from x = 10.
        case walker(amplitude: Double)
        /// Headlights sweeping the scene: a broad soft light (σ 20 px, up to +50 %) crossing it in 2 s.
        case headlight
        /// A lamp sweeping the scene: the scene blended towards white (235) with a Gaussian weight (σ 15 px, up to
        /// 0.6), crossing it in 2 s — dark parts brighten most, so its change has the texture's edges.
        case lamp
        /// A shade: the scene blended towards black (24) with a Gaussian weight (σ 10 px, up to 0.7) wandering about a
        /// corner, as an out-of-focus insect at the lens does.
        case shade
        /// Foliage: a 30×25 patch of texture (±40 levels) swaying ±1 px at 0.8 Hz over the whole run.
        case foliage
        /// Foliage and, from 4 s on, the walker 30 levels darker crossing below it.
        case walkerBelowFoliage
    }

    /// (case, change, sensitivity, whether any analysed picture after the warm-up moves)
    static let cases: [(String, Change, Int, Bool)] = [
        ("an insect at the lens, Medium", .blurredBlob(amplitude: 40), 5, false),
        ("the walker at the insect's contrast, Medium", .walker(amplitude: 40), 5, true),
        ("a 25-level walker, Medium", .walker(amplitude: 25), 5, true),
        ("a 25-level walker, Low (it is under 3 % of the picture)", .walker(amplitude: 25), 1, false),
        ("a headlight sweep over a 3:1 texture, Low", .headlight, 1, false),
        ("a headlight sweep over a 3:1 texture, Medium", .headlight, 5, false),
        ("a headlight sweep over a 3:1 texture, High", .headlight, 10, false),
        ("a lamp sweep, Medium", .lamp, 5, false),
        ("a lamp sweep, High", .lamp, 10, false),
        ("a shade at the lens, Medium", .shade, 5, false),
        ("a shade at the lens, High", .shade, 10, false),
        ("an insect at the lens, High", .blurredBlob(amplitude: 40), 10, false),
        ("a 25-level walker, High", .walker(amplitude: 25), 10, true),
        ("swaying foliage, High", .foliage, 10, false),
        ("a walker below swaying foliage, Medium", .walkerBelowFoliage, 5, true),
    ]

    @Test(arguments: cases.map(\.0))
    func structureDecides(name: String) {
        let (_, change, sensitivity, moves) = Self.cases.first { $0.0 == name }!
        var scene = SyntheticScene(noiseSigma: 2, seed: 71)
        let still = scene.base
        var motion = detector(sensitivity: sensitivity)
        let results = simulate(&motion, scene: &scene, seconds: 10) { time, scene in
            scene.base = Self.draw(change, over: still, width: scene.width, height: scene.height, at: time)
        }
        let moved = results.filter { $0.time >= 2 && $0.hasMotion }.map(\.time)
        let levels = results.filter { $0.time >= 2 }.compactMap(\.anywhere.lowestSensitivity)
        #expect(moved.isEmpty == !moves, "motion at \(moved), lowest sensitivities \(levels)")
    }

    /// The first 2 s of a stream only learn: nothing is reported, then the walker already in view is seen.
    @Test func warmUpReportsNothingThenSees() {
        var scene = SyntheticScene(noiseSigma: 2, seed: 72)
        let still = scene.base
        var motion = detector(sensitivity: 5)
        let results = simulate(&motion, scene: &scene, seconds: 4) { time, scene in
            scene.base = Self.draw(.walker(amplitude: 40), over: still, width: scene.width, height: scene.height, at: time + 2)
        }
        #expect(results.filter { $0.time < 2 }.allSatisfy { !$0.hasMotion && $0.anywhere.lowestSensitivity == nil })
        #expect(results.filter { $0.time >= 2 }.contains { $0.hasMotion })
    }

    /// After ``MotionDetector/resumeAfterGap()`` (a reconnect: timestamps start over) the swaying foliage stays ignored
    /// from the first picture and a walker entering 0.3 s in is seen within a second; a pass that ended inside its
    /// warm-up leaves the rest of it to the next stream.
    @Test(arguments: [(learned: 4.0, quietUntil: 0.0), (learned: 1.0, quietUntil: 1.0)])
    func resumedDetectorKeepsWhatItLearned(learned: Double, quietUntil: Double) {
        var scene = SyntheticScene(noiseSigma: 2, seed: 73)
        let still = scene.base
        var motion = detector(sensitivity: 5)
        let first = simulate(&motion, scene: &scene, seconds: learned) { time, scene in
            scene.base = Self.draw(.foliage, over: still, width: scene.width, height: scene.height, at: time)
        }
        #expect(!first.contains { $0.hasMotion })
        motion.resumeAfterGap()
        // The walker of `.walkerBelowFoliage` enters at 4 s of its own clock: 0.3 s into the new stream.
        let second = simulate(&motion, scene: &scene, seconds: 3) { time, scene in
            scene.base = Self.draw(.walkerBelowFoliage, over: still, width: scene.width, height: scene.height, at: time + 3.7)
        }
        let moved = second.filter(\.hasMotion).map(\.time)
        #expect(moved.allSatisfy { $0 >= 0.3 && $0 >= quietUntil }, "motion at \(moved)")
        #expect(second.filter { $0.time < quietUntil }.allSatisfy { $0.anywhere.lowestSensitivity == nil }, "reported while warming up")
        let seen = moved.first ?? .infinity
        #expect(seen <= max(1.3, quietUntil + 0.5), "walker seen at \(seen) s")
    }

    static func draw(_ change: Change, over still: [Double], width: Int, height: Int, at t: Double) -> [Double] {
        var base = still
        func walker(_ amplitude: Double, from start: Double) {
            guard t >= start else { return }
            let x0 = Int(10 + 20 * (t - start))
            for y in 60..<80 { for x in max(0, x0)..<min(width, x0 + 7) { base[y * width + x] -= amplitude } }
        }
        func foliage() {
            let shift = (sin(2 * .pi * 0.8 * t)).rounded()  // −1, 0 or +1 pixel
            for y in 10..<35 {
                for x in 60..<90 {
                    let u = x - Int(shift), v = y
                    let texture = ((u * 7 + v * 13) % 5 < 2) != ((u / 3 + v / 2) % 2 == 0) ? 40.0 : -40.0
                    base[y * width + x] = still[y * width + x] + texture
                }
            }
        }
        func blend(towards level: Double, peak: Double, sigma: Double, x cx: Double, y cy: Double) {
            for y in 0..<height {
                for x in 0..<width {
                    let d2 = pow(Double(x) - cx, 2) + pow(Double(y) - cy, 2)
                    let weight = peak * exp(-d2 / (2 * sigma * sigma))
                    base[y * width + x] += weight * (level - base[y * width + x])
                }
            }
        }
        switch change {
        case .blurredBlob(let amplitude):
            guard t >= 3 && t < 6 else { break }
            let cx = 120 + 12 * sin(9 * t), cy = 30 + 8 * cos(7 * t)
            for y in 0..<height {
                for x in 0..<width {
                    let d2 = pow(Double(x) - cx, 2) + pow(Double(y) - cy, 2)
                    base[y * width + x] -= amplitude * exp(-d2 / (2 * 64))
                }
            }
        case .walker(let amplitude):
            walker(amplitude, from: 3)
        case .headlight:
            guard t >= 3 && t < 5 else { break }
            let cx = -20 + 100 * (t - 3)
            for y in 0..<height {
                for x in 0..<width {
                    let d2 = pow(Double(x) - cx, 2) + pow(Double(y) - 30, 2)
                    base[y * width + x] *= 1 + 0.5 * exp(-d2 / (2 * 400))
                }
            }
        case .lamp:
            guard t >= 3 && t < 5 else { break }
            blend(towards: 235, peak: 0.6, sigma: 15, x: -20 + 100 * (t - 3), y: 40)
        case .shade:
            guard t >= 3 && t < 5 else { break }
            blend(towards: 24, peak: 0.7, sigma: 10, x: 130 + 10 * sin(7 * t), y: 20 + 6 * cos(5 * t))
        case .foliage:
            foliage()
        case .walkerBelowFoliage:
            foliage()
            walker(30, from: 4)
        }
        return base
    }
}

/// Camera shake (a camera on a pole in wind) is compensated, not detected; a person walking while the camera shakes
/// still is; a camera moved for good is counted as moved and never triggers.
@Suite struct CameraShakeTests {
    static func shake(_ time: Double, amplitude: Double) -> (dx: Double, dy: Double) {
        (amplitude * sin(2 * .pi * 1.3 * time), 0.7 * amplitude * cos(2 * .pi * 2.1 * time))
    }

    @Test(arguments: [5, 10]) func aShakingCameraShowsNoMotion(sensitivity: Int) {
        var scene = SyntheticScene(noiseSigma: 4, seed: 31)
        var motion = detector(sensitivity: sensitivity)
        let results = simulate(&motion, scene: &scene, seconds: 60) { time, scene in
            scene.shake = Self.shake(time, amplitude: 1.5)
        }
        let moving = results.filter(\.hasMotion).map(\.time)
        #expect(moving.isEmpty, "motion at \(moving.prefix(10))")
        #expect(results.contains { $0.shift.magnitude > 0.5 }, "the shake was measured")
    }

    @Test func aPersonIsSeenWhileTheCameraShakes() {
        var scene = SyntheticScene(noiseSigma: 4, seed: 32)
        var motion = detector(sensitivity: 5)
        _ = simulate(&motion, scene: &scene, seconds: 4) { time, scene in scene.shake = Self.shake(time, amplitude: 1.5) }
        scene.objects = [SceneObject(x: 0, y: 40, width: 8, height: 20, level: 20)]
        let results = simulate(&motion, scene: &scene, from: 4, seconds: 3) { time, scene in
            scene.shake = Self.shake(time, amplitude: 1.5)
            scene.objects[0].x = 10 + 40 * (time - 4)
        }
        let first = results.first(where: \.hasMotion)?.time
        #expect(first.map { $0 - 4 <= 0.5 } == true, "first motion at \(String(describing: first))")
    }

    @Test func aCameraMovedForGoodIsCountedAndNeverMotion() {
        var scene = SyntheticScene(noiseSigma: 4, seed: 33)
        var motion = detector(sensitivity: 10)
        _ = simulate(&motion, scene: &scene, seconds: 4)
        scene.shake = (9, -6)
        let results = simulate(&motion, scene: &scene, from: 4, seconds: 10)
        #expect(results.first?.cameraMoved == true && results.first?.recalibrated == true, "\(String(describing: results.first))")
        #expect(results.allSatisfy { !$0.hasMotion })
    }
}

/// The warm-up never ends in a trigger: a change it saw (here a sign lit during it, which then stays lit and steady)
/// is covered by what it learned.
@Suite struct WarmUpTests {
    @Test(arguments: [5, 10]) func aChangeSeenDuringTheWarmUpDoesNotTriggerWhenItEnds(sensitivity: Int) {
        var scene = SyntheticScene(noiseSigma: 4, seed: 41)
        var motion = detector(sensitivity: sensitivity)
        let results = simulate(&motion, scene: &scene, seconds: 12) { time, scene in
            // A 16×12 sign (1.3 % of the picture) lit at 1 s and steady from then on.
            scene.objects = time >= 1 ? [SceneObject(x: 100, y: 20, width: 16, height: 12, level: 235)] : []
        }
        let moving = results.filter(\.hasMotion).map(\.time)
        #expect(moving.isEmpty, "motion at \(moving)")
    }
}
